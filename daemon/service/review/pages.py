"""The review pages: a static HTML report, and the pages ``dreamd serve`` draws from the same templates.

A proposal's page shows its diff (unified and side by side), rationale, evidence marked in
the notes' recorded bytes, confidence, source, what a policy made of it and every decision.
Templates live in ``daemon/templates``; they are rendered with ``StrictUndefined`` and
autoescaping, so every piece of note text (a title, a path, a body) reaches the page as text,
never as markup. Pages load nothing from anywhere (inline CSS, no script), so the report
works from ``file://`` on a machine with no network.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jinja2

from daemon.core.diffview import FileDiff, parse
from daemon.core.errors import DiffError
from daemon.core.marks import Piece, mark
from daemon.core.proposals import STATES
from daemon.db import repo
from daemon.service.context import App
from daemon.service.proposals import ProposalView

INDEX = "index.html"


def environment() -> jinja2.Environment:
    """The page templates, strict (a missing variable is an error) and escaping everything."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("daemon", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def page_name(proposal_id: int) -> str:
    return f"proposal-{proposal_id}.html"


@dataclass(frozen=True)
class NoteEvidence:
    """One note the evidence quotes: its recorded text cut into marked pieces, and the quotes."""

    path: str
    pieces: list[Piece] | None  # None: the note's recorded bytes are not there to show
    quotes: list[dict[str, Any]]


@dataclass(frozen=True)
class ProposalPage:
    """What a proposal's page shows beyond the view itself."""

    view: ProposalView
    files: list[FileDiff]
    diff_error: str | None  # a stored diff that does not parse is shown as text, with why
    evidence: list[NoteEvidence]
    policy: list[dict[str, Any]]  # decisions made by a policy
    holds: list[str]  # why no policy may accept it


def base_blobs(app: App, views: list[ProposalView]) -> dict[str, bytes]:
    """The recorded bytes of every file the proposals were made from, by hash (one query)."""
    wanted = {digest for view in views for digest in view.base.values() if digest}
    with app.engine().connect() as conn:
        return repo.get_blobs(conn, wanted)


def proposal_page(view: ProposalView, blobs: dict[str, bytes]) -> ProposalPage:
    try:
        files, diff_error = parse(view.diff), None
    except DiffError as exc:
        files, diff_error = [], str(exc)
    by_note: dict[str, list[dict[str, Any]]] = {}
    for item in view.evidence:
        by_note.setdefault(str(item.get("path", "")), []).append(item)
    evidence = []
    for path, quotes in by_note.items():
        data = blobs.get(view.base.get(path) or "")
        pieces = None if data is None else mark(data.decode("utf-8", "replace"), [(int(q.get("start", 0)), int(q.get("end", 0)), str(q.get("quote", ""))) for q in quotes])
        evidence.append(NoteEvidence(path, pieces, quotes))
    policy = [d for d in view.decisions if d["actor"].startswith("policy:")]
    holds = list((view.reads or {}).get("holds", []))
    return ProposalPage(view, files, diff_error, evidence, policy, holds)


def grouped(views: list[ProposalView]) -> list[tuple[str, list[tuple[str, list[ProposalView]]]]]:
    """Proposals by store (by name), then by state (in the order of the state machine)."""
    stores: dict[str, dict[str, list[ProposalView]]] = {}
    for view in sorted(views, key=lambda v: (v.store, v.id)):
        stores.setdefault(view.store, {}).setdefault(view.state, []).append(view)
    order = {state: i for i, state in enumerate(STATES)}
    return [(store, sorted(states.items(), key=lambda item: order.get(item[0], len(order)))) for store, states in stores.items()]


def render_index(env: jinja2.Environment, views: list[ProposalView], *, href: Callable[[int], str], index_href: str, heading: str, filters: dict[str, Any] | None = None) -> str:
    return env.get_template("index.html").render(groups=grouped(views), href=href, index_href=index_href, heading=heading, filters=filters, count=len(views))


def render_proposal(env: jinja2.Environment, page: ProposalPage, *, index_href: str, forms: dict[str, Any] | None = None, notice: str | None = None) -> str:
    return env.get_template("proposal.html").render(page=page, p=page.view, index_href=index_href, forms=forms, notice=notice)


def write_html_report(app: App, views: list[ProposalView], directory: pathlib.Path) -> list[pathlib.Path]:
    """Write ``index.html`` and one page per proposal into ``directory``; return the files, index first.

    Links between the pages are relative, so the folder can be moved, archived or opened
    from ``file://``.
    """
    env = environment()
    blobs = base_blobs(app, views)
    directory.mkdir(parents=True, exist_ok=True)
    heading = f"{len(views)} proposal{'s' if len(views) != 1 else ''}, as of {app.clock().isoformat()}"
    index = directory / INDEX
    index.write_text(render_index(env, views, href=page_name, index_href=INDEX, heading=heading), encoding="utf-8")
    written = [index]
    for view in views:
        path = directory / page_name(view.id)
        path.write_text(render_proposal(env, proposal_page(view, blobs), index_href=INDEX), encoding="utf-8")
        written.append(path)
    return written
