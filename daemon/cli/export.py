"""``export``: proposals as patch files (``--dir``), as commits of a review branch
(``--branch``), or as a static HTML report (``--html``)."""

from __future__ import annotations

from pathlib import Path

import click

from daemon.cli.render import emit_json, say
from daemon.cli.review import PROPOSAL_ID
from daemon.core.errors import ProposalError


@click.command("export")
@click.argument("proposal_ids", type=PROPOSAL_ID, nargs=-1)
@click.option("--pending", is_flag=True, help="Without ids: only pending proposals (default: pending and accepted).")
@click.option("--store", "store_name", metavar="NAME", help="Without ids: only this store's proposals.")
@click.option("--dir", "directory", metavar="DIR", help="Write one patch file per proposal into DIR (created if missing).")
@click.option("--branch", metavar="NAME", help="Create branch NAME of the store's git repository, one commit per proposal.")
@click.option("--html", "html_dir", metavar="DIR", help="Write a static HTML report into DIR (index.html and a page per proposal).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (see README).")
@click.pass_obj
def export_command(settings, proposal_ids: tuple[int, ...], pending: bool, store_name: str | None, directory: str | None, branch: str | None, html_dir: str | None, as_json: bool) -> None:  # noqa: ANN001
    """Export proposals for review: patch files that `git apply` takes at the store root, a
    branch of commits on HEAD, or an HTML report that works from file://. Nothing in the
    store, the work tree or the index changes."""
    from daemon.service.review import chosen, export_branch, export_patches

    if sum(target is not None for target in (directory, branch, html_dir)) != 1:
        raise click.UsageError("give one of --dir DIR, --branch NAME or --html DIR")
    if proposal_ids and (pending or store_name):
        raise click.UsageError("give proposal ids or --pending/--store, not both")
    if not proposal_ids and not (pending or store_name):
        raise click.UsageError("give proposal ids, --pending or --store NAME")
    app = settings.app(read_only=True)
    views = chosen(app, list(proposal_ids), pending=pending, store_name=store_name)
    if html_dir is not None:
        from daemon.service.review import export_report

        pages = export_report(app, views, Path(html_dir))
        if as_json:
            emit_json([str(page) for page in pages])
        else:
            say(f"{len(pages)} page(s) in {html_dir}: open {pages[0]}")
        return
    if directory is not None:
        written = export_patches(app, views, Path(directory))
        if as_json:
            emit_json([w.as_json() for w in written])
        for w in [] if as_json else written:
            say(w.path)
        return
    report = export_branch(app, views, branch)  # type: ignore[arg-type]
    if as_json:
        emit_json(report.as_json())
    else:
        titles = {v.id: v.title for v in views}
        for pid, commit in report.commits:
            say(f"#{pid} {commit[:12]} {titles[pid]}")
        for pid, why in report.skipped:
            say(f"#{pid} skipped: {why}")
    if not report.commits:
        raise ProposalError(f"branch {branch} was not created: no proposal applies on HEAD {report.base[:12]}")
    if not as_json:
        say(f"branch {branch}: {len(report.commits)} commit(s) on {report.base[:12]}")


COMMANDS = [export_command]
