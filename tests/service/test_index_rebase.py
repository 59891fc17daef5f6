"""Proposals of one pass all edit the index; applying one must not strand the others.

When the index is the only file that differs and it holds exactly what a dreamd apply
wrote, apply re-applies the proposal's reviewed index hunks with git. Any other change to
the index (a person, an agent) still makes the proposal stale.
"""

from __future__ import annotations

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
