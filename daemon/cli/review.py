"""Reviewing proposals: ``proposals``, ``show``, ``accept``, ``reject``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from daemon.cli.render import diff_text, emit_json, proposal_header, proposal_line, say
from daemon.core.errors import DreamdError, ProposalError
from daemon.core.proposals import STATES

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
    from daemon.service.review import list_proposals

    found = [p.as_json() for p in list_proposals(settings.app(read_only=True), store_name, list(states) or None)]
    if as_json:
        emit_json(found)
        return
    for p in found:
        click.echo(proposal_line(p))
    if not found:
        click.echo("no proposals")


@click.command("show")
@click.argument("proposal_id", type=PROPOSAL_ID)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.pass_obj
def show_command(settings, proposal_id: int, as_json: bool) -> None:  # noqa: ANN001
    """Show one proposal with its rationale, evidence and diff."""
    from daemon.service.review import get_proposal

    proposal = get_proposal(settings.app(read_only=True), proposal_id).as_json()
    if as_json:
        emit_json(proposal)
        return
    click.echo(proposal_header(proposal))
    for d in proposal["decisions"]:
        say(f"  {d['decision']}ed by {d['actor']} via {d['surface']} at {d['at']}" + (f": {d['reason']}" if d["reason"] else ""))
    if proposal["diff"]:
        click.echo()
        click.echo(diff_text(proposal["diff"]), nl=False)


@click.command("accept")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1, required=True)
@click.pass_obj
def accept_command(settings, proposal_ids: tuple[int, ...]) -> None:  # noqa: ANN001
    """Accept proposals (bound to their hashes); `dreamd apply` writes them."""
    from daemon.service.review import decide

    for pid in proposal_ids:
        decide(settings.app(), pid, "accept")
        click.echo(f"#{pid} accepted")


@click.command("reject")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1, required=True)
@click.option("--reason", required=True, help="Why; kept with the decision.")
@click.pass_obj
def reject_command(settings, proposal_ids: tuple[int, ...], reason: str) -> None:  # noqa: ANN001
    """Reject proposals; the same change will not be proposed again."""
    from daemon.service.review import decide

    for pid in proposal_ids:
        decide(settings.app(), pid, "reject", reason)
        click.echo(f"#{pid} rejected")


COMMANDS = [proposals_command, show_command, accept_command, reject_command]
