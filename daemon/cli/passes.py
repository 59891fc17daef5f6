"""``dreamd pass``: run one consolidation pass, or show what it would propose (--dry-run)."""

from __future__ import annotations

import shlex

import click

from daemon.cli.progress import Bar, Stages
from daemon.cli.render import diff_text, emit_json, planned_json, proposal_header, say, waiting_parts


@click.command("pass")
@click.argument("store_name", metavar="[STORE]", required=False)
@click.option("--store", "store_path", metavar="PATH", help="A memory folder to pass over, with no config needed.")
@click.option("--preset", metavar="NAME", help="Layout of --store PATH: deepcode, claude-code, serena, cline, generic.")
@click.option("--dry-run", is_flag=True, help="Show what would be proposed; write nothing anywhere.")
@click.option("--all", "all_stores", is_flag=True, help="Every configured store, for cron: quiet unless something needs review.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.option("--summary", "--quiet", "summary_only", is_flag=True, help="Print only the pass's one-line summary.")
@click.option("--adopt-root", is_flag=True, help="Accept that the store's folder was replaced at its path (restored, re-cloned) and record the new one.")
@click.pass_obj
def pass_command(settings, store_name: str | None, store_path: str | None, preset: str | None, dry_run: bool, all_stores: bool, as_json: bool, summary_only: bool, adopt_root: bool) -> None:  # noqa: ANN001
    """Run one consolidation pass over a store and record its proposals.

    With --all (made for crontab): a pass over every configured store; prints nothing when
    nothing waits for a person, else one line per store with proposals pending or accepted
    and not applied (counted as status counts them). Exit 0;
    11 when a store's pass failed or a model call of it failed (the others still ran); 12
    when a store was skipped because another run holds it (a single store's pass exits 12
    then too). A single store's pass exits 7 when a model call failed: the pass and the
    detectors' proposals are recorded, and the notes of that call are sent again next pass.
    """
    from daemon.service.passes import pass_named

    app = settings.app()
    if all_stores:
        _pass_all(app, dry_run, as_json)
        return
    with Stages() as stages:
        store, report = pass_named(app, store_name, store_path, preset, dry_run=dry_run, adopt_root=adopt_root, progress=stages.progress)
    at = report.at.isoformat() if report.at and report.pass_id is not None else None
    items = []
    if report.outcomes:
        from daemon.service.workspace import store_kind

        kind = store_kind(store.preset)
        items = [planned_json(o, store.name, report.pass_id, at, kind) for o in report.outcomes]
    if as_json:
        emit_json({
            "store": report.store, "status": report.status, "pass_id": report.pass_id,
            "root_hash": report.root_hash, "stats": report.stats, "proposals": items,
            "skipped_files": [{"path": s.path, "reason": s.reason} for s in report.skipped_files],
            "external_changes": report.external_changes, "stale": report.stale, "findings": report.findings,
        })  # fmt: skip
    elif not summary_only:
        for skipped in report.skipped_files:
            say(f"skipped {skipped.path}: {skipped.reason}", err=True)
        for found in report.findings:
            say(f"finding [{found['kind']}]: {found['detail']}", err=True)
        for item in items if report.status not in ("skipped", "busy") else ():
            click.echo(proposal_header(item))
            if item["diff"] and (dry_run or item["state"] == "pending"):
                click.echo(diff_text(item["diff"]), nl=False)
            click.echo()
    if not as_json:
        label = "dry run (nothing written)" if dry_run else f"pass #{report.pass_id}"
        say(report.summary(label), err=report.status == "busy")
    if report.status == "busy":
        raise click.exceptions.Exit(12)
    if report.model_failure:
        raise click.exceptions.Exit(7)  # a model call failed: its notes wait for the next pass


def _pass_all(app, dry_run: bool, as_json: bool) -> None:  # noqa: ANN001
    """Cron mode: one line per store that needs review, one error line per failed store."""
    from daemon.config import default_config_file, no_config_loaded
    from daemon.core.errors import ConfigError, DreamdError
    from daemon.service.passes import pass_over

    if app.config.source is None:
        raise ConfigError(f"--all passes over the stores of a config, and {no_config_loaded()}", hint=f"give --config FILE, or write {default_config_file()} with [[stores]]")
    if not app.config.stores:
        raise ConfigError(f"--all needs stores in the config: {app.config.source} has no [[stores]]")
    summary, said, failed, busy = [], [], 0, 0  # said: (line, to stderr), printed once the bar is gone
    stores = sorted(app.config.stores.items())
    with Bar("passing") as bar:
        progress = bar.progress or (lambda done, total: None)
        for done, (name, store) in enumerate(stores):
            progress(done, len(stores))
            try:
                report = pass_over(app, store, dry_run=dry_run)
            except DreamdError as exc:
                failed += 1
                said.append((f"{name}: {exc.one_line()}", True))
                summary.append({"store": name, "status": "failed", "error": str(exc)})
                continue
            busy += report.status == "busy"
            if report.model_failure:
                failed += 1
                said.append((f"{name}: LLM part incomplete: {report.model_failure}", True))
            pending, waiting = (report.count("pending"), report.new_waiting) if dry_run else _waiting(app, name, report)
            summary.append({"store": name, "status": report.status, "new": report.new_waiting, "pending": pending, "waiting": waiting, "busy": report.busy})
            if report.status == "busy" and not as_json:
                said.append((f"{name}: skipped, {report.busy}", True))
            elif waiting and not as_json:
                said.append((f"{name}: {waiting} proposal(s) wait for a person ({waiting_parts(pending, waiting - pending)}; {report.new_waiting} new): {_next(name, pending)}", False))
        progress(len(stores), len(stores))
    for line, err in said:
        click.echo(line, err=err)
    if as_json:
        emit_json(summary)
    if failed or busy:
        raise click.exceptions.Exit(11 if failed else 12)


def _waiting(app, name: str, report) -> tuple[int, int]:  # noqa: ANN001
    """The store's pending and waiting proposals after its pass, as ``status`` counts them:
    counted by the no-op lane, else read (the whole pass opened, and migrated, the database
    before this)."""
    if report.waiting_after is not None:
        return report.waiting_after
    from daemon.service.status import store_status

    row = store_status(app, name)
    return row["proposals"].get("pending", 0), row["waiting"]


def _next(name: str, pending: int) -> str:
    """What to run about a store's waiting proposals: review the pending ones, else apply."""
    quoted = shlex.quote(name)
    return f"dreamd review {quoted}" if pending else f"dreamd apply --store {quoted}"


COMMANDS = [pass_command]
