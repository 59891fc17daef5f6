"""A journal recovery found in conflict: verify says so, resolve undoes dreamd's part only."""

from __future__ import annotations

import re

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ProposalError
from daemon.db import repo
from daemon.db import schema as t
from daemon.service import recorded
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.apply.recovery import recover
from daemon.service.apply.resolving import resolve
from daemon.service.proposals import decide, get_proposal, list_proposals
from daemon.stores.files import write_atomic


def _torn_apply(app, root):
    """An apply that died after writing one file, then a person edited another it names."""
    store = adhoc_store(root, "deepcode")
    report = run_pass(app, store)
    merge = next(o for o in report.outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
        files, blobs = recorded.proposal_bytes(conn, store_id, merge.id)
        changed = {p: (b, r) for p, (b, r) in files.items() if b != r}
        steps = [{"path": p, "before": b, "after": r} for p, (b, r) in sorted(changed.items())]
        repo.put_blobs(conn, {r: blobs[r] for _, r in changed.values() if r})
        journal_id = repo.open_journal(conn, store_id, merge.id, "apply", steps, app.clock())
    written = next(p for p, (b, r) in sorted(changed.items()) if r and b is None)  # the archived copy
    edited = next(p for p in sorted(changed) if p != written and (root / p).exists())
    write_atomic(root, written, blobs[changed[written][1]])  # dreamd got this far
    (root / edited).write_bytes((root / edited).read_bytes() + b"\nA line someone added meanwhile.\n")
    return store, merge.id, journal_id, written, edited


def test_recovery_leaves_a_conflict_and_resolve_undoes_only_what_dreamd_wrote(example_store, make_app):
    app = make_app()
    store, proposal_id, journal_id, written, edited = _torn_apply(app, example_store)
    edited_bytes = (example_store / edited).read_bytes()
    assert recover(app, store) == []  # nothing overwritten: a person's edit is in the way
    problems = verify(app, store).problems
    assert any(f"journal {journal_id} (apply of proposal {proposal_id}) is conflict" in p for p in problems)

    done = resolve(app, journal_id)

    assert (done.restored, done.kept) == ([written], [edited])
    assert not (example_store / written).exists()  # the archived copy dreamd had created is gone
    assert (example_store / edited).read_bytes() == edited_bytes
    view = get_proposal(app, proposal_id)
    assert view.state == "stale" and "edited while being applied" in view.state_reason
    assert not any("journal" in p for p in verify(app, store).problems)
    with app.engine().connect() as conn:
        events = [e.type for e in conn.execute(t.events.select().where(t.events.c.proposal_id == proposal_id))]
    assert events[-3:] == ["journal.conflict", "proposal.stale", "journal.resolved"]
    with pytest.raises(ProposalError, match="is resolved, not in conflict"):
        resolve(app, journal_id)


def test_a_journal_in_conflict_holds_its_store_until_resolved(example_store, make_app):
    """While a journal is in conflict no apply or revert of its store runs, naming the journal and resolve; once resolved, they run again."""
    from daemon.core.errors import UnresolvedError
    from daemon.service.apply.applying import apply, revert

    app = make_app()
    store, proposal_id, journal_id, _, _ = _torn_apply(app, example_store)
    others = [p.id for p in list_proposals(app) if p.id != proposal_id]
    decide(app, others[0], "accept")
    held = f"store {store.name} is held: journal {journal_id} (apply of proposal {proposal_id}) did not finish"
    with pytest.raises(UnresolvedError, match=re.escape(held)) as refused:
        apply(app, [others[0]])
    assert refused.value.hint == f"dreamd resolve {journal_id} ends it; dreamd verify says what it holds"
    with pytest.raises(UnresolvedError, match=re.escape(held)):
        revert(app, others[0])
    resolve(app, journal_id)
    assert [r.state for r in apply(app, [others[0]])] == ["applied"]


def test_resolve_right_after_a_crash_needs_no_verify_first(example_store, make_app):
    """A journal a crash left writing is found in conflict by resolve itself, which then undoes only what dreamd wrote."""
    app = make_app()
    _, _, journal_id, written, edited = _torn_apply(app, example_store)
    done = resolve(app, journal_id)
    assert (done.restored, done.kept) == ([written], [edited])
    assert not (example_store / written).exists()


def test_resolve_refuses_an_unknown_or_healthy_journal(example_store, make_app):
    app = make_app()
    with pytest.raises(ProposalError, match="no journal 99"):
        resolve(app, 99)


def test_resolve_from_the_cli(example_store, make_app, cli, tmp_path):
    app = make_app()
    _, _, journal_id, written, edited = _torn_apply(app, example_store)
    db = app.db_url
    assert cli("--db", db, "verify", "--store", str(example_store), "--preset", "deepcode").code == 8
    done = cli("--db", db, "resolve", str(journal_id))
    assert done.code == 0, done.err
    assert f"restored {written}" in done.out and f"kept {edited} (edited by someone else)" in done.out


def _failing_write(monkeypatch, nth):
    """The file system refuses dreamd's ``nth`` file operation of a journal (a full disk, a
    read-only mount): the archive copy, the index, or the removal of the retired note."""
    from daemon.core.errors import StoreError
    from daemon.stores import files

    calls = []

    def failing(real):
        def operation(*args, **kwargs):
            calls.append(args[1])
            if len(calls) == nth:
                raise StoreError(f"cannot write {args[1]}: No space left on device")
            return real(*args, **kwargs)

        return operation

    monkeypatch.setattr(files, "write_atomic", failing(files.write_atomic))
    monkeypatch.setattr(files, "remove_file", failing(files.remove_file))


@pytest.mark.parametrize("nth", [1, 2, 3], ids=["archive-copy", "index", "removal"])
def test_a_write_that_fails_mid_journal_is_rolled_back_at_once(nth, example_store, make_app, clock, monkeypatch, read_tree):
    """An apply whose write fails at any point says so in one line and rolls back what it wrote at once: the store is as it was, the journal rolled back, the proposal still accepted; passes, verify and the apply itself work again."""
    from daemon.core.errors import ApplyError
    from daemon.service.apply.applying import apply

    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    before = read_tree(example_store)
    merge = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    _failing_write(monkeypatch, nth)
    with pytest.raises(ApplyError, match="failed while writing: cannot write .*No space left on device; what it wrote was rolled back") as failed:
        apply(app, [merge.id])
    assert failed.value.hint == f"free space or mend the disk, then dreamd apply {merge.id} again"
    monkeypatch.undo()
    assert read_tree(example_store) == before  # what dreamd wrote is rolled back byte for byte
    assert get_proposal(app, merge.id).state == "accepted"
    with app.engine().connect() as conn:
        assert [j.state for j in conn.execute(t.journal.select())] == ["rolled-back"]
    clock.advance(minutes=1)
    assert run_pass(app, store).status in ("completed", "skipped") and verify(app, store).clean  # never wedged
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    assert verify(app, store).clean


def test_a_crashed_journal_that_cannot_be_rolled_forward_is_rolled_back_not_retried_forever(example_store, make_app, clock):
    """Recovery of a journal whose bytes are missing from the database rolls it back (nothing of it was written): closed, verify clean, and the next pass runs instead of failing on it."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    merge = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    from daemon.core.hashing import hash_bytes

    now_hash = hash_bytes((example_store / "architecture.md").read_bytes())
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
        steps = [{"path": "architecture.md", "before": now_hash, "after": "f" * 64}]  # bytes never stored
        journal_id = repo.open_journal(conn, store_id, merge.id, "apply", steps, app.clock())
    assert recover(app, store) == []
    with app.engine().connect() as conn:
        assert repo.journal_entry(conn, store_id, journal_id).state == "rolled-back"
        assert repo.unfinished_journals(conn, store_id, ("writing", "conflict")) == []  # none left "writing", none to resolve
    clock.advance(minutes=1)
    assert run_pass(app, store).status in ("completed", "skipped")
    assert verify(app, store).clean
