"""Interoperability with DeepCode, whose memory tool lists every top-level file as a memory.

After dreamd applies changes, the store must still be flat (only the archive subfolder),
its MEMORY.md must list exactly the live notes, and dreamd must leave no file of its own
(locks, journals, temp files, databases) at the top level.
"""

from __future__ import annotations

from daemon.config import adhoc_store
from daemon.core.index import IndexSpec, entries
from daemon.core.notes import Note
from daemon.service.apply.applying import apply
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide


def _live_notes(root) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_file() and p.name != "MEMORY.md" and Note(p.name, p.read_bytes(), "").live}


def _listed(root) -> set[str]:
    text = (root / "MEMORY.md").read_text()
    return {e.path for e in entries(IndexSpec("MEMORY.md", "links"), text, [])}


def _apply_kind(app, store, clock, kind, retire=None):
    clock.advance(minutes=1)
    report = run_pass(app, store)
    # "duplicate": still open from an earlier pass (an index only dreamd changed keeps it valid)
    (outcome,) = [o for o in report.outcomes if o.state in ("pending", "duplicate") and o.planned.draft.kind == kind and (retire is None or o.planned.draft.retire == retire)]
    decide(app, outcome.id, "accept")
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [outcome.id])] == ["applied"]


FLAT = {
    "MEMORY.md": "# Memory\n\n- [Ports](ports.md) — where things listen\n- [Ports again](ports-2.md) — a re-saved copy\n- [Gone](gone.md) — deleted by hand\n",
    "ports.md": "---\nname: Ports\ndescription: where things listen\n---\nThe API listens on 8080, the admin UI on 8081.\n",
    "ports-2.md": "---\nname: Ports again\n---\nthe API listens on 8080,  the admin UI on 8081.\n",
    "queue.md": "---\nname: Queue\ndescription: the job queue\n---\nJobs go through the `jobs` queue.\n",
}


def test_after_a_merge_and_a_reindex_the_deepcode_store_is_flat_and_indexed(make_store, make_app, clock):
    """An applied merge then the reindex of a second pass leave only notes at the top level, one archive folder, and MEMORY.md listing exactly the live notes."""
    root = make_store(FLAT)
    store = adhoc_store(root, "deepcode")
    app = make_app()
    _apply_kind(app, store, clock, "merge", ("ports-2.md",))
    assert sorted(p.name for p in root.iterdir()) == [".dreamd-archive", "MEMORY.md", "ports.md", "queue.md"]
    _apply_kind(app, store, clock, "reindex")
    assert [p.name for p in root.iterdir() if p.is_dir()] == [".dreamd-archive"]
    assert [p.name for p in (root / ".dreamd-archive").iterdir()] == ["ports-2.md"]
    assert sorted(p.name for p in root.iterdir() if p.is_file()) == ["MEMORY.md", "ports.md", "queue.md"]
    assert _listed(root) == _live_notes(root) == {"ports.md", "queue.md"}
    assert verify(app, store).clean
    clock.advance(minutes=1)
    assert [o.state for o in run_pass(app, store).outcomes] == []


def test_applying_everything_keeps_index_equal_to_live_notes(example_store, make_app, clock):
    """Applying every proposal pass after pass (merges, supersede, expiry, reindex) ends with MEMORY.md listing exactly the live notes."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    clock.advance(days=400)  # sprint-status.md is past its TTL
    for _ in range(8):
        clock.advance(minutes=1)
        pending = [o.id for o in run_pass(app, store).outcomes if o.state == "pending"]
        if not pending:
            break
        for pid in pending:
            decide(app, pid, "accept")
        apply(app, pending)
    else:
        raise AssertionError("passes kept proposing")
    assert _listed(example_store) == _live_notes(example_store) == {
        "architecture.md", "build-commands.md", "coding-conventions.md", "release-plan-v2.md", "testing-setup.md",
    }  # fmt: skip
    assert sorted(p.name for p in (example_store / ".dreamd-archive").iterdir()) == [
        "build-commands-copy.md", "release-plan-v1.md", "sprint-status.md", "style-rules.md", "test-setup-notes.md",
    ]  # fmt: skip
    assert [p.name for p in example_store.iterdir() if p.is_dir()] == [".dreamd-archive"]
