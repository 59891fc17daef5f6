"""Invariant 7 and tombstoned values: a rejected change is suppressed later; a retired value coming back is flagged."""

from __future__ import annotations

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal, list_proposals

SUPERSEDE_RETIRES = ("release-plan-v1.md",)


def _by_retire(report, retire):
    return next(o for o in report.outcomes if o.planned.draft.retire == retire)


def _tombstone_rows(app):
    from daemon.db import schema as t

    with app.engine().connect() as conn:
        return [(r.key_kind, r.key, r.lifted, r.reason) for r in conn.execute(t.tombstones.select().order_by(t.tombstones.c.id))]


def test_rejected_proposal_comes_back_suppressed_after_an_unrelated_change(example_store, make_app, clock):
    """After rejecting the supersede and editing an unrelated note, a later pass records the same change as suppressed, not pending."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first = _by_retire(run_pass(app, store), SUPERSEDE_RETIRES)
    decide(app, first.id, "reject", "v1 is still the plan of record")
    with open(example_store / "architecture.md", "a") as f:
        f.write("The gateway terminates TLS.\n")
    clock.advance(days=2)
    second = run_pass(app, store)
    assert second.status == "completed"
    again = _by_retire(second, SUPERSEDE_RETIRES)
    assert (again.state, again.note) == ("suppressed", "the same change was rejected before")
    stored = get_proposal(app, again.id)
    assert (stored.state, stored.kind) == ("suppressed", "supersede")
    assert again.planned.key == first.planned.key
    assert [p.id for p in list_proposals(app, states=["pending"]) if p.kind == "supersede"] == []


def test_unrelated_index_edit_does_not_resurrect_a_rejected_merge(example_store, make_app, clock):
    """A rejected merge stays suppressed when only an unrelated line of MEMORY.md changed (the key leaves the index out)."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first = _by_retire(run_pass(app, store), ("build-commands-copy.md",))
    decide(app, first.id, "reject", "both are fine")
    with open(example_store / "MEMORY.md", "a") as f:
        f.write("- [Architecture](architecture.md) — the three services\n")
    clock.advance(days=1)
    again = _by_retire(run_pass(app, store), ("build-commands-copy.md",))
    assert again.state == "suppressed"
    assert again.planned.change.base["MEMORY.md"] != first.planned.change.base["MEMORY.md"]


def test_changed_note_makes_a_rejected_change_new_again(example_store, make_app, clock):
    """Editing a note the rejected proposal retires yields a different change, proposed as pending."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first = _by_retire(run_pass(app, store), SUPERSEDE_RETIRES)
    decide(app, first.id, "reject", "not yet")
    path = example_store / "release-plan-v1.md"
    path.write_bytes(path.read_bytes() + b"Dropped in April.\n")
    clock.advance(days=1)
    again = _by_retire(run_pass(app, store), SUPERSEDE_RETIRES)
    assert again.state == "pending"
    assert again.planned.key != first.planned.key


def test_retired_value_written_back_is_proposed_for_soft_expiry(example_store, make_app, clock):
    """After applying the near-duplicate merge, a new note with the retired note's text is proposed for expiry naming that note."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    merge = _by_retire(run_pass(app, store), ("test-setup-notes.md",))
    decide(app, merge.id, "accept")
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    retired_body = (example_store / ".dreamd-archive" / "test-setup-notes.md").read_text().split("---\n", 2)[2]
    (example_store / "testing-notes-again.md").write_text(retired_body)
    clock.advance(days=1)
    report = run_pass(app, store)
    flagged = [o for o in report.outcomes if o.planned.draft.source == "detector:tombstoned-value@1"]
    assert [(o.state, o.planned.draft.kind, o.planned.draft.retire) for o in flagged] == [("pending", "soft-expire", ("testing-notes-again.md",))]
    assert flagged[0].planned.draft.reason == "same content as test-setup-notes.md, retired earlier"


def test_exact_merge_survivor_is_not_flagged_as_a_tombstoned_value(example_store, make_app, clock):
    """The survivor of an applied exact-duplicate merge holds the retired text but is not proposed for expiry."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    merge = _by_retire(run_pass(app, store), ("build-commands-copy.md",))
    decide(app, merge.id, "accept")
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    clock.advance(days=1)
    report = run_pass(app, store)
    assert [o.planned.draft.retire for o in report.outcomes if o.planned.draft.source == "detector:tombstoned-value@1"] == []
    assert all("build-commands.md" not in o.planned.draft.retire for o in report.outcomes)


def test_reverting_a_merge_lifts_its_value_tombstone(example_store, make_app, clock):
    """After the near-duplicate merge is reverted, the same text in a new note is no longer flagged
    as a retired value; the revert appended a lift of the value, the apply's row stays."""
    from daemon.service.apply.applying import revert

    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    merge = _by_retire(run_pass(app, store), ("test-setup-notes.md",))
    decide(app, merge.id, "accept")
    apply(app, [merge.id])
    (retired,) = _tombstone_rows(app)
    assert (retired[0], retired[2]) == ("value", False)
    clock.advance(minutes=1)
    revert(app, merge.id)
    assert _tombstone_rows(app) == [retired, ("value", retired[1], True, "reverted")]
    (example_store / "testing-notes-again.md").write_bytes((example_store / "test-setup-notes.md").read_bytes())
    clock.advance(days=1)
    report = run_pass(app, store)
    assert [o for o in report.outcomes if o.planned.draft.source == "detector:tombstoned-value@1"] == []


def test_index_lists_a_note_whose_merge_was_rejected(make_store, make_app, clock):
    """Once a merge is rejected, the next pass's reindex adds the note it had planned to merge away."""
    body = "Deploys go through the staging cluster first and wait for the smoke tests.\n"
    root = make_store({"MEMORY.md": "# M\n- [A](a.md)\n", "a.md": body, "b.md": body.upper()})
    store = adhoc_store(root, "deepcode")
    app = make_app()
    first = run_pass(app, store)
    assert [o.planned.draft.kind for o in first.outcomes] == ["merge"]
    decide(app, first.outcomes[0].id, "reject", "keep both")
    (root / "c.md").write_text("Unrelated fact about the build.\n")
    clock.advance(days=1)
    second = run_pass(app, store)
    reindex = next(o for o in second.outcomes if o.planned.draft.kind == "reindex")
    assert reindex.planned.draft.index_add == ("b.md", "c.md")


def _mtime(path, seconds: int) -> None:
    import os

    os.utime(path, (seconds, seconds))


def test_a_rejected_expiry_counted_from_a_file_time_stays_rejected_after_a_checkout(make_store, make_app, clock):
    """An expiry whose TTL counts from the file's mtime, rejected, is suppressed after the mtime moves (a checkout), though its reason names another date."""
    root = make_store({"status.md": "---\nttl_days: 14\n---\nThe release is frozen.\n"})
    _mtime(root / "status.md", 1_700_000_000)
    store = adhoc_store(root, "generic")
    app = make_app()
    (expiry,) = [o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "soft-expire"]
    decide(app, expiry.id, "reject", "still frozen")
    _mtime(root / "status.md", 1_710_000_000)  # another date, still past the TTL
    (root / "other.md").write_text("Something else changed, so the pass runs.\n")
    clock.advance(days=1)
    (again,) = [o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "soft-expire"]
    assert again.planned.draft.reason != expiry.planned.draft.reason  # the date it names moved
    assert again.state == "suppressed"


def test_a_rejected_merge_does_not_come_back_reversed_when_file_times_flip(make_store, make_app, clock):
    """Two copies whose survivor a file time decided: rejected, then their mtimes swapped, the reversed merge is suppressed."""
    body = "The staging database is rebuilt every night.\n"
    root = make_store({"a-note.md": body, "b-note.md": body})
    _mtime(root / "a-note.md", 1_700_000_000)
    _mtime(root / "b-note.md", 1_700_100_000)
    store = adhoc_store(root, "generic")
    app = make_app()
    (merge,) = [o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge"]
    assert merge.planned.draft.survivor == "b-note.md"
    decide(app, merge.id, "reject", "both are needed")
    _mtime(root / "a-note.md", 1_700_100_000)
    _mtime(root / "b-note.md", 1_700_000_000)
    (root / "other.md").write_text("Something else changed, so the pass runs.\n")
    clock.advance(days=1)
    (again,) = [o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge"]
    assert again.planned.draft.survivor == "a-note.md"  # reversed
    assert again.state == "suppressed"


def test_a_rejection_taken_back_and_given_again_keeps_every_tombstone_row(example_store, make_app, clock):
    """Rejecting, unrejecting and rejecting again appends a tombstone, a lift and a tombstone (none
    is deleted), and the change is suppressed again after the second rejection."""
    from daemon.service.proposals import unreject

    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    first = _by_retire(run_pass(app, store), SUPERSEDE_RETIRES)
    key = first.planned.key
    decide(app, first.id, "reject", "v1 is still the plan of record")
    unreject(app, first.id, "rejected by mistake")
    decide(app, first.id, "reject", "v1 really is the plan of record")
    assert _tombstone_rows(app) == [
        ("change", key, False, "v1 is still the plan of record"),
        ("change", key, True, "rejected by mistake"),
        ("change", key, False, "v1 really is the plan of record"),
    ]
    with open(example_store / "architecture.md", "a") as f:
        f.write("The gateway terminates TLS.\n")
    clock.advance(days=2)
    again = _by_retire(run_pass(app, store), SUPERSEDE_RETIRES)
    assert again.state == "suppressed"
