"""The only commands that write into stores: ``apply``, ``revert`` and ``resolve``."""

from __future__ import annotations

import shlex

import click

from daemon.cli.progress import Bar
from daemon.cli.render import emit_json, say
from daemon.cli.review import JSON_OPTION, PROPOSAL_ID, RowId
from daemon.core.errors import ProposalError, StaleError

JOURNAL_ID = RowId(lambda number: ProposalError(f"no journal {number}", hint="dreamd verify names conflicted journals"))


def _result_json(result) -> dict:  # noqa: ANN001
    """One apply or revert result: ``{"id", "store", "state", "detail"}``."""
    return {"id": result.proposal_id, "store": result.store, "state": result.state, "detail": result.detail or None}


@click.command("apply")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1)
@click.option("--store", "store_name", metavar="NAME", help="With no ids: only this store's accepted proposals.")
@JSON_OPTION
@click.pass_obj
def apply_command(settings, proposal_ids: tuple[int, ...], store_name: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Apply accepted proposals (the given ids, or all accepted ones).

    Each is written only if its files are still byte-for-byte what it was made from;
    otherwise it becomes stale and nothing is written (exit code 6). A bar shows progress
    on a terminal.
    """
    from daemon.service.apply import apply

    app = settings.app()
    if store_name:
        app.migrate_existing()  # finding the store reads the database: at this code's schema
    with Bar("applying") as bar:
        results = apply(app, list(proposal_ids) or None, store_name, progress=bar.progress)
    if as_json:
        emit_json([_result_json(r) for r in results])
    else:
        for r in results:
            say(f"#{r.proposal_id} {r.state}" + (f": {r.detail}" if r.detail else ""))
        if not results:
            click.echo("nothing accepted to apply")
    stale = [r for r in results if r.state == "stale"]
    if stale:
        again = " and ".join(sorted({f"dreamd pass {shlex.quote(r.store)}" for r in stale}))
        raise StaleError(f"{len(stale)} proposal(s) went stale and were not applied: {', '.join(f'#{r.proposal_id}' for r in stale)}", hint=f"{again} proposes the change again if it is still wanted")


@click.command("revert")
@click.argument("proposal_id", type=PROPOSAL_ID, required=False)
@click.option("--pass", "pass_id", type=int, metavar="N", help="Revert every applied proposal of pass N, newest first.")
@JSON_OPTION
@click.pass_obj
def revert_command(settings, proposal_id: int | None, pass_id: int | None, as_json: bool) -> None:  # noqa: ANN001
    """Restore the exact bytes an applied proposal replaced (or every one of a pass)."""
    from daemon.service.apply import revert, revert_pass

    if (proposal_id is None) == (pass_id is None):
        raise click.UsageError("give one proposal id, or --pass N")
    results = revert_pass(settings.app(), pass_id) if pass_id is not None else [revert(settings.app(), proposal_id)]  # type: ignore[arg-type]
    if as_json:  # --pass N: a list; one id: one object
        emit_json([_result_json(r) for r in results] if pass_id is not None else _result_json(results[0]))
        return
    for result in results:
        click.echo(f"#{result.proposal_id} {result.state}")


@click.command("resolve")
@click.argument("journal_id", type=JOURNAL_ID)
@JSON_OPTION
@click.pass_obj
def resolve_command(settings, journal_id: int, as_json: bool) -> None:  # noqa: ANN001
    """Close a conflicted journal (see verify): undo dreamd's writes, keep a person's edits."""
    from daemon.service.apply import resolve

    done = resolve(settings.app(), journal_id)
    if as_json:
        emit_json({"journal": done.journal_id, "proposal_id": done.proposal_id, "operation": done.operation,
                   "restored": done.restored, "returned": done.returned, "kept": done.kept, "left": done.left, "caught": done.caught,
                   "later": done.later, "state": done.state})  # fmt: skip
        return
    click.echo(f"journal {done.journal_id} ({done.operation} of #{done.proposal_id}) resolved")
    for path in done.restored:
        say(f"  restored {path}" + (" (with the edit that raced dreamd's write)" if path in done.returned else ""))
    for path in done.kept:
        say(f"  kept {path} (edited by someone else)")
    for path in done.left:
        say(f"  left {path} (written by dreamd; kept because another file was edited meanwhile)")
    for path in done.caught:
        say(f"  caught {path} (written to a note while dreamd swapped it; not removed: read it, then delete it)")
    for path in done.later:
        say(f"  left {path} (written since by a later apply or revert)")
    if done.operation == "apply" and done.state == "accepted":
        say(f"  #{done.proposal_id} is still accepted: dreamd apply {done.proposal_id} applies it again")


COMMANDS = [apply_command, revert_command, resolve_command]
