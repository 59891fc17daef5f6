"""Cline: one task, one line.

A Cline memory bank names a task by its id (``tasks/_index.md`` lines, ``[TASK004]`` in
other files), so two task files with one id leave the agent to take either: the pass names
them as a finding, and whatever would retire one of them is held for a person. An index line
is a person's words: a merge keeps it (only its id changes when the task it names is folded
into another) and files it under the survivor's status; no proposal lists a task twice.
"""

from __future__ import annotations

from daemon.config import parse_config
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal

from .harness import Session
from .oracles import Cline

SEARCH = """**Status:** {status}
**Added:** 2025-01-20
**Updated:** 2025-02-18

## Original Request
Let customers search the catalogue by name, place and map scale.

## Thought Process
Postgres full text search over the product name and description, ranked with ts_rank, and a
trigram index on the name so that a misspelt town still finds its map. The search box sends a
request after a pause of three hundred milliseconds and results are cached for a minute.

## Progress Log
- Ranking tuned on the top hundred queries.
"""
LINE = "- [TASK004] Product search - the person's own note: ranking first, typos later\n"
INDEX = f"# Tasks Index\n\n## In Progress\n{LINE}\n## Pending\n\n## Completed\n- [TASK001] Setup - done\n\n## Abandoned\n"
CORE = {
    "projectbrief.md": "# Project Brief\n\nAn online shop for printed maps.\n",
    "tasks/COMPLETED/TASK001-setup.md": "# [TASK001] - Setup\n\n**Status:** Completed\n",
}


def _session(make_store, make_app, clock, notes: dict[str, str], policy: str | None = None) -> Session:  # noqa: ANN001
    root = make_store({**CORE, **notes}, name="mapshop/memory-bank")
    entry = {"name": "cline", "path": str(root), "preset": "cline"} | ({"policy": policy} if policy else {})
    config = parse_config({"stores": [entry]})
    return Session(make_app(config), config.store("cline"), clock, Cline())


def _two_files(status: str = "In Progress", linked: bool = False) -> dict[str, str]:
    """TASK004 saved twice: the file the index line resolves to, and a second one with one more line."""
    return {
        "tasks/_index.md": INDEX,
        "tasks/TASK004-product-search.md": "# [TASK004] - Product search\n\n" + SEARCH.format(status="In Progress"),
        "tasks/TASK004-search-v2.md": "# [TASK004] - Product search\n\n" + SEARCH.format(status=status) + "- Typo tolerance shipped.\n",
        # a link to the second file makes it the one the store leans on: the merge keeps it
        "activeContext.md": "# Active Context\n\nNow: [TASK004]" + (", notes in [search](tasks/TASK004-search-v2.md)" if linked else "") + ".\n",
    }


def _pass(s: Session):  # noqa: ANN202
    s.clock.advance(minutes=1)
    return run_pass(s.app, s.store)


def _take_all(s: Session, kinds: tuple[str, ...] = ()) -> None:
    """Accept and apply, in one apply, every pending proposal (of ``kinds``, when given)."""
    todo = [p for p in s.pending() if not kinds or p.kind in kinds]
    for p in todo:
        decide(s.app, p.id, "accept")
    s.clock.advance(seconds=1)
    assert [r.state for r in apply(s.app, [p.id for p in todo])] == ["applied"] * len(todo)


def _lines_of(s: Session, ident: str) -> list[tuple[str, str | None]]:
    """Every index line naming ``ident``, with the section it sits in."""
    return [(e.written, e.section) for e in s.reading().entries if e.written == ident]


def test_two_files_with_one_task_id_are_one_finding_naming_both_until_one_is_left(make_store, make_app, clock):
    """The pass names the shared id and both files as a duplicate-task-id finding (no ambiguous-reference for each [TASK004]); once their merge is applied, the next pass names none."""
    s = _session(make_store, make_app, clock, _two_files())
    report = _pass(s)
    assert [f["kind"] for f in report.findings] == ["duplicate-task-id"]
    (found,) = report.findings
    assert found["paths"] == ["tasks/TASK004-product-search.md", "tasks/TASK004-search-v2.md"]
    assert found["detail"].startswith("tasks/TASK004-product-search.md and tasks/TASK004-search-v2.md share the task id TASK004, so [TASK004] in tasks/_index.md")
    _take_all(s, ("merge",))
    assert _pass(s).findings == []


def test_a_merge_of_two_files_with_one_id_is_held_whatever_the_policy(make_store, make_app, clock):
    """Under the default policy, which accepts exact duplicates, two task files with one id and the same text stay pending, the hold naming the id; an ordinary exact copy beside them is accepted."""
    body = "# [TASK004] - Product search\n\n" + SEARCH.format(status="In Progress")
    notes = {
        "tasks/_index.md": INDEX, "tasks/TASK004-product-search.md": body, "tasks/TASK004-search-copy.md": body,
        "style.md": "# Style\n\nShort sentences, no exclamation marks.\n", "style-copy.md": "# Style\n\nShort sentences, no exclamation marks.\n",
    }  # fmt: skip
    s = _session(make_store, make_app, clock, notes, policy="default")
    report = _pass(s)
    merges = {o.planned.draft.notes: get_proposal(s.app, o.id) for o in report.outcomes if o.planned.draft.kind == "merge"}
    assert {notes: p.state for notes, p in merges.items()} == {
        ("style.md", "style-copy.md"): "accepted",
        ("tasks/TASK004-search-copy.md", "tasks/TASK004-product-search.md"): "pending",
    }
    held = merges[("tasks/TASK004-search-copy.md", "tasks/TASK004-product-search.md")]
    assert held.reads["holds"] == [
        "retires tasks/TASK004-product-search.md of the task files that share the id TASK004 (tasks/TASK004-product-search.md, "
        "tasks/TASK004-search-copy.md): whether they are one task, and which one [TASK004] meant, is for a person to say"
    ]
    assert (report.policy["accepted"], report.policy["held"]) == (1, 1) and held.decisions == []


def test_no_proposal_lists_a_task_id_a_second_time(make_store, make_app, clock):
    """The second file of TASK004 is not unlisted for the reindex: no proposal, applied alone, leaves TASK004 on two lines, and after everything is applied one line names it."""
    s = _session(make_store, make_app, clock, {**_two_files(), "tasks/TASK013-dark-mode.md": "# [TASK013] - Dark mode\n\n**Status:** Completed\n"})
    _pass(s)
    todo = s.pending()
    assert {p.kind for p in todo} == {"merge", "reindex"}
    for proposal in todo:
        decide(s.app, proposal.id, "accept")
        s.clock.advance(seconds=1)
        assert [r.state for r in apply(s.app, [proposal.id])] == ["applied"]
        assert _lines_of(s, "TASK004") == [("TASK004", "In Progress")], proposal.title
        revert(s.app, proposal.id)
    s.everything()
    assert _lines_of(s, "TASK004") == [("TASK004", "In Progress")]


def test_a_merge_into_the_other_file_keeps_the_lines_words_and_files_it_under_the_survivors_status(make_store, make_app, clock):
    """When the file the line did not resolve to survives (here Completed), the line keeps its words byte for byte, moves to ## Completed, and is the only line for TASK004."""
    s = _session(make_store, make_app, clock, _two_files(status="Completed", linked=True))
    _pass(s)
    (merge,) = [p for p in s.pending() if p.kind == "merge"]
    assert merge.title == "Merge 1 near duplicate into tasks/TASK004-search-v2.md"
    assert s.take(merge, then_revert=False).problems == []
    index = (s.root / "tasks/_index.md").read_text()
    assert index == "# Tasks Index\n\n## In Progress\n\n## Pending\n\n## Completed\n- [TASK001] Setup - done\n" + LINE + "\n## Abandoned\n"
    assert [(e.written, e.section, e.status, e.target) for e in s.reading().entries if e.written == "TASK004"] == [("TASK004", "Completed", "Completed", "tasks/TASK004-search-v2.md")]


def test_a_task_folded_into_another_id_hands_it_its_line_with_the_words(make_store, make_app, clock):
    """TASK021, listed with a person's note, merged into TASK012, which has no line: the line names TASK012 and keeps every other character, under TASK012's status."""
    body = SEARCH.format(status="Pending")
    notes = {
        "tasks/_index.md": "# Tasks Index\n\n## In Progress\n- [TASK021] Search again - the person's own note\n\n## Pending\n\n## Completed\n- [TASK001] Setup - done\n\n## Abandoned\n",
        "tasks/TASK012-product-search.md": "# [TASK012] - Product search\n\n" + body,
        "tasks/TASK021-search-again.md": "# [TASK021] - Search again\n\n" + body.replace("**Status:** Pending", "**Status:** In Progress") + "- One more line.\n",
        "activeContext.md": "# Active Context\n\nNow: [TASK012].\n",
        "progress.md": "# Progress\n\nNext: [TASK012].\n",
    }
    s = _session(make_store, make_app, clock, notes)
    _pass(s)
    (merge,) = [p for p in s.pending() if p.kind == "merge"]
    assert merge.title == "Merge 1 near duplicate into tasks/TASK012-product-search.md"
    assert s.take(merge, then_revert=False).problems == []
    index = (s.root / "tasks/_index.md").read_text()
    assert index == "# Tasks Index\n\n## In Progress\n\n## Pending\n- [TASK012] Search again - the person's own note\n\n## Completed\n- [TASK001] Setup - done\n\n## Abandoned\n"


def test_an_abandoned_task_is_filed_under_abandoned(make_store, make_app, clock):
    """A task file whose **Status:** is Abandoned (a word holding "done") is added under ## Abandoned, not ## Completed."""
    notes = {"tasks/_index.md": INDEX, "tasks/TASK013-dark-mode.md": "# [TASK013] - Dark mode\n\n**Status:** Abandoned\n"}
    s = _session(make_store, make_app, clock, notes)
    _pass(s)
    _take_all(s, ("reindex",))
    assert _lines_of(s, "TASK013") == [("TASK013", "Abandoned")]


def test_two_unlisted_files_with_one_id_are_left_unlisted(make_store, make_app, clock):
    """Neither file of an id no line names is added (a line would mean either); the reindex says so, and the finding names them."""
    notes = {
        "tasks/_index.md": INDEX,
        "tasks/TASK004-product-search.md": "# [TASK004] - Product search\n\n" + SEARCH.format(status="In Progress"),
        "tasks/TASK007-export.md": "# [TASK007] - Export\n\n**Status:** Pending\n",
        "tasks/TASK007-export-csv.md": "# [TASK007] - Export as CSV\n\n**Status:** Pending\n",
    }
    notes["tasks/_index.md"] = INDEX.replace(LINE, "")
    s = _session(make_store, make_app, clock, notes)
    report = _pass(s)
    (reindex,) = [o for o in report.outcomes if o.planned.draft.kind == "reindex"]
    assert reindex.planned.draft.index_add == ("tasks/TASK004-product-search.md",)
    assert "Not added: tasks/TASK007-export-csv.md, tasks/TASK007-export.md, which share a task id with another file" in reindex.planned.draft.rationale
    assert [f["paths"] for f in report.findings] == [["tasks/TASK007-export-csv.md", "tasks/TASK007-export.md"]]
