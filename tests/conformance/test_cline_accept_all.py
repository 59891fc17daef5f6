"""Cline: everything one pass proposes, accepted together and applied in one apply, reads right
and converges.

The bank (``cline_bank.busy_bank``) makes one pass propose merges, a supersede, an expiry and
a reindex at once, over shared referrers, status sections and a task id two files share. The
agent's reading rule (``oracles.Cline``) judges the store before and after. Every proposal
applies in that one apply (the index's and the referrers' small edits rebase onto each other,
daemon/core/rebase.py), and the next pass proposes nothing: nothing undone, nothing repeated.
"""

from __future__ import annotations

import posixpath

import pytest

from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

from .cline_bank import INDEX, busy_bank
from .harness import Session, config_of, judge
from .oracles import Cline


@pytest.fixture
def bank(make_store, make_app, clock) -> Session:  # noqa: ANN001
    folder = busy_bank()
    root = make_store(folder.notes, name=folder.notes_at)
    make_store(folder.around, name=posixpath.dirname(folder.notes_at))
    config = config_of("cline", root, "cline")
    return Session(make_app(config), config.store("cline"), clock, Cline())


def _accept_all(s: Session) -> dict[tuple[str, tuple[str, ...]], str]:
    """One pass, every proposal accepted and applied in one apply: (kind, files) -> its state."""
    s.run_pass()
    todo = s.pending()
    for proposal in todo:
        decide(s.app, proposal.id, "accept")
    s.clock.advance(seconds=1)
    results = apply(s.app, [p.id for p in todo])
    return {(p.kind, tuple(sorted(p.base))): r.state for p, r in zip(todo, results, strict=True)}


def test_applying_a_whole_pass_at_once_keeps_what_cline_reads(bank: Session):
    """Applied together, a pass's merges, supersede, expiry and reindex leave no retired file listed, every line resolving to a live task under its status, no new dangling or self link, and nothing outside the bank changed."""
    before = bank.reading()
    states = _accept_all(bank)
    assert {kind for kind, _ in states} == {"merge", "supersede", "soft-expire", "reindex"} and len(states) >= 6
    assert set(states.values()) == {"applied"}, states
    problems, _ = judge(bank.oracle, before, bank.reading(), kind="merge", allowed_unresolved=frozenset())
    assert problems + bank.outside_problems() == []


def test_after_one_accept_all_the_next_pass_proposes_nothing(bank: Session):
    """Nothing went stale in the first apply, so the pass after it has nothing to bring back, undo or repeat."""
    first = _accept_all(bank)
    assert set(first.values()) == {"applied"}
    bank.run_pass()
    assert bank.pending() == []


def test_after_everything_each_task_is_one_line_under_its_status_with_its_words(bank: Session):
    """Every task the index listed is on one line, in the section its file's status names, its words as the person wrote them; the two new lines sit under Completed and Abandoned."""
    bank.everything()
    entries = bank.reading().entries
    assert sorted(e.written for e in entries) == ["TASK001", "TASK003", "TASK004", "TASK006", "TASK009", "TASK011", "TASK012", "TASK013"]  # TASK011 once
    assert all(Cline.section_matches(e) and e.resolves for e in entries)
    index = (bank.root / "tasks/_index.md").read_text()
    assert all(line in index for line in INDEX.splitlines() if line.startswith("- ["))
    assert {(e.written, e.section) for e in entries if e.written in ("TASK012", "TASK013")} == {("TASK012", "Completed"), ("TASK013", "Abandoned")}


def test_after_everything_the_task_saved_twice_is_one_file_and_the_other_id_still_a_finding(bank: Session):
    """Accepting the held merge of the two TASK004 files leaves one file with that id, cited by [TASK004] from both notes; a pass still names TASK011, two tasks only a person can renumber."""
    bank.everything()
    assert sorted(p for p in bank.reading().live if "TASK004" in p) == ["tasks/TASK004-search-ranking.md"]
    refs = [r for r in bank.reading().refs if r.written == "TASK004" and not r.source.startswith("tasks/")]  # not its own heading
    assert sorted(r.source for r in refs) == ["activeContext.md", "progress.md"] and all(r.resolves for r in refs)
    looked = run_pass(bank.app, bank.store, dry_run=True)  # a pass that reads the store (an unchanged one is skipped)
    assert [f["paths"] for f in looked.findings] == [["tasks/TASK011-newsletter-signup.md", "tasks/TASK011-price-alerts.md"]]
