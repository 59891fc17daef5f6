"""Proposals of one pass all edit the index; applying one must not strand the others.

When the index differs only by what dreamd's own applies wrote, apply places the proposal's
reviewed index edit on it by what it means: each entry in the section its diff showed it in.
Any other change to the index (a person, an agent) still makes the proposal stale.
"""

from __future__ import annotations

import re

from daemon.config import adhoc_store
from daemon.core.index import IndexSpec, entries
from daemon.core.notes import Note
from daemon.service.apply.applying import apply, revert
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal


def _accept_all(app, store):
    """Accept every pending proposal; returns the ids, those that edit MEMORY.md first."""
    outcomes = [o for o in run_pass(app, store).outcomes if o.state == "pending"]
    edits_index = [o.id for o in outcomes if o.planned.change.result.get("MEMORY.md") != o.planned.change.base.get("MEMORY.md")]
    for o in outcomes:
        decide(app, o.id, "accept")
    return edits_index + [o.id for o in outcomes if o.id not in edits_index]


def _listed(root) -> set[str]:
    return {e.path for e in entries(IndexSpec("MEMORY.md", "links"), (root / "MEMORY.md").read_text(), [])}


def _live(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_file() and p.name != "MEMORY.md" and Note(p.name, p.read_bytes(), "").live}


def test_every_accepted_proposal_of_a_pass_applies_in_one_go(example_store, make_app, clock):
    """Accepting every proposal of the example and applying them applies all of them, and the index lists exactly the live notes."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    clock.advance(days=1)
    ids = _accept_all(app, store)
    assert len(ids) >= 5
    assert [r.state for r in apply(app, ids)] == ["applied"] * len(ids)
    assert _listed(example_store) == _live(example_store)
    assert verify(app, store).clean


def test_an_outside_edit_of_the_index_still_makes_siblings_stale(example_store, make_app, clock, read_tree):
    """After one apply, a hand edit of MEMORY.md makes the other accepted proposals stale, and nothing more is written."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first, second, *_ = _accept_all(app, store)
    assert apply(app, [first])[0].state == "applied"
    with open(example_store / "MEMORY.md", "a") as f:
        f.write("- [Later](later.md) — added by the agent\n")
    before = read_tree(example_store)
    (result,) = apply(app, [second])
    assert (result.state, result.detail) == ("stale", "changed since proposed: MEMORY.md")
    assert read_tree(example_store) == before


def test_a_pass_between_applies_keeps_accepted_siblings(example_store, make_app, clock):
    """A pass after an apply does not mark the other accepted proposals stale: their index is dreamd's."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first, second, *_ = _accept_all(app, store)
    apply(app, [first])
    clock.advance(minutes=5)
    report = run_pass(app, store)
    assert report.stale == [] and get_proposal(app, second).state == "accepted"
    assert apply(app, [second])[0].state == "applied"


def test_reverting_newest_first_restores_the_original_bytes(example_store, make_app, clock, read_tree):
    """Two proposals applied on one index revert, newest first, to the exact original store."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    original = read_tree(example_store)
    first, second, *_ = _accept_all(app, store)
    apply(app, [first, second])
    revert(app, second)
    revert(app, first)
    assert read_tree(example_store) == original


def _fm(name: str, kind: str, **extra: str) -> str:
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in {"name": name, "description": f"{name} notes", **extra}.items()) + f"metadata:\n  type: {kind}\n---\n"


SQL = "Lowercase keywords, one column a line, common table expressions over subqueries.\n"
SECTIONED = {
    "user_role.md": _fm("role", "user") + "Runs the data team.\n",
    "feedback_sql.md": _fm("sql", "feedback") + SQL,
    "feedback_sql_again.md": _fm("sql-again", "feedback") + SQL,
    "feedback_sql_copy.md": _fm("sql-copy", "feedback") + SQL,
    "project_runbook.md": _fm("runbook", "project") + "Backfills run one day per run.\n",
    "project_sprint.md": _fm("sprint", "project", expires="2025-02-01") + "Sprint 9 is half done.\n",
    "project_backfill.md": _fm("backfill", "project") + "Backfill 2024 in monthly chunks.\n",
    "reference_ci.md": _fm("ci", "reference") + "CI runs on Actions.\n",
    "reference_schema.md": _fm("schema", "reference") + "Schema docs are at /docs.\n",
    "MEMORY.md": "# Memory\n\n## User\n\n- [Role](user_role.md) — role\n\n## Feedback\n\n- [SQL](feedback_sql.md) — sql\n"
    "- [SQL again](feedback_sql_again.md) — sql\n- [SQL copy](feedback_sql_copy.md) — sql\n\n## Project\n\n- [Runbook](project_runbook.md) — runbook\n"
    "- [Sprint](project_sprint.md) — sprint\n\n## Reference\n\n- [CI](reference_ci.md) — ci\n- [Schema](reference_schema.md) — schema\n",
}


def _sections(text: str) -> dict[str, str]:
    """Note path -> the heading its MEMORY.md entry sits under."""
    found, heading = {}, ""
    for line in text.split("\n"):
        heading = line if line.startswith("#") else heading
        found |= {target: heading for target in re.findall(r"\]\(([^()]+\.md)\)", line)}
    return found


def test_an_entry_added_after_lines_above_it_went_lands_in_the_section_its_diff_showed(make_store, make_app, clock):
    """Claude Code: after a merge took two Feedback lines and an expiry the last Project line, the reindex's new project entry lands under '## Project' as its diff showed it (placed as git apply -C0 places it, it went under '## Feedback')."""
    root = make_store(SECTIONED, name="memory")
    store, app = adhoc_store(root, "claude-code"), make_app()
    outcomes = [o for o in run_pass(app, store).outcomes if o.state == "pending"]
    assert sorted(o.planned.draft.kind for o in outcomes) == ["merge", "reindex", "soft-expire"]
    (reindex,) = [o for o in outcomes if o.planned.draft.kind == "reindex"]
    assert "+- [backfill](project_backfill.md) — backfill notes\n \n ## Reference" in reindex.planned.diff
    for o in outcomes:
        decide(app, o.id, "accept")
    assert {r.state for r in apply(app, [o.id for o in outcomes])} == {"applied"}
    text = (root / "MEMORY.md").read_text()
    assert _sections(text)["project_backfill.md"] == "## Project"
    assert "- [Runbook](project_runbook.md) — runbook\n- [backfill](project_backfill.md) — backfill notes\n\n## Reference" in text
