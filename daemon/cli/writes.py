"""The only commands that write into stores: ``apply``, ``revert`` and ``resolve``."""

from __future__ import annotations

import click

from daemon.cli.render import say
from daemon.cli.review import PROPOSAL_ID, RowId
from daemon.core.errors import ProposalError, StaleError

JOURNAL_ID = RowId(lambda number: ProposalError(f"no journal {number}", hint="dreamd verify names conflicted journals"))


@click.command("apply")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1)
@click.option("--store", "store_name", metavar="NAME", help="With no ids: only this store's accepted proposals.")
@click.pass_obj
def apply_command(settings, proposal_ids: tuple[int, ...], store_name: str | None) -> None:  # noqa: ANN001
    """Apply accepted proposals (the given ids, or all accepted ones).

    Each is written only if its files are still byte-for-byte what it was made from;
    otherwise it becomes stale and nothing is written (exit code 6).
    """
    from daemon.service.apply import apply

    app = settings.app()
    if store_name:
        app.migrate_existing()  # finding the store reads the database: at this code's schema
    results = apply(app, list(proposal_ids) or None, store_name)
    for r in results:
        say(f"#{r.proposal_id} {r.state}" + (f": {r.detail}" if r.detail else ""))
    if not results:
        click.echo("nothing accepted to apply")
    stale = [r.proposal_id for r in results if r.state == "stale"]
    if stale:
        raise StaleError(f"{len(stale)} proposal(s) went stale and were not applied: {', '.join(f'#{i}' for i in stale)}", hint="run a new pass")


@click.command("revert")
@click.argument("proposal_id", type=PROPOSAL_ID, required=False)
@click.option("--pass", "pass_id", type=int, metavar="N", help="Revert every applied proposal of pass N, newest first.")
@click.pass_obj
def revert_command(settings, proposal_id: int | None, pass_id: int | None) -> None:  # noqa: ANN001
    """Restore the exact bytes an applied proposal replaced (or every one of a pass)."""
    from daemon.service.apply import revert, revert_pass

    if (proposal_id is None) == (pass_id is None):
        raise click.UsageError("give one proposal id, or --pass N")
    results = revert_pass(settings.app(), pass_id) if pass_id is not None else [revert(settings.app(), proposal_id)]  # type: ignore[arg-type]
    for result in results:
        click.echo(f"#{result.proposal_id} {result.state}")


@click.command("resolve")
@click.argument("journal_id", type=JOURNAL_ID)
@click.pass_obj
def resolve_command(settings, journal_id: int) -> None:  # noqa: ANN001
    """Close a conflicted journal (see verify): undo dreamd's writes, keep a person's edits."""
    from daemon.service.resolve import resolve

    done = resolve(settings.app(), journal_id)
    click.echo(f"journal {done.journal_id} ({done.operation} of #{done.proposal_id}) resolved")
    for path in done.restored:
        say(f"  restored {path}" + (" (with the edit that raced dreamd's write)" if path in done.returned else ""))
    for path in done.kept:
        say(f"  kept {path} (edited by someone else)")
    for path in done.left:
        say(f"  left {path} (written by dreamd; kept because another file was edited meanwhile)")


COMMANDS = [apply_command, revert_command, resolve_command]
