"""Invariant 2: what was reviewed is what is applied; a file changed after acceptance makes apply write nothing."""

from __future__ import annotations

import os

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal


def _accepted_merge(app, example_store):
    report = run_pass(app, adhoc_store(example_store, "deepcode"))
    merge = next(o for o in report.outcomes if o.planned.draft.retire == ("build-commands-copy.md",))
    decide(app, merge.id, "accept")
    return merge.id


def test_note_edited_between_accept_and_apply_makes_proposal_stale_and_writes_nothing(example_store, make_app, clock, snapshot_tree):
    """Editing the retired note after accept: apply returns stale naming it, and every store byte stays as edited."""
    app = make_app()
    pid = _accepted_merge(app, example_store)
    with open(example_store / "build-commands-copy.md", "a") as f:
        f.write("Also: `make lint`.\n")
    edited = snapshot_tree(example_store)
    clock.advance(minutes=5)
    (result,) = apply(app, [pid])
    assert (result.state, result.detail) == ("stale", "changed since proposed: build-commands-copy.md")
    assert get_proposal(app, pid).state == "stale"
    assert snapshot_tree(example_store) == edited
    assert not (example_store / ".dreamd-archive").exists()


def test_index_edited_between_accept_and_apply_makes_proposal_stale(example_store, make_app, snapshot_tree):
    """An edit to the index the proposal would rewrite (not to a note) also makes it stale with nothing written."""
    app = make_app()
    pid = _accepted_merge(app, example_store)
    (example_store / "MEMORY.md").write_bytes((example_store / "MEMORY.md").read_bytes() + b"- [Extra](extra.md)\n")
    edited = snapshot_tree(example_store)
    (result,) = apply(app, [pid])
    assert (result.state, result.detail) == ("stale", "changed since proposed: MEMORY.md")
    assert snapshot_tree(example_store) == edited


def test_note_deleted_between_accept_and_apply_makes_proposal_stale(example_store, make_app, snapshot_tree):
    """A retired note that vanished after accept makes apply stale, creating no archive copy."""
    app = make_app()
    pid = _accepted_merge(app, example_store)
    (example_store / "build-commands-copy.md").unlink()
    edited = snapshot_tree(example_store)
    (result,) = apply(app, [pid])
    assert result.state == "stale"
    assert snapshot_tree(example_store) == edited


def test_stale_apply_is_an_event_and_cannot_be_applied_later(example_store, make_app):
    """The stale outcome is logged as proposal.stale with its reason, and the proposal can no longer be accepted."""
    import pytest

    from daemon.core.errors import ProposalError

    app = make_app()
    pid = _accepted_merge(app, example_store)
    with open(example_store / "build-commands-copy.md", "a") as f:
        f.write("edit\n")
    apply(app, [pid])
    stale = [e for e in event_log(app) if e["type"] == "proposal.stale"]
    assert [(e["proposal_id"], e["payload"]["reason"]) for e in stale] == [(pid, "changed since proposed: build-commands-copy.md")]
    with pytest.raises(ProposalError):
        decide(app, pid, "accept")


def test_note_swapped_for_symlink_after_accept_is_stale_and_outside_file_untouched(example_store, tmp_path, make_app):
    """Replacing an accepted proposal's note with a symlink to an outside file (same bytes) makes apply stale; the outside file is not written."""
    app = make_app()
    pid = _accepted_merge(app, example_store)
    outside = tmp_path / "outside.md"
    target = example_store / "build-commands-copy.md"
    original = target.read_bytes()
    outside.write_bytes(original)
    mtime = outside.stat().st_mtime_ns
    target.unlink()
    os.symlink(outside, target)
    (result,) = apply(app, [pid])
    assert result.state == "stale"
    assert target.is_symlink()
    assert outside.read_bytes() == original
    assert outside.stat().st_mtime_ns == mtime


def test_an_edit_landing_after_the_check_but_before_the_write_is_never_overwritten(example_store, make_app, monkeypatch):
    """The race compare-and-swap must also win: the index is edited after apply checked it
    (when the journal opens). The write stops with a conflict, the edit survives, and the
    journal waits for verify and resolve."""
    import pytest

    from daemon.core.errors import ConflictError
    from daemon.db import repo
    from daemon.service.review.audit import verify
    from daemon.service.apply.resolving import resolve

    app = make_app()
    pid = _accepted_merge(app, example_store)
    opened = repo.open_journal

    def open_then_someone_edits(*args, **kwargs):
        journal_id = opened(*args, **kwargs)
        with open(example_store / "MEMORY.md", "a") as f:
            f.write("- [Late](late.md) added by a person\n")
        return journal_id

    monkeypatch.setattr(repo, "open_journal", open_then_someone_edits)
    with pytest.raises(ConflictError, match="MEMORY.md changed while dreamd was writing"):
        apply(app, [pid])
    assert (example_store / "MEMORY.md").read_text().endswith("- [Late](late.md) added by a person\n")
    assert (example_store / "build-commands-copy.md").exists()  # nothing of the proposal was written
    problems = verify(app, adhoc_store(example_store, "deepcode")).problems
    journal_id = int(next(p for p in problems if p.startswith("journal ")).split()[1])
    monkeypatch.undo()
    done = resolve(app, journal_id)
    assert done.kept == ["MEMORY.md"] and get_proposal(app, pid).state == "stale"
