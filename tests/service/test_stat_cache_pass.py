"""A pass with the stat cache: it may be slower to notice a change, but apply and revert never overwrite one it missed."""

from __future__ import annotations

import os

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ConflictError
from daemon.core.hashing import hash_bytes
from daemon.db import repo
from daemon.service.apply.applying import apply, revert
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal

RETIRED = "build-commands-copy.md"
LATER_NS = 60 * 10**9


def _accepted_merge(app, store) -> int:  # noqa: ANN001
    report = run_pass(app, store)
    merge = next(o for o in report.outcomes if o.planned.draft.retire == (RETIRED,))
    decide(app, merge.id, "accept")
    return merge.id


def _rows(app) -> dict[str, tuple]:  # noqa: ANN001
    with app.engine().connect() as conn:
        return repo.stat_cache(conn, 1)


def _trust_rows(app, rows: dict[str, tuple]) -> None:  # noqa: ANN001
    """Rewrite the rows as if their scan had run a minute after every file's last change."""
    with app.engine().begin() as conn:
        repo.save_stat_cache(conn, 1, {p: (*row[:5], max(row[1], row[3]) + LATER_NS) for p, row in rows.items()})


def _vouched_edit(app, path) -> None:  # noqa: ANN001
    """Edit ``path`` keeping its size, then make its cache row vouch for the edit with the old hash."""
    _same_size_edit(path)
    info = os.stat(path)
    rows = _rows(app)
    rows[path.name] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, *rows[path.name][4:])  # the old hash
    _trust_rows(app, rows)


def _same_size_edit(path) -> None:  # noqa: ANN001
    """An edit that keeps the size, the inode and (restored) the mtime: only the ctime moves."""
    info = os.stat(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"make", b"MAKE", 1))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_pass_records_every_file_it_read_in_the_stat_cache(example_store, make_app, read_tree):
    """After a first pass the cache holds one row per file, with the hash of its bytes."""
    app = make_app()
    run_pass(app, adhoc_store(example_store, "deepcode"))
    assert {p: row[4] for p, row in _rows(app).items()} == {p: hash_bytes(b) for p, b in read_tree(example_store).items()}


def test_an_edit_with_its_mtime_restored_is_noticed_through_its_ctime(example_store, make_app, clock):
    """Size, inode and mtime as recorded, ctime not: the pass reads the note and marks the accepted proposal stale."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    pid = _accepted_merge(app, store)
    _trust_rows(app, _rows(app))
    _same_size_edit(example_store / RETIRED)
    clock.advance(minutes=5)
    report = run_pass(app, store)
    assert (report.status, report.stale, get_proposal(app, pid).state) == ("completed", [pid], "stale")


def test_a_change_the_cache_misses_is_never_overwritten_by_apply(example_store, make_app, clock, snapshot_tree):
    """A cache row that vouches for an edited note: the pass skips, and apply still finds the edit and writes nothing."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    pid = _accepted_merge(app, store)
    _vouched_edit(app, example_store / RETIRED)
    edited = snapshot_tree(example_store)
    clock.advance(minutes=5)
    assert (run_pass(app, store).status, get_proposal(app, pid).state) == ("skipped", "accepted")  # missed
    (result,) = apply(app, [pid])
    assert (result.state, result.detail) == ("stale", f"changed since proposed: {RETIRED}")
    assert snapshot_tree(example_store) == edited


def test_a_pass_that_plans_reads_every_note_despite_the_cache(example_store, make_app, clock):
    """When something else changed, a vouched-for edit is read too: planning takes no hash on the cache's word."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    pid = _accepted_merge(app, store)
    _vouched_edit(app, example_store / RETIRED)
    (example_store / "new-note.md").write_text("---\nname: new\n---\nA new note.\n")
    clock.advance(minutes=5)
    report = run_pass(app, store)
    assert (report.status, get_proposal(app, pid).state) == ("completed", "stale")


def test_a_change_the_cache_misses_is_never_overwritten_by_revert(example_store, make_app, clock, read_tree):
    """After an apply, an edited index the cache vouches for: the pass skips, and revert refuses with the edit kept."""
    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    pid = _accepted_merge(app, store)
    clock.advance(minutes=1)
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    clock.advance(minutes=1)
    run_pass(app, store)  # records the applied state, and the cache rows of the files apply wrote
    index = example_store / "MEMORY.md"
    index.write_bytes(index.read_bytes().replace(b"- ", b"* ", 1))
    info = os.stat(index)
    rows = _rows(app)
    rows["MEMORY.md"] = (info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns, *rows["MEMORY.md"][4:])
    _trust_rows(app, rows)
    edited = read_tree(example_store)
    clock.advance(minutes=5)
    assert run_pass(app, store).status == "skipped"  # missed
    with pytest.raises(ConflictError, match=r"changed since it was applied: MEMORY.md$"):
        revert(app, pid)
    assert (read_tree(example_store), get_proposal(app, pid).state) == (edited, "applied")
