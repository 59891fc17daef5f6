"""The review pages: a static HTML report, and the pages ``dreamd serve`` draws from the same templates.

A proposal's page shows its rationale, then its diff (unified and side by side, changed words
marked, long files folded behind their counts), what the agent reads after it, the evidence
marked in the notes' recorded bytes, and after those the decision; then what a policy made
of it and every decision. Templates live in ``daemon/templates``; they are rendered with
``StrictUndefined`` and autoescaping, so every piece of note text (a title, a path, a body)
reaches the page as text, never as markup. The report loads nothing from anywhere and runs
no script (inline CSS only), so it works from ``file://`` on a machine with no network; the
served pages add one inline script, allowed by its hash (``SCRIPT_HASH``): the keys.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jinja2

from daemon.core.diffview import Drawn, FileDiff, Pair, Row, Skip, drawn, parse
from daemon.core.errors import DiffError
from daemon.core.marks import Fold, Piece, folded, mark
from daemon.core.proposals import STATES
from daemon.service.context import App
from daemon.service.proposals import ProposalView
from daemon.service.review.agent_reads import AgentReads, agent_reads
from daemon.service.review.seen import Seen

INDEX = "index.html"
SCRIPT = resources.files("daemon").joinpath("templates/keys.js").read_text(encoding="utf-8")
SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()


def environment() -> jinja2.Environment:
    """The page templates, strict (a missing variable is an error) and escaping everything."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("daemon", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    kinds = {"fold": Fold, "skip": Skip, "row": Row, "pair": Pair}  # what a page draws, told apart: `item is skip`
    env.tests.update({name: (lambda kind: lambda item: isinstance(item, kind))(kind) for name, kind in kinds.items()})
    env.globals.update(script_hash=SCRIPT_HASH)
    return env


def page_name(proposal_id: int) -> str:
    return f"proposal-{proposal_id}.html"


@dataclass(frozen=True)
class NoteEvidence:
    """One note the evidence quotes: its recorded text cut into marked pieces (long unmarked
    stretches folded), and the quotes."""

    path: str
    pieces: list[Piece | Fold] | None  # None: the note's recorded bytes are not there to show
    quotes: list[dict[str, Any]]
    touched: bool  # the proposal changes this note (else its bytes come from the pass's snapshot)


@dataclass(frozen=True)
class DrawnFile:
    """One file of the diff, in both views."""

    file: FileDiff
    unified: Drawn
    side_by_side: Drawn


@dataclass(frozen=True)
class Nav:
    """Where a page leads: the previous and next proposal (None: none), and where this one sits."""

    previous: str | None = None
    next: str | None = None
    position: str = ""


@dataclass(frozen=True)
class ProposalPage:
    """What a proposal's page shows beyond the view itself."""

    view: ProposalView
    files: list[DrawnFile]
    diff_error: str | None  # a stored diff that does not parse is shown as text, with why
    evidence: list[NoteEvidence]
    policy: list[dict[str, Any]]  # decisions made by a policy
    holds: list[str]  # why no policy may accept it
    reads: AgentReads


def proposal_pages(app: App, views: Sequence[ProposalView]) -> list[ProposalPage]:
    """Each proposal's page, from what the state database recorded when it was made (one connection)."""
    with app.engine().connect() as conn:
        seen = Seen(app, conn)
        return [_page(view, seen) for view in views]


def _page(view: ProposalView, seen: Seen) -> ProposalPage:
    try:
        parsed, diff_error = parse(view.diff), None
    except DiffError as exc:
        parsed, diff_error = [], str(exc)
    old = seen.notes(view, [f.old_path for f in parsed if f.old_path])
    files = [DrawnFile(f, drawn(f, _lines(old.get(f.old_path or ""))), drawn(f, _lines(old.get(f.old_path or "")), side_by_side=True)) for f in parsed]
    by_note: dict[str, list[dict[str, Any]]] = {}
    for item in view.evidence:
        by_note.setdefault(str(item.get("path", "")), []).append(item)
    recorded = seen.notes(view, list(by_note))
    evidence = []
    for path, quotes in by_note.items():
        data = recorded.get(path)
        pieces = None if data is None else folded(mark(data.decode("utf-8", "replace"), [(int(q.get("start", 0)), int(q.get("end", 0)), str(q.get("quote", ""))) for q in quotes]))
        evidence.append(NoteEvidence(path, pieces, quotes, view.result.get(path, view.base.get(path)) != view.base.get(path)))
    policy = [d for d in view.decisions if d["actor"].startswith("policy:")]
    holds = list((view.reads or {}).get("holds", []))
    return ProposalPage(view, files, diff_error, evidence, policy, holds, agent_reads(view, seen))


def _lines(data: bytes | None) -> int | None:
    """How many lines ``data`` has (a last one without a newline counts); None when unknown."""
    if data is None:
        return None
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def grouped(views: list[ProposalView]) -> list[tuple[str, list[tuple[str, list[ProposalView]]]]]:
    """Proposals by store (by name), then by state (in the order of the state machine)."""
    stores: dict[str, dict[str, list[ProposalView]]] = {}
    for view in sorted(views, key=lambda v: (v.store, v.id)):
        stores.setdefault(view.store, {}).setdefault(view.state, []).append(view)
    order = {state: i for i, state in enumerate(STATES)}
    return [(store, sorted(states.items(), key=lambda item: order.get(item[0], len(order)))) for store, states in stores.items()]


def render_index(env: jinja2.Environment, views: list[ProposalView], *, href: Callable[[int], str], index_href: str, heading: str, **served: Any) -> str:
    """The index; ``served``: what only ``dreamd serve`` draws (filters, forms, notices, the script)."""
    values = {"filters": None, "forms": None, "notice": None, "accepted": [], "undo": None, "first": None, "script": None}
    return env.get_template("index.html").render(groups=grouped(views), href=href, index_href=index_href, heading=heading, count=len(views), **(values | served))


def render_proposal(env: jinja2.Environment, page: ProposalPage, *, index_href: str, nav: Nav, **served: Any) -> str:
    """A proposal's page; ``served``: what only ``dreamd serve`` draws (forms, notice, undo, the script)."""
    values = {"forms": None, "notice": None, "undo": None, "script": None}
    return env.get_template("proposal.html").render(page=page, p=page.view, index_href=index_href, nav=nav, **(values | served))


def write_html_report(app: App, views: list[ProposalView], directory: pathlib.Path) -> list[pathlib.Path]:
    """Write ``index.html`` and one page per proposal into ``directory``; return the files, index first.

    Links between the pages are relative, so the folder can be moved, archived or opened
    from ``file://``; each page links to the one before and after it, in the index's order.
    """
    env = environment()
    directory.mkdir(parents=True, exist_ok=True)
    heading = f"{len(views)} proposal{'s' if len(views) != 1 else ''}, as of {app.clock().isoformat()}"
    ordered = [view for _, states in grouped(views) for _, group in states for view in group]
    index = directory / INDEX
    index.write_text(render_index(env, views, href=page_name, index_href=INDEX, heading=heading, first=page_name(ordered[0].id) if ordered else None), encoding="utf-8")
    written = [index]
    for n, page in enumerate(proposal_pages(app, ordered)):
        nav = Nav(
            page_name(ordered[n - 1].id) if n > 0 else None,
            page_name(ordered[n + 1].id) if n + 1 < len(ordered) else None,
            f"{n + 1} of {len(ordered)}",
        )
        path = directory / page_name(page.view.id)
        path.write_text(render_proposal(env, page, index_href=INDEX, nav=nav), encoding="utf-8")
        written.append(path)
    return written
