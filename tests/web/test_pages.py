"""What a proposal's page shows, in the report and on ``dreamd serve`` alike: changed words
marked, long diffs folded, what the agent reads after the proposal, evidence from notes it
does not touch. Real stores, real passes, the static report written to disk."""

from __future__ import annotations

import html
import json
import re

from daemon.config import parse_config
from daemon.core.diffview import FOLD_AFTER, parse
from daemon.core.proposals import read_lines
from daemon.llm.fakes import FakeModel
from daemon.service.passes.run import run_pass
from daemon.service.proposals import list_proposals
from daemon.service.review.pages import write_html_report

from .helpers import BUILD, pass_over

DEPLOY = "---\nname: Deploy\ndescription: how to deploy to staging\ntype: reference\n---\n\nDeploy with make deploy.\n"


def _index(entries: int, dangling: set[int]) -> dict[str, str]:
    """A DeepCode store whose MEMORY.md lists ``entries`` notes, those in ``dangling`` missing."""
    lines = [f"- [Note {i}](note-{i:03d}.md) — what note {i} is about, in a few words\n" for i in range(entries)]
    files = {f"note-{i:03d}.md": f"---\nname: Note {i}\ndescription: note {i}\ntype: project\n---\n\nNote {i}.\n" for i in range(entries) if i not in dangling}
    return {"MEMORY.md": "# Memory\n\n" + "".join(lines), **files}


def _page(app, tmp_path, view) -> str:  # noqa: ANN001
    write_html_report(app, [view], tmp_path / "report")
    return (tmp_path / "report" / f"proposal-{view.id}.html").read_text(encoding="utf-8")


def _only(app, source: str):  # noqa: ANN001, ANN202
    """The one proposal of the detector ``source`` names."""
    (view,) = [v for v in list_proposals(app) if v.source.startswith(f"detector:{source}@")]
    return view


def _unified(page: str) -> str:
    return page.split('<details open id="unified">')[1].split('<details id="side-by-side">')[0]


def test_a_changed_line_marks_only_the_words_it_changes(make_store, make_app, tmp_path):
    """An index entry repointed to its note's real name: the old name is deleted and the new one inserted; the rest of the line stays plain."""
    app = make_app()
    pass_over(app, make_store({"MEMORY.md": "# Project memory\n\n- [Deploy](deploy-guide.md) — how to deploy to staging\n", "deploy_guide.md": DEPLOY}))
    page = _page(app, tmp_path, _only(app, "index-drift"))
    assert '<span class="text">- [Deploy](<del>deploy-guide</del>.md) — how to deploy to staging</span>' in page
    assert '<span class="text">- [Deploy](<ins>deploy_guide</ins>.md) — how to deploy to staging</span>' in page


def test_the_unchanged_lines_around_hunks_are_counted(make_store, make_app, tmp_path):
    """Two dangling entries 80 lines apart: 9 unchanged lines before the first hunk, 73 between, 6 after the last."""
    app = make_app()
    pass_over(app, make_store(_index(100, {10, 90})))
    unified = _unified(_page(app, tmp_path, _only(app, "index-drift")))
    assert re.findall(r'<div class="skip">⋯ (\d+) unchanged lines?</div>', unified) == ["9", "73", "6"]


def test_a_long_diff_is_folded_after_its_first_rows_with_the_counts_behind_the_fold(make_store, make_app, tmp_path):
    """An index losing 200 of its 600 entries shows its first rows, then folds every other row behind one line that counts them."""
    app = make_app()
    pass_over(app, make_store(_index(600, set(range(0, 600, 3)))))
    view = _only(app, "index-drift")
    unified = _unified(_page(app, tmp_path, view))
    shown, folded = unified.split('<details class="more">')
    rows = [r for f in parse(view.diff) for h in f.hunks for r in h.rows]
    assert shown.count('<div class="row ') == FOLD_AFTER
    assert folded.count('<div class="row ') == len(rows) - FOLD_AFTER
    added = sum(r.kind == "added" for r in rows[FOLD_AFTER:])
    removed = sum(r.kind == "removed" for r in rows[FOLD_AFTER:])
    unchanged = len(rows) - FOLD_AFTER - added - removed
    assert f"<summary>{len(rows) - FOLD_AFTER:,} more lines of this file: +{added} −{removed}, {unchanged} unchanged</summary>" in folded


def test_the_facts_show_prints_are_on_the_page(make_store, make_app, tmp_path):
    """"What the agent reads after this" lists the lines dreamd show prints of the proposal's read facts, and the entries it pushes out."""
    app = make_app()
    pass_over(app, make_store(_index(600, set(range(0, 600, 3)))))
    view = _only(app, "index-drift")
    page = _page(app, tmp_path, view)
    facts = re.search(r'<ul class="facts-read">(.*?)</ul>', page, re.DOTALL).group(1)
    assert [html.unescape(line) for line in re.findall(r"<li>(.*?)</li>", facts)] == read_lines(view.reads) != []


def test_the_index_preview_is_cut_where_the_agent_stops_loading(make_store, make_app, tmp_path):
    """DeepCode loads 8,000 characters of MEMORY.md: the preview shows the index after the proposal up to there, then the cut."""
    app = make_app()
    pass_over(app, make_store(_index(600, set(range(0, 600, 3)))))
    view = _only(app, "index-drift")
    after = "# Memory\n\n" + "".join(f"- [Note {i}](note-{i:03d}.md) — what note {i} is about, in a few words\n" for i in range(600) if i % 3)
    found = re.search(r'<div class="note preview" id="index-preview">(.*?)<span class="cut" id="index-cut">(.*?)</span>', _page(app, tmp_path, view), re.DOTALL)
    loaded, cut = map(html.unescape, found.group(1, 2))
    assert loaded == after[:8000]
    lines = len(after[8000:].splitlines())
    assert cut == f"the agent stops loading here, inside line {after.count(chr(10), 0, 8000) + 1} (8,000 characters): {lines} more lines it does not read"


def test_long_stretches_of_a_quoted_note_that_no_quote_marks_are_folded(make_store, make_app, tmp_path):
    """The index quoted at lines 13 and 93: the 9 lines above the first quote and the 73 between them, past three lines each side, fold behind their counts; the 9 after the last stay."""
    app = make_app()
    pass_over(app, make_store(_index(100, {10, 90})))
    page = _page(app, tmp_path, _only(app, "index-drift"))
    assert re.findall(r'<details class="fold"><summary>(\d+) lines not quoted</summary>', page) == ["9", "73"]


def test_an_index_the_agent_loads_whole_says_so(make_store, make_app, tmp_path):
    """A short MEMORY.md after a merge: the preview is the whole index after it, and the page says the agent loads all of it."""
    app = make_app()
    pass_over(app, make_store({"MEMORY.md": "# Memory\n\n- [Build](build.md) — how to build\n- [Again](build-again.md) — how to build\n", "build.md": BUILD, "build-again.md": BUILD}))
    page = _page(app, tmp_path, _only(app, "exact-duplicate"))
    assert '<div class="note preview" id="index-preview"># Memory\n\n- [Build](build.md) — how to build\n</div>' in page
    assert '<p class="muted" id="index-whole">The agent loads all of it (8,000 characters).</p>' in page


def test_an_index_the_proposal_leaves_as_it_is_is_previewed_as_its_pass_recorded_it(make_store, make_app, tmp_path):
    """Two unlisted copies merged: the index is not in the diff, and the preview is its recorded bytes, said to be left as they are, not the file as it is now."""
    app = make_app()
    root = make_store({"MEMORY.md": "# Memory\n\n- [Deploy](deploy.md) — how to deploy\n", "deploy.md": DEPLOY, "build.md": BUILD, "build-again.md": BUILD})
    pass_over(app, root)
    (root / "MEMORY.md").write_text("# Memory, edited since\n")
    page = _page(app, tmp_path, _only(app, "exact-duplicate"))
    assert "<h3><code>MEMORY.md</code> as the agent will load it <span class=\"muted\">(this proposal leaves it as it is)</span></h3>" in page
    assert '<div class="note preview" id="index-preview"># Memory\n\n- [Deploy](deploy.md) — how to deploy\n</div>' in page


def _expired_by_a_model(make_store, make_app):  # noqa: ANN001, ANN202
    """A generic store (no index) where the model soft-expires status.md, quoting done.md, which it leaves as it is."""
    root = make_store({
        "status.md": "# Exporter\nThe exporter is not wired yet; next: wire it to the queue.\n",
        "done.md": "# Exporter done\nSince Tuesday the exporter is wired to the queue.\nIt ships every hour.\n",
    })  # fmt: skip
    reply = {"v": 1, "proposals": [{
        "kind": "soft-expire", "notes": ["status.md"], "survivor": None, "newer": None, "merged_body": None,
        "rationale": "The exporter work is done. done.md says it is wired now.", "confidence": 0.7,
        "evidence": [{"note": "done.md", "quote": "the exporter is wired to the queue."}], "dropped": [],
    }]}  # fmt: skip
    config = parse_config({"llm": {"model": "openai/test-model"}, "stores": [{"name": "s", "path": str(root), "preset": "generic"}]})
    app = make_app(config)
    app.model_client = lambda settings: FakeModel().enqueue(json.dumps(reply))
    run_pass(app, config.stores["s"])
    (view,) = [v for v in list_proposals(app) if v.source.startswith("model:")]
    return root, app, view


def test_evidence_quoted_from_a_note_the_proposal_leaves_as_it_is_is_shown_as_its_pass_recorded_it(make_store, make_app, tmp_path):
    """The model's soft-expire quotes done.md, which it does not touch: the page marks the quote in done.md's bytes as the pass read them."""
    root, app, view = _expired_by_a_model(make_store, make_app)
    assert "done.md" not in view.base
    (root / "done.md").write_text("# Exporter done\nRewritten since.\n")
    page = _page(app, tmp_path, view)
    assert '<h3><code>done.md</code> <span class="muted">(not changed by this proposal; as its pass recorded it)</span></h3>' in page
    assert '<div class="note quoted"># Exporter done\nSince Tuesday <mark>the exporter is wired to the queue.</mark>\nIt ships every hour.\n</div>' in page
    assert "Rewritten since." not in page


def test_a_store_without_an_index_says_there_is_none_to_preview(make_store, make_app, tmp_path):
    """A generic store has no index: the page says so instead of a preview."""
    _, app, view = _expired_by_a_model(make_store, make_app)
    page = _page(app, tmp_path, view)
    assert '<p class="muted" id="no-preview">No index to preview: this store has no index; its agent (any tool that reads frontmatter) finds its notes by listing them.</p>' in page
