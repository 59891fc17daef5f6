"""The static HTML report: index and one page per proposal, self-contained and escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from daemon.service.review.pages import write_html_report
from daemon.service.proposals import decide, get_proposal, list_proposals

from .helpers import BUILD, pass_over


class _Refs(HTMLParser):
    """Every tag name and every href/src/action of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.refs += [value or "" for name, value in attrs if name in ("href", "src", "action", "srcset", "poster")]


def _parsed(path: Path) -> _Refs:
    refs = _Refs()
    refs.feed(path.read_text(encoding="utf-8"))
    return refs


def test_report_writes_an_index_and_one_page_per_proposal(reviewed, make_app, tmp_path):
    """The files returned are index.html first, then proposal-ID.html for each view, all written."""
    app = make_app()
    written = write_html_report(app, list_proposals(app), tmp_path / "report")
    assert [p.name for p in written] == ["index.html", f"proposal-{reviewed.build}.html", f"proposal-{reviewed.hostile}.html"]
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == sorted(p.name for p in written)


def test_every_link_resolves_to_a_written_file_and_nothing_is_fetched(reviewed, make_app, tmp_path):
    """Each href is a relative link to a page the report wrote; no page loads a script, stylesheet, image or URL."""
    app = make_app()
    written = write_html_report(app, list_proposals(app), tmp_path / "report")
    for page in written:
        refs = _parsed(page)
        assert refs.refs, page.name
        assert [r for r in refs.refs if not (page.parent / r).is_file()] == [], page.name
        assert refs.tags & {"script", "link", "img", "iframe", "object", "embed"} == set()
        text = page.read_text(encoding="utf-8")
        assert re.findall(r"https?://", text) == [] and "url(" not in text and "@import" not in text
    assert _parsed(written[0]).refs == ["index.html", f"proposal-{reviewed.build}.html", f"proposal-{reviewed.build}.html", f"proposal-{reviewed.hostile}.html"]


def test_note_markup_is_shown_as_text_never_as_markup(reviewed, make_app, tmp_path):
    """A note whose name, title and body hold <script> reaches the pages escaped, in its diff and evidence."""
    app = make_app()
    written = write_html_report(app, list_proposals(app), tmp_path / "report")
    page = (tmp_path / "report" / f"proposal-{reviewed.hostile}.html").read_text(encoding="utf-8")
    assert all("<script" not in p.read_text(encoding="utf-8") for p in written)
    assert '<span class="text">name: &lt;script&gt;alert(1)&lt;/script&gt;</span>' in page  # a context line of the diff
    assert "<mark>Run &lt;script&gt;alert(&#34;body&#34;)&lt;/script&gt; before &amp; after.</mark>" in page
    assert "&lt;script&gt;x.md =&gt; .dreamd-archive/&lt;script&gt;x.md" in page


def test_index_groups_proposals_by_store_then_state(reviewed, make_app, make_store, tmp_path):
    """Each store is a heading with its states under it, pending before accepted, stores in name order."""
    app = make_app()
    other = make_store({"MEMORY.md": "# Memory\n\n- [A](a.md) — a\n- [B](b.md) — a\n", "a.md": BUILD, "b.md": BUILD}, name="other")
    pass_over(app, other)
    decide(app, reviewed.build, "accept")
    write_html_report(app, list_proposals(app), tmp_path / "report")
    index = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    headings = re.findall(r"<h2>(.*?)</h2>|<h3><span class=\"state state-\w+\">(\w+)</span>", index)
    assert [a or b for a, b in headings] == [str(other), "pending", str(reviewed.root), "pending", "accepted"]


def test_a_proposal_page_shows_the_diff_unified_and_side_by_side(reviewed, make_app, tmp_path):
    """The index line the merge removes is a removed row in the unified view and a left cell facing nothing in the side-by-side view."""
    app = make_app()
    write_html_report(app, [get_proposal(app, reviewed.build)], tmp_path / "report")
    page = (tmp_path / "report" / f"proposal-{reviewed.build}.html").read_text(encoding="utf-8")
    line = "- [Build again](build-again.md) — how to build"
    unified, side = page.split('<details id="side-by-side">')
    assert f'<div class="row removed"><span class="no">4</span><span class="no"></span><span class="sign">-</span><span class="text">{line}</span></div>' in unified
    assert f'<div class="pair"><span class="no">4</span><span class="text removed">{line}</span><span class="no"></span><span class="text empty"></span></div>' in side


def test_a_proposal_page_marks_each_evidence_quote_in_the_recorded_note(reviewed, make_app, tmp_path):
    """Both notes the merge quotes are shown from their recorded bytes with the quoted line marked."""
    app = make_app()
    (reviewed.root / "build.md").write_text("edited after the pass\n")  # the page shows what the proposal saw
    write_html_report(app, [get_proposal(app, reviewed.build)], tmp_path / "report")
    page = (tmp_path / "report" / f"proposal-{reviewed.build}.html").read_text(encoding="utf-8")
    assert page.count("<mark>Build with `make build`; it writes the binary to `out/app`.</mark>") == 2
    assert "edited after the pass" not in page
    assert re.findall(r"<h3><code>(build[\w-]*\.md)</code>", page) == ["build.md", "build-again.md"]


def test_a_proposal_page_shows_confidence_source_policy_verdict_and_decisions(reviewed, make_app, tmp_path):
    """A policy's rejection appears as the verdict and as a decision with its actor, surface and reason."""
    app = make_app()
    decide(app, reviewed.build, "reject", "too eager", actor="policy:strict@abc123")
    write_html_report(app, [get_proposal(app, reviewed.build)], tmp_path / "report")
    page = (tmp_path / "report" / f"proposal-{reviewed.build}.html").read_text(encoding="utf-8")
    assert "<tr><td>confidence</td><td>1.00</td></tr>" in page
    assert "<tr><td>source</td><td><code>detector:exact-duplicate@5</code></td></tr>" in page
    assert re.search(r"<li>rejected by <code>policy:strict@abc123</code> at [0-9T:+-]+: too eager</li>", page)
    assert re.search(r"<tr><td>reject</td><td><code>policy:strict@abc123</code></td><td>cli</td><td>[0-9T:+-]+</td><td>too eager</td></tr>", page)


def test_a_report_writes_nothing_into_the_store(reviewed, make_app, tmp_path, snapshot_tree):
    """Writing the report leaves every byte, name and mtime of the store as it was."""
    app = make_app()
    before = snapshot_tree(reviewed.root)
    write_html_report(app, list_proposals(app), tmp_path / "report")
    assert snapshot_tree(reviewed.root) == before


def test_each_page_links_to_the_one_before_and_after_it_in_the_index_order(reviewed, make_app, tmp_path):
    """The first page links only to the second as next, the second only back to the first; no key is advertised, the report runs no script."""
    app = make_app()
    write_html_report(app, list_proposals(app), tmp_path / "report")
    first = (tmp_path / "report" / f"proposal-{reviewed.build}.html").read_text(encoding="utf-8")
    second = (tmp_path / "report" / f"proposal-{reviewed.hostile}.html").read_text(encoding="utf-8")
    assert re.findall(r'<a href="([^"]+)" rel="(prev|next)"', first) == [(f"proposal-{reviewed.hostile}.html", "next")]
    assert re.findall(r'<a href="([^"]+)" rel="(prev|next)"', second) == [(f"proposal-{reviewed.build}.html", "prev")]
    assert "<kbd>" not in first + second
