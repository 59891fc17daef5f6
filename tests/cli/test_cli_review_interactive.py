"""``dreamd review``: the real executable on a pseudo-terminal (one key per answer) and on a
pipe (one answer per line), over the proposals of a real pass on examples/deepcode-memory."""

from __future__ import annotations

import fcntl
import getpass
import json
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

DREAMD = str(Path(sys.executable).with_name("dreamd"))
PROMPT = "Accept this proposal [y,n,s,f,u,q,?]? "
ME = f"human:{getpass.getuser()}"


class Terminal:
    """``dreamd ARGS`` on a pseudo-terminal of ``rows`` lines that does not echo what is typed
    (the program echoes each key itself), read as the screen shows it."""

    def __init__(self, args: list[str], env: dict[str, str], rows: int = 200) -> None:
        self.leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 200, 0, 0))
        attrs = termios.tcgetattr(follower)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(follower, termios.TCSANOW, attrs)
        self.child = subprocess.Popen([DREAMD, *args], stdin=follower, stdout=follower, stderr=follower, env=env, start_new_session=True)
        os.close(follower)
        self.screen = ""
        self.read_to = 0

    def expect(self, text: str, timeout: float = 60) -> str:
        """Wait until ``text`` is shown after what was expected before; the output up to it."""
        deadline = time.monotonic() + timeout
        while (found := self.screen.find(text, self.read_to)) < 0:
            assert time.monotonic() < deadline and self._read(deadline - time.monotonic()), f"{text!r} not shown; screen:\n{self.screen}"
        start, self.read_to = self.read_to, found + len(text)
        return self.screen[start : self.read_to]

    def press(self, key: str, timeout: float = 60) -> None:
        """Press one key once the program waits for one: its terminal is raw then, and what
        came before would be flushed (click.getchar sets raw mode with TCSAFLUSH)."""
        deadline = time.monotonic() + timeout
        while termios.tcgetattr(self.leader)[3] & termios.ICANON:
            assert time.monotonic() < deadline, "the program never asked for a key"
            time.sleep(0.01)
        os.write(self.leader, key.encode())

    def type_line(self, text: str) -> None:
        """Type a line, as at a prompt that reads one (the terminal is not raw then)."""
        os.write(self.leader, f"{text}\n".encode())

    def finish(self, timeout: float = 60) -> tuple[int, str]:
        """The exit code and everything shown after the last expected text."""
        deadline = time.monotonic() + timeout
        while self._read(deadline - time.monotonic()):
            pass
        code = self.child.wait(timeout=max(deadline - time.monotonic(), 1))
        os.close(self.leader)
        return code, self.screen[self.read_to :]

    def _read(self, timeout: float) -> bool:
        """Read what is there; False at end of output (or when nothing came in time)."""
        ready, _, _ = select.select([self.leader], [], [], max(timeout, 0))
        if not ready:
            return False
        try:
            data = os.read(self.leader, 65536)
        except OSError:  # EIO: the program closed the terminal
            return False
        self.screen += data.decode("utf-8", "replace").replace("\r\n", "\n")
        return bool(data)


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PAGER": "cat", **extra}


def _passed(cli, db_url, store, preset="deepcode"):
    done = cli("--db", db_url, "pass", "--store", str(store), "--preset", preset, "--summary")
    assert done.code == 0, done.err


def _proposals(cli, db_url):
    return {p["id"]: p for p in json.loads(cli("--db", db_url, "proposals", "--json").out)}


def _events(cli, db_url):
    return json.loads(cli("--db", db_url, "log", "--json").out)


def _piped(db_url, answers: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DREAMD, "--db", db_url, "review", *args], input=answers, capture_output=True, text=True, env=_env(), timeout=120)


def test_a_terminal_review_accepts_rejects_skips_undoes_and_quits(example_store, cli, db_url):
    """One key each on a terminal: accept #1, skip #2, reject #3 with a reason, accept #4,
    undo that accept (#4 is shown again), quit; each decision is recorded as made, by the user."""
    _passed(cli, db_url, example_store)
    term = Terminal(["--db", db_url, "review"], _env())
    assert "(1/6) store " in term.expect(PROMPT)
    term.press("y")
    assert term.expect(PROMPT).startswith("\x1b[0my\n#1 accepted\n(2/6) store ")  # the prompt is coloured
    term.press("s")
    assert "\x1b[32m+status: superseded\n" in term.expect(PROMPT)  # the diff is coloured on a terminal
    term.press("n")
    term.expect("Why reject #3? ")
    term.type_line("the copy is kept on purpose")
    assert term.expect(PROMPT).startswith("#3 rejected\n(4/6) store ")
    term.press("y")
    assert term.expect(PROMPT).startswith("\x1b[0my\n#4 accepted\n(5/6) store ")
    term.press("u")
    shown = term.expect(PROMPT)
    assert shown.startswith("\x1b[0mu\n#4 is pending again (accept undone)\n(4/6) store ")
    assert "  note: accept undone in review\n" in shown
    term.press("q")
    assert term.finish() == (0, "\x1b[0mq\n1 accepted, 1 rejected, 1 skipped, 3 left\n")

    found = _proposals(cli, db_url)
    assert {pid: p["state"] for pid, p in found.items()} == {1: "accepted", 2: "pending", 3: "rejected", 4: "pending", 5: "pending", 6: "pending"}
    assert [(d["decision"], d["actor"], d["surface"], d["reason"]) for d in found[1]["decisions"]] == [("accept", ME, "cli", None)]
    assert [(d["decision"], d["actor"], d["reason"]) for d in found[3]["decisions"]] == [("reject", ME, "the copy is kept on purpose")]
    assert found[2]["decisions"] == []
    assert [(d["decision"], d["actor"], d["reason"]) for d in found[4]["decisions"]] == [("accept", ME, None), ("unaccept", ME, "accept undone in review")]
    review_events = [(e["type"], e["proposal_id"], e["actor"]) for e in _events(cli, db_url) if e["type"] != "proposal.pending" and e["proposal_id"]]
    assert review_events == [("proposal.accepted", 1, ME), ("proposal.rejected", 3, ME), ("proposal.accepted", 4, ME), ("proposal.unaccepted", 4, ME)]


def test_quitting_at_once_decides_nothing(example_store, cli, db_url, snapshot_tree):
    """``q`` at the first prompt leaves every proposal pending, records no event and writes nothing to the store."""
    _passed(cli, db_url, example_store)
    before, events = snapshot_tree(example_store), _events(cli, db_url)
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1"))
    assert term.expect(PROMPT).startswith("(1/6) store ")
    term.press("q")
    assert term.finish() == (0, "q\n0 accepted, 0 rejected, 0 skipped, 6 left\n")
    found = _proposals(cli, db_url)
    assert [(p["state"], p["decisions"]) for p in found.values()] == [("pending", [])] * 6
    assert _events(cli, db_url) == events
    assert snapshot_tree(example_store) == before


def test_a_proposal_that_went_stale_before_its_answer_is_refused_and_the_review_goes_on(example_store, cli, db_url):
    """A note of #1 edited and a pass run while #1 waits for its answer: ``y`` is refused in one line,
    #1 stays stale with no decision, and the next proposal is shown."""
    _passed(cli, db_url, example_store)
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1"))
    assert "#1 merge [pending]" in term.expect(PROMPT)
    copy = example_store / "build-commands-copy.md"
    copy.write_text(copy.read_text() + "Edited while the review waited.\n")
    _passed(cli, db_url, example_store)
    term.press("y")
    assert term.expect(PROMPT).startswith(
        "y\nerror[proposal]: #1 is stale now (changed since proposed: build-commands-copy.md); it was not accepted\n(2/6) store "
    )
    term.press("q")
    assert term.finish() == (0, "q\n0 accepted, 0 rejected, 0 skipped, 5 left, 1 gone stale or decided elsewhere\n")
    first = _proposals(cli, db_url)[1]
    assert (first["state"], first["decisions"]) == ("stale", [])


def test_a_proposal_decided_elsewhere_during_the_review_is_passed_over(example_store, cli, db_url):
    """#2 accepted by another command while the review shows #1: the review says so in one line,
    never decides #2 itself, and shows #3 next."""
    _passed(cli, db_url, example_store)
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1"))
    term.expect(PROMPT)
    assert cli("--db", db_url, "accept", "2").code == 0
    term.press("n")
    term.expect("Why reject #1? ")
    term.type_line("not now")
    assert term.expect(PROMPT).startswith("#1 rejected\n#2 is accepted now; going on\n(3/6) store ")
    term.press("q")
    assert term.finish() == (0, "q\n0 accepted, 1 rejected, 0 skipped, 4 left, 1 gone stale or decided elsewhere\n")
    assert [d["decision"] for d in _proposals(cli, db_url)[2]["decisions"]] == ["accept"]


def test_piped_answers_are_read_one_per_line_without_colour(example_store, cli, db_url):
    """Off a terminal each line is one answer: an empty reason is asked for again, and the output has no colour."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "y\nn\n\nboth are needed\ns\nq\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("a reason is required (it is kept with the rejection)\n") == 1
    assert f"{PROMPT}n\nWhy reject #2? \na reason is required (it is kept with the rejection)\nWhy reject #2? both are needed\n#2 rejected\n" in done.stdout
    assert done.stdout.endswith(f"{PROMPT}q\n1 accepted, 1 rejected, 1 skipped, 3 left\n")
    assert "\x1b" not in done.stdout
    found = _proposals(cli, db_url)
    assert [found[pid]["state"] for pid in (1, 2, 3, 4)] == ["accepted", "rejected", "pending", "pending"]
    assert found[2]["decisions"][0]["reason"] == "both are needed"


def test_input_ending_while_a_reason_is_asked_rejects_nothing(example_store, cli, db_url):
    """``n`` and then end of input, with no reason given: the proposal stays pending and undecided."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "n\n\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("Why reject #1? \n0 accepted, 0 rejected, 0 skipped, 6 left\n")
    first = _proposals(cli, db_url)[1]
    assert (first["state"], first["decisions"]) == ("pending", [])


def test_undo_with_nothing_decided_says_so_and_asks_again(example_store, cli, db_url):
    """``u`` before any decision prints one line and asks about the same proposal again."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "u\nq\n")
    assert done.stdout.endswith(f"{PROMPT}u\nerror[proposal]: nothing to undo: this review has decided nothing yet\n{PROMPT}q\n0 accepted, 0 rejected, 0 skipped, 6 left\n")


def test_undoing_a_rejection_makes_the_proposal_pending_again(example_store, cli, db_url):
    """``u`` after a rejection shows that proposal again, pending, with the rejection taken back in the log."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "n\nno\nu\nq\n")
    assert "#1 is pending again (reject undone)\n(1/6) store " in done.stdout
    assert _proposals(cli, db_url)[1]["state"] == "pending"
    assert [e["type"] for e in _events(cli, db_url) if e["proposal_id"] == 1] == ["proposal.pending", "proposal.rejected", "proposal.unrejected"]


def test_an_accept_undone_is_never_carried_over_to_the_same_change_proposed_again(example_store, cli, db_url):
    """Accept #1, undo it, then the agent edits the index: the next pass proposes the same change
    again and leaves it pending, since nobody's accept stands for it."""
    _passed(cli, db_url, example_store)
    assert _piped(db_url, "y\nu\nq\n").stdout.endswith("0 accepted, 0 rejected, 0 skipped, 6 left\n")
    index = example_store / "MEMORY.md"
    index.write_text(index.read_text() + "\nA line the agent added at the end.\n")
    _passed(cli, db_url, example_store)
    found = _proposals(cli, db_url)
    assert found[1]["state"] == "stale"
    (again,) = [p for p in found.values() if p["id"] > 6 and p["title"] == found[1]["title"]]
    assert (again["state"], again["decisions"]) == ("pending", [])


def test_full_notes_are_the_bytes_the_proposal_saw(example_store, cli, db_url):
    """``f`` prints each file the proposal touches as it was when proposed, not as it is on disk now."""
    _passed(cli, db_url, example_store)
    copy = example_store / "build-commands-copy.md"
    seen = copy.read_text()
    copy.write_text("rewritten after the pass\n")
    done = _piped(db_url, "f\nq\n")
    assert done.returncode == 0, done.stderr
    notes = done.stdout.split(f"{PROMPT}f\n", 1)[1].split(PROMPT, 1)[0]
    memory, survivor = ((example_store / name).read_text() for name in ("MEMORY.md", "build-commands.md"))
    assert notes == (
        "== .dreamd-archive/build-commands-copy.md (did not exist; the proposal creates it) ==\n\n"
        f"== MEMORY.md ==\n{memory}\n== build-commands-copy.md ==\n{seen}\n== build-commands.md ==\n{survivor}"
    )


def test_full_notes_longer_than_the_terminal_go_through_the_pager(example_store, cli, db_url, tmp_path):
    """On a terminal of 10 lines, ``f`` hands the notes to ``$PAGER``."""
    _passed(cli, db_url, example_store)
    paged, pager = tmp_path / "paged.txt", tmp_path / "pager"
    pager.write_text(f"#!/bin/sh\ncat > {paged}\n")
    pager.chmod(0o755)
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1", PAGER=str(pager)), rows=10)
    term.expect(PROMPT)
    term.press("f")
    term.expect(PROMPT)
    term.press("q")
    assert term.finish()[0] == 0
    assert paged.read_text().startswith("== .dreamd-archive/build-commands-copy.md (did not exist; the proposal creates it) ==\n\n== MEMORY.md ==\n# Project memory\n")


def test_a_store_named_reviews_only_its_proposals(example_store, cli, db_url, tmp_path):
    """``review STORE`` shows that store's pending proposals and no other's."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(example_store, other)
    _passed(cli, db_url, example_store)
    _passed(cli, db_url, other)
    done = _piped(db_url, "y\nq\n", str(other))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"(1/6) store {other}\n#7 merge [pending]")
    assert done.stdout.endswith("1 accepted, 0 rejected, 0 skipped, 5 left\n")
    assert [p["id"] for p in _proposals(cli, db_url).values() if p["state"] == "accepted"] == [7]


def test_json_prints_only_the_summary_object_on_stdout(example_store, cli, db_url):
    """With ``--json`` the review talks on stderr and stdout is the summary object."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "y\nn\nduplicate\nq\n", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"accepted": 1, "rejected": 1, "skipped": 0, "gone": 0, "left": 4}
    assert f"{PROMPT}y\n#1 accepted\n" in done.stderr


def test_no_pending_proposals_says_so(example_store, cli, db_url):
    """With nothing pending the review says so and prints an all-zero summary."""
    _passed(cli, db_url, example_store)
    assert cli("--db", db_url, "reject", "--store", str(example_store), "--reason", "not now").code == 0
    done = _piped(db_url, "")
    assert (done.returncode, done.stdout) == (0, "no pending proposals\n0 accepted, 0 rejected, 0 skipped, 0 left\n")


LAST = "That was the last proposal [u,q,?]? "


def test_u_after_the_last_proposal_takes_its_decision_back_and_shows_it_again(example_store, cli, db_url):
    """Answering the last proposal asks once more; ``u`` there makes it pending again and
    shows it, and a new answer decides it."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "s\ns\ns\ns\ns\ny\nu\nn\nnot this one\nq\n")
    assert done.returncode == 0, done.stderr
    assert f"#6 accepted\n{LAST}u\n#6 is pending again (accept undone)\n(6/6) store " in done.stdout
    assert done.stdout.endswith(f"#6 rejected\n{LAST}q\n0 accepted, 1 rejected, 5 skipped, 0 left\n")
    sixth = _proposals(cli, db_url)[6]
    assert sixth["state"] == "rejected"
    assert [(d["decision"], d["reason"]) for d in sixth["decisions"]] == [("accept", None), ("unaccept", "accept undone in review"), ("reject", "not this one")]


def test_the_end_of_input_after_the_last_proposal_keeps_its_decision(example_store, cli, db_url):
    """Input that ends at the last prompt ends the review: the last decision stands."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "s\ns\ns\ns\ns\ny\n")
    assert done.stdout.endswith(f"#6 accepted\n{LAST}\n1 accepted, 0 rejected, 5 skipped, 0 left\n")
    assert _proposals(cli, db_url)[6]["state"] == "accepted"


def test_a_review_that_decided_nothing_ends_after_the_last_proposal_without_asking(example_store, cli, db_url):
    """Every proposal skipped: nothing to undo, so the review ends at once after the last one."""
    _passed(cli, db_url, example_store)
    done = _piped(db_url, "s\ns\ns\ns\ns\ns\n")
    assert LAST not in done.stdout
    assert done.stdout.endswith(f"{PROMPT}s\n0 accepted, 0 rejected, 6 skipped, 0 left\n")


def test_a_terminal_review_undoes_the_last_proposal_with_one_key(example_store, cli, db_url):
    """On a terminal the question after the last proposal takes one key: ``u`` shows it again, ``q`` ends."""
    _passed(cli, db_url, example_store)
    cli("--db", db_url, "reject", "1", "2", "3", "4", "5", "--reason", "not now")
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1"))
    assert term.expect(PROMPT).startswith("(1/1) store ")
    term.press("y")
    assert term.expect(LAST) == "y\n#6 accepted\n" + LAST
    term.press("u")
    assert term.expect(PROMPT).startswith("u\n#6 is pending again (accept undone)\n(1/1) store ")
    term.press("q")
    assert term.finish() == (0, "q\n0 accepted, 0 rejected, 0 skipped, 1 left\n")
    assert _proposals(cli, db_url)[6]["state"] == "pending"


def test_a_proposal_accepted_elsewhere_while_it_waits_is_not_this_reviews_to_undo(example_store, cli, db_url):
    """#1 accepted by another command while the review waits for its answer: ``y`` says so,
    the review does not count it, and ``u`` has nothing of this review's to take back."""
    _passed(cli, db_url, example_store)
    term = Terminal(["--db", db_url, "review"], _env(NO_COLOR="1"))
    term.expect(PROMPT)
    assert cli("--db", db_url, "accept", "1").code == 0
    term.press("y")
    assert term.expect(PROMPT).startswith("y\nerror[proposal]: #1 is accepted now; it was not accepted\n(2/6) store ")
    term.press("u")
    assert term.expect(PROMPT).startswith("u\nerror[proposal]: nothing to undo: this review has decided nothing yet\n")
    term.press("q")
    assert term.finish() == (0, "q\n0 accepted, 0 rejected, 0 skipped, 5 left, 1 gone stale or decided elsewhere\n")
    assert [d["decision"] for d in _proposals(cli, db_url)[1]["decisions"]] == ["accept"]
