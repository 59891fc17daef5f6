"""Invariant 4: nothing is lost; every applied proposal reverts to the exact earlier bytes."""

from __future__ import annotations

import pytest

from daemon.config import adhoc_store, parse_config
from daemon.core.errors import ConflictError
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal


def _accept_apply(app, pid, clock):
    decide(app, pid, "accept")
    clock.advance(minutes=1)
    (result,) = apply(app, [pid])
    assert result.state == "applied"


@pytest.mark.parametrize("retire", [("build-commands-copy.md",), ("test-setup-notes.md",), ("release-plan-v1.md",)], ids=["exact-merge", "near-merge", "supersede"])
def test_revert_restores_every_store_byte_and_removes_archive_copies(example_store, make_app, clock, read_tree, retire):
    """After apply then revert, every file of the store has its exact earlier bytes and the archive folder holds no file."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    before = read_tree(example_store)
    outcome = next(o for o in run_pass(app, store).outcomes if o.planned.draft.retire == retire)
    _accept_apply(app, outcome.id, clock)
    assert read_tree(example_store) != before
    assert sorted((example_store / ".dreamd-archive").iterdir()) != []
    clock.advance(minutes=1)
    assert revert(app, outcome.id).state == "reverted"
    assert read_tree(example_store) == before
    assert get_proposal(app, outcome.id).state == "reverted"


def test_revert_in_place_retirement_restores_crlf_and_unterminated_notes(make_store, make_app, clock, read_tree):
    """In in-place mode, reverting the expiry of a CRLF note and a note without a final newline restores their bytes."""
    root = make_store({
        "crlf.md": "---\r\nname: Windows\r\nexpires: 2025-01-01\r\n---\r\nLine one.\r\nLine two.\r\n",
        "bare.md": "---\nexpires: 2025-01-01\n---\nno newline at the end",
    })
    app = make_app()
    before = read_tree(root)
    report = run_pass(app, adhoc_store(root, "generic"))
    ids = [o.id for o in report.outcomes if o.state == "pending"]
    assert len(ids) == 2
    for pid in ids:
        _accept_apply(app, pid, clock)
    assert b"status: expired\r\n" in (root / "crlf.md").read_bytes()
    for pid in reversed(ids):
        revert(app, pid)
    assert read_tree(root) == before


def test_revert_refuses_and_writes_nothing_when_a_file_changed_since_apply(example_store, make_app, clock, read_tree):
    """Editing the survivor's index after apply makes revert raise ConflictError naming it, with no byte written."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    outcome = next(o for o in run_pass(app, store).outcomes if o.planned.draft.retire == ("release-plan-v1.md",))
    _accept_apply(app, outcome.id, clock)
    with open(example_store / "MEMORY.md", "a") as f:
        f.write("- [Later](later.md)\n")
    edited = read_tree(example_store)
    with pytest.raises(ConflictError, match=r"cannot be reverted: changed since it was applied: MEMORY.md$"):
        revert(app, outcome.id)
    assert read_tree(example_store) == edited
    assert get_proposal(app, outcome.id).state == "applied"


def test_applying_a_chain_of_proposals_and_reverting_it_restores_the_store(example_store, make_app, clock, read_tree):
    """Applying proposals from three successive passes and reverting them newest first gives back the original bytes."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    before = read_tree(example_store)
    applied = []
    for _ in range(3):
        clock.advance(minutes=1)
        still_open = [o.id for o in run_pass(app, store).outcomes if o.state in ("pending", "duplicate")]
        _accept_apply(app, still_open[0], clock)
        applied.append(still_open[0])
    for pid in reversed(applied):
        clock.advance(minutes=1)
        revert(app, pid)
    assert read_tree(example_store) == before


def test_in_place_store_setting_marks_without_moving_and_reverts(make_store, make_app, clock, read_tree):
    """A generic store with an index, retiring in place, marks the retired note where it is, and revert unmarks it."""
    root = make_store({
        "MEMORY.md": "# M\n\n- [A](a.md)\n- [B](b.md)\n",
        "a.md": "---\nname: A\n---\nSame fact.\n",
        "b.md": "---\nname: B\n---\nsame  fact.\n",
    })
    config = parse_config({"stores": [{"name": "s", "path": str(root), "preset": "generic", "settings": {"retire_mode": "in-place", "index_path": "MEMORY.md"}}]})
    app = make_app(config)
    before = read_tree(root)
    (merge,) = [o for o in run_pass(app, config.stores["s"]).outcomes if o.planned.draft.kind == "merge"]
    _accept_apply(app, merge.id, clock)
    assert sorted(read_tree(root)) == ["MEMORY.md", "a.md", "b.md"]
    assert (root / "b.md").read_text().startswith("---\nname: B\nstatus: superseded\nsuperseded_by: a.md\nvalid_to: ")
    revert(app, merge.id)
    assert read_tree(root) == before
