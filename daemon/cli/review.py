"""Reviewing proposals: ``proposals``, ``show``, ``accept``, ``reject``, and taking a decision back."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from typing import Any

import click

from daemon.cli.render import diff_text, emit_json, one_line, proposal_header, proposal_line
from daemon.core.errors import DreamdError, ProposalError
from daemon.core.proposals import KINDS, STATES

ROW_ID_RANGE = range(-(2**63), 2**63)  # what a database id can be: SQLite's and PostgreSQL's 64 bits


class RowId(click.types.IntParamType):
    """An id typed on the command line: an integer (else a usage error, as before), and one
    outside 64 bits is simply unknown. Checked here, before any database is opened, because
    the driver cannot even send such a number (OverflowError) to look for it."""

    name = "integer"

    def __init__(self, unknown: Callable[[int], DreamdError]) -> None:
        self.unknown = unknown

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        number = super().convert(value, param, ctx)
        if number not in ROW_ID_RANGE:
            raise self.unknown(number)
        return number


PROPOSAL_ID = RowId(lambda number: ProposalError(f"no proposal #{number}", hint="dreamd proposals lists them"))


@click.command("proposals")
@click.option("--store", "store_name", metavar="NAME", help="Only this store.")
@click.option("--state", "states", multiple=True, type=click.Choice(STATES), help="Only these states (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.pass_obj
def proposals_command(settings, store_name: str | None, states: tuple[str, ...], as_json: bool) -> None:  # noqa: ANN001
    """List proposals (all states unless --state is given)."""
    from daemon.service.proposals import list_proposals

    found = [p.as_json() for p in list_proposals(settings.app(read_only=True), store_name, list(states) or None)]
    if as_json:
        emit_json(found)
        return
    for p in found:
        click.echo(proposal_line(p))
    if not found:
        click.echo("no proposals")


@click.command("show")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1, required=True)
@click.option("--stat", is_flag=True, help="Files and their added and removed lines instead of the diff.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README); a list when several ids are given.")
@click.pass_obj
def show_command(settings, proposal_ids: tuple[int, ...], stat: bool, as_json: bool) -> None:  # noqa: ANN001
    """Show proposals with their rationale, evidence and diff (paged on a terminal, like git)."""
    from daemon.service.proposals import get_proposal

    app = settings.app(read_only=True)
    proposals = [get_proposal(app, pid).as_json() for pid in dict.fromkeys(proposal_ids)]
    if as_json:
        emit_json(proposals[0] if len(proposals) == 1 else proposals)
        return
    texts = [_shown(p, stat) for p in proposals]
    if sys.stdout.isatty() and sum(t.count("\n") for t in texts) >= shutil.get_terminal_size().lines:
        os.environ.setdefault("LESS", "FRX")  # as git: colours pass, one screen quits at once
        click.echo_via_pager("\n".join(texts), color=True)  # the diff was coloured for this terminal already
        return
    for number, text in enumerate(texts):  # one proposal at a time: a reader sees the first at once
        click.echo(("\n" if number else "") + text, nl=False)


def _shown(proposal: dict[str, Any], stat: bool) -> str:
    lines = [proposal_header(proposal)]
    for d in proposal["decisions"]:
        lines.append(one_line(f"  {d['decision']}ed by {d['actor']} via {d['surface']} at {d['at']}" + (f": {d['reason']}" if d["reason"] else "")))
    text = "\n".join(lines) + "\n"
    if proposal["diff"] and stat:
        from daemon.core.patch import file_stats  # unidiff: only when a stat is asked for

        text += "\n" + "".join(f" {one_line(path)} | +{added} -{removed}\n" for path, added, removed in file_stats(proposal["diff"]))
    elif proposal["diff"]:
        text += "\n" + diff_text(proposal["diff"])
    return text


def _selection_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Filters that pick pending proposals for a batch decision (all given must match)."""
    for option in reversed([
        click.option("--store", "store_name", metavar="NAME", help="Pending proposals of this store."),
        click.option("--kind", type=click.Choice(KINDS), help="Pending proposals of this kind."),
        click.option("--source", metavar="SOURCE", help="Pending proposals from this source (a prefix ending in ':' or '@' matches many)."),
        click.option("--min-confidence", type=click.FloatRange(0, 1), help="Pending proposals at least this confident."),
        click.option("--pass", "pass_id", type=int, metavar="N", help="Pending proposals of pass N."),
    ]):  # fmt: skip
        command = option(command)
    return command


def _chosen(app: Any, proposal_ids: tuple[int, ...], filters: dict[str, Any]) -> list[int]:
    """The ids given, else the pending proposals the filters select; one or the other."""
    from daemon.service.proposals import Selection, select_pending

    given = {k: v for k, v in filters.items() if v is not None}
    if proposal_ids and given:
        raise click.UsageError("give proposal ids or filters (--store, --kind, ...), not both")
    if proposal_ids:
        return list(proposal_ids)
    if not given:
        raise click.UsageError("give proposal ids, or filters such as --store NAME or --kind merge")
    chosen = select_pending(app, Selection(store=given.get("store_name"), kind=given.get("kind"), source=given.get("source"), min_confidence=given.get("min_confidence"), pass_id=given.get("pass_id")))
    if not chosen:
        raise ProposalError("no pending proposal matches", hint="dreamd proposals --state pending lists them")
    return chosen


JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")


def _decided(app: Any, decided: Any, state: str, as_json: bool) -> None:
    """What a decision made of each proposal, in the order given: ``#12 accepted`` lines
    (``#12 already accepted`` for one that was so before), or a list of ``{id, store, state}``
    read back from the database."""
    ids = decided.ids
    if not as_json:
        for pid in ids:
            click.echo(f"#{pid} already {state}" if pid in decided.already else f"#{pid} {state}")
        return
    from daemon.service.proposals import get_proposal

    emit_json([{"id": v.id, "store": v.store, "state": v.state} for v in (get_proposal(app, pid) for pid in ids)])


@click.command("accept")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1)
@_selection_options
@JSON_OPTION
@click.pass_obj
def accept_command(settings, proposal_ids: tuple[int, ...], as_json: bool, **filters: Any) -> None:  # noqa: ANN001
    """Accept proposals (bound to their hashes), by id or by filter; all of them or none.
    One accepted already stays so. `dreamd apply` writes them; `dreamd unaccept ID` takes an
    accept back."""
    from daemon.service.proposals import decide_all

    app = settings.app()
    _decided(app, decide_all(app, _chosen(app, proposal_ids, filters), "accept", again_ok=True), "accepted", as_json)


@click.command("reject")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1)
@click.option("--reason", required=True, help="Why; kept with the decision.")
@_selection_options
@JSON_OPTION
@click.pass_obj
def reject_command(settings, proposal_ids: tuple[int, ...], reason: str, as_json: bool, **filters: Any) -> None:  # noqa: ANN001
    """Reject proposals, by id or by filter, all of them or none; the same change will not be
    proposed again (`dreamd unreject ID` takes a rejection back). One rejected already stays so."""
    from daemon.service.proposals import decide_all

    app = settings.app()
    _decided(app, decide_all(app, _chosen(app, proposal_ids, filters), "reject", reason, again_ok=True), "rejected", as_json)


def _taken_back(view: Any, as_json: bool) -> None:
    """A decision taken back: ``#12 pending``, or ``{id, store, state}``."""
    if as_json:
        emit_json({"id": view.id, "store": view.store, "state": view.state})
        return
    click.echo(f"#{view.id} {view.state}")


@click.command("unreject")
@click.argument("proposal_id", type=PROPOSAL_ID)
@click.option("--reason", help="Why; kept with the event.")
@JSON_OPTION
@click.pass_obj
def unreject_command(settings, proposal_id: int, reason: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Take a rejection back: the proposal is pending again and its change may be proposed again."""
    from daemon.service.proposals import unreject

    _taken_back(unreject(settings.app(), proposal_id, reason), as_json)


@click.command("unaccept")
@click.argument("proposal_id", type=PROPOSAL_ID)
@click.option("--reason", help="Why; kept with the event.")
@JSON_OPTION
@click.pass_obj
def unaccept_command(settings, proposal_id: int, reason: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Take an accept back before it is applied: the proposal is pending again, and no later
    pass carries the accept over to the same change proposed again."""
    from daemon.service.proposals import unaccept

    _taken_back(unaccept(settings.app(), proposal_id, reason), as_json)


COMMANDS = [proposals_command, show_command, accept_command, reject_command, unreject_command, unaccept_command]
