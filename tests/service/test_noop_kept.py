"""The no-op lane's connection kept across the skips of one App (a daemon worker serves many
passes): reused while the database file is the one it opened and at this code's schema,
never written through once the file was deleted or replaced, and closed with the App."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from daemon.config import StoreConfig, adhoc_store
from daemon.db import quick
from daemon.service.passes import noop
from daemon.service.passes.run import run_pass

from .test_noop_lane import STORE, _counts, _passed, _raw, _twin


@pytest.fixture
def store(make_store) -> StoreConfig:  # noqa: ANN001
    return adhoc_store(make_store(STORE), "deepcode")


@pytest.fixture
def opened(monkeypatch) -> list[str]:  # noqa: ANN001
    """The paths the lane opened a connection to, in order."""
    seen: list[str] = []
    real = quick._connected

    def counted(path: str):  # noqa: ANN202
        seen.append(path)
        return real(path)

    monkeypatch.setattr(quick, "_connected", counted)
    return seen


def _skip(app, store: StoreConfig, clock):  # noqa: ANN001, ANN202
    clock.advance(hours=1)
    return noop.skip_if_unchanged(app, store)


def test_one_app_skips_again_and_again_on_one_connection(store, make_app, db_path, clock, opened):
    """Three skips of one App open the database once; each is recorded."""
    app = make_app()
    _passed(app, store, db_path)
    before = _counts(db_path)
    reports = [_skip(app, store, clock) for _ in range(3)]
    assert [r.status for r in reports] == ["skipped"] * 3
    assert opened == [str(db_path)]
    assert _counts(db_path) == (before[0] + 3, before[1] + 3)


def test_a_replaced_database_is_opened_anew_and_the_old_file_is_never_written(store, make_app, db_path, tmp_path, clock, opened):
    """The database moved aside and a copy put at its path (another inode) between two skips:
    the second skip is recorded in the copy, and the moved file, which the kept connection
    had open, gets nothing."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    moved = tmp_path / "moved.db"
    copy = tmp_path / "copy.db"
    _twin(db_path, copy)
    for suffix in ("", "-wal", "-shm"):  # the database with its WAL, as a whole, moved aside
        if Path(f"{db_path}{suffix}").exists():
            Path(f"{db_path}{suffix}").rename(f"{moved}{suffix}")
    copy.rename(db_path)
    kept_before = _raw(moved, "SELECT count(*) FROM passes")
    report = _skip(app, store, clock)
    assert report.status == "skipped"
    assert opened == [str(db_path), str(db_path)]
    assert _raw(moved, "SELECT count(*) FROM passes") == kept_before
    assert _raw(db_path, "SELECT max(id), status FROM passes") == [(report.pass_id, "skipped")]


def test_a_deleted_database_is_not_written_through_the_kept_connection(store, make_app, db_path, clock):
    """The database deleted between two skips: the lane steps aside (the whole pass decides
    what a missing database means) rather than record a skip in the unlinked file."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    assert _skip(app, store, clock) is None
    assert not db_path.exists()


def test_a_schema_changed_under_the_kept_connection_makes_the_lane_step_aside(store, make_app, db_path, clock):
    """Another revision recorded since the connection was opened: no skip through it."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0008_manifest_deltas'")
    before = _counts(db_path)
    assert _skip(app, store, clock) is None
    assert _counts(db_path) == before


def test_a_connection_left_in_a_transaction_is_not_used_again(store, make_app, db_path, clock, opened):
    """Should a skip ever end inside a transaction, the next one opens a fresh connection."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    conn = app.lane().connection(app.db_url)
    conn.execute("BEGIN")
    assert _skip(app, store, clock).status == "skipped"
    assert len(opened) == 2


def test_closing_the_app_closes_the_kept_connection(store, make_app, db_path, clock):
    """App.close closes it: using it afterwards is an error, and the next skip opens another."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    conn = app.lane().connection(app.db_url)
    app.close()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")
    assert _skip(app, store, clock).status == "skipped"


def test_a_whole_pass_between_two_skips_is_seen_by_the_kept_connection(store, make_app, db_path, clock):
    """A note edited and passed over between two skips (the whole pass writes through its own
    engine): the kept connection reads that pass, and the lane skips on its root hash."""
    app = make_app()
    _passed(app, store, db_path)
    assert _skip(app, store, clock).status == "skipped"
    (store.root / "ports.md").write_text("---\nname: Ports\n---\nThe API listens on 9090.\n")
    clock.advance(hours=1)
    passed = run_pass(app, store)
    assert passed.status == "completed"
    _passed_rows = _raw(db_path, "SELECT count(*) FROM passes WHERE status = 'completed'")
    report = _skip(app, store, clock)
    assert report is None or report.root_hash == passed.root_hash  # a racy-clean edit may leave it to the whole pass
    assert _raw(db_path, "SELECT count(*) FROM passes WHERE status = 'completed'") == _passed_rows
