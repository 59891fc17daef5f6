"""``dreamd review``: pending proposals one by one, answered with one key, as ``git add -p``.

On a terminal each answer is one key press (click.getchar); otherwise one answer is read
per line, so a script can pipe them in. With ``--json`` the review talks on stderr and
stdout carries only the summary object.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from typing import Any

import click

from daemon.cli.render import colour_enabled, diff_text, emit_json, one_line, printable, proposal_header
from daemon.core.errors import ProposalError

PROMPT = "Accept this proposal [y,n,s,f,u,q,?]? "
HELP = """\
y - accept this proposal (apply writes it later)
n - reject it, with a reason; the same change is not proposed again
s - skip it for now; it stays pending
f - show the full notes it touches, as they were when it was proposed
u - undo the last decision of this review and show that proposal again
q - quit; this one and the rest stay pending
? - print help"""
LAST_PROMPT = "That was the last proposal [u,q,?]? "
LAST_HELP = """\
u - undo the last decision of this review and show that proposal again
q - end the review
? - print help"""


class Answers:
    """Answers read one per line (a pipe, a file): a script's ``printf 'y\\nn\\nwhy\\n'``."""

    echo = True  # show each answer after its prompt, so the transcript reads as typed

    def __init__(self, say: Callable[..., None]) -> None:
        self.say = say

    def key(self, prompt: str) -> str | None:
        """The next answer (None at end of input), shown after its prompt like a typed one."""
        return self.line(prompt)

    def line(self, prompt: str) -> str | None:
        self.say(prompt, nl=False)
        text = sys.stdin.readline()
        if not text:
            self.say("")
            return None
        answer = text.strip()
        if self.echo:
            self.say(printable(answer))
        return answer


class KeyAnswers(Answers):
    """Answers on a terminal: one key press each, no Enter; Ctrl-D quits. A reason is a
    line, which the terminal echoes itself."""

    echo = False

    def key(self, prompt: str) -> str | None:
        self.say(click.style(prompt, fg="blue", bold=True) if colour_enabled() else prompt, nl=False)
        try:
            key = click.getchar()
        except EOFError:
            self.say("")
            return None
        self.say(printable(key))
        return key


@click.command("review")
@click.argument("store_name", metavar="[STORE]", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as an object (see README); the review itself goes to stderr.")
@click.pass_obj
def review_command(settings, store_name: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Review pending proposals one by one with one-key answers, like git add -p."""
    from daemon.service.review import Review

    def say(text: str = "", nl: bool = True) -> None:
        click.echo(text, nl=nl, err=as_json)

    review = Review(settings.app(), store_name)
    answers = KeyAnswers(say) if sys.stdin.isatty() else Answers(say)
    if review.total == 0:
        say("no pending proposals")
    _walk(review, answers, say, page=not as_json and sys.stdout.isatty())
    summary = review.summary()
    if as_json:
        emit_json(summary)
    else:
        click.echo(summary_line(summary))


def summary_line(summary: dict[str, int]) -> str:
    """``3 accepted, 1 rejected, 2 skipped, 4 left``, and the ones that moved on meanwhile."""
    line = f"{summary['accepted']} accepted, {summary['rejected']} rejected, {summary['skipped']} skipped, {summary['left']} left"
    return line + (f", {summary['gone']} gone stale or decided elsewhere" if summary["gone"] else "")


def _walk(review: Any, answers: Answers, say: Callable[..., None], *, page: bool) -> None:
    """Show each proposal and act on its answer until the user quits, or none is left and
    the user does not take the last decision back."""
    while True:
        view = review.next()
        if view is None:
            if review.can_undo and _undo_at_end(review, answers, say):
                continue
            return
        if view.state != "pending":
            why = f" ({view.state_reason})" if view.state_reason else ""
            say(one_line(f"#{view.id} is {view.state} now{why}; going on"))
            continue
        _show(review, view, say)
        if not _answer(review, view, answers, say, page):
            review.put_back(view)
            return


def _undo_at_end(review: Any, answers: Answers, say: Callable[..., None]) -> bool:
    """After the last proposal, one more chance to take the last decision back: True when
    it was (that proposal is shown again), False to end the review."""
    while True:
        key = answers.key(LAST_PROMPT)
        if key is None or key == "q":
            return False
        if key != "u":
            say(LAST_HELP)
            continue
        try:
            undone = review.undo()
        except ProposalError as exc:  # someone else moved it on meanwhile
            say(one_line(exc.one_line()))
            return False
        say(f"#{undone.view.id} is pending again ({undone.decision} undone)")
        return True


def _show(review: Any, view: Any, say: Callable[..., None]) -> None:
    p = view.as_json()
    say(one_line(f"({review.position[view.id]}/{review.total}) store {p['store']}"))
    say(proposal_header(p))
    if p["diff"]:
        say("\n" + diff_text(p["diff"]), nl=False)


def _answer(review: Any, view: Any, answers: Answers, say: Callable[..., None], page: bool) -> bool:
    """Ask until an answer settles this proposal; False when the user quits."""
    while True:
        key = answers.key(PROMPT)
        if key is None or key == "q":
            return False
        try:
            if key == "y":
                review.accept(view)
                say(f"#{view.id} accepted")
            elif key == "n":
                reason = _reason(view, answers, say)
                if reason is None:
                    return False
                review.reject(view, reason)
                say(f"#{view.id} rejected")
            elif key == "s":
                review.skip(view)
            elif key == "u":
                undone = review.undo(view)
                say(f"#{undone.view.id} is pending again ({undone.decision} undone)")
            elif key == "f":
                _notes(review, view, say, page)
                continue
            else:
                say(HELP)
                continue
        except ProposalError as exc:  # moved on meanwhile, or nothing to undo: one line, and on
            say(one_line(exc.one_line()))
            if key == "u":
                continue
        return True


def _reason(view: Any, answers: Answers, say: Callable[..., None]) -> str | None:
    """A reason to reject, which is required: an empty one asks again; None at end of input."""
    while (reason := answers.line(f"Why reject #{view.id}? ")) is not None:
        if reason:
            return reason
        say("a reason is required (it is kept with the rejection)")
    return None


def _notes(review: Any, view: Any, say: Callable[..., None], page: bool) -> None:
    """The bytes of every file the proposal touches as it saw them, paged on a terminal."""
    from daemon.service.review import base_notes

    parts = []
    for path, data in base_notes(review.app, view.id):
        if data is None:
            parts.append(one_line(f"== {path} (did not exist; the proposal creates it) ==") + "\n")
        else:
            parts.append(one_line(f"== {path} ==") + "\n" + printable(data.decode("utf-8", "replace")))
    text = "\n".join(part if part.endswith("\n") else part + "\n" for part in parts)
    if page and len(text.splitlines()) >= shutil.get_terminal_size().lines:
        os.environ.setdefault("LESS", "FRX")  # as git: colours pass, one screen quits at once
        click.echo_via_pager(text)
    else:
        say(text, nl=False)


COMMANDS = [review_command]
