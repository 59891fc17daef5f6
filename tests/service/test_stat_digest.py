"""The stat digest: once the no-op lane has vouched for a store row by row, it keeps one digest
of the paths and stats it compared, and next time compares the store's stats with that digest
alone. It must answer exactly what the row-by-row path and a whole scan answer, read no stat
row when it stands, and stand for nothing that changed."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from daemon.config import StoreConfig, adhoc_store
from daemon.db import quick
from daemon.service.passes import noop
from daemon.service.passes.run import run_pass
from daemon.stores import files, scan
from daemon.stores.paths import open_roots
from daemon.stores.scan import Glimpse, Skipped, StatWalk, scan_store

STORE: dict[str, str | bytes] = {
    "MEMORY.md": "# M\n\n- [Ports](ports.md) — ports\n- [Build](build.md) — build\n",
    "ports.md": "---\nname: Ports\n---\nThe API listens on 8080.\n",
    "build.md": "---\nname: Build\n---\nRun make before pushing.\n",
    "deep/layout.md": "---\nname: Layout\n---\nSources live in src/.\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
    "latin.md": "caf\xe9 au lait\n".encode("latin-1"),
}
LATER_NS = 60 * 10**9


def _settle(db_path: Path) -> None:
    """Every stat-cache row trusted, as if its scan ran a minute after each file's last change."""
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns) + ?", (LATER_NS,))


def _digests(db_path: Path) -> list[tuple]:
    with sqlite3.connect(db_path) as conn:
        return conn.execute("SELECT store_id, digest, root_hash, skips FROM stat_digests").fetchall()


def _counts(db_path: Path) -> tuple[int, int]:
    with sqlite3.connect(db_path) as conn:
        return conn.execute("SELECT (SELECT count(*) FROM passes), (SELECT count(*) FROM events)").fetchone()


@pytest.fixture
def preset() -> str:
    return "generic"  # every folder listed, the archive inside the store


@pytest.fixture
def store(make_store, preset) -> StoreConfig:  # noqa: ANN001
    root = make_store(STORE)
    (root / "elsewhere.md").symlink_to(root / "ports.md")
    archive = open_roots(root, adhoc_store(root, preset).settings.archive_root).archive
    archive.mkdir(parents=True, exist_ok=True)
    (archive / "old.md").write_text("---\nname: Old\n---\nRetired.\n")
    return adhoc_store(root, preset)


@pytest.fixture
def settled(store, make_app, db_path, clock) -> StoreConfig:  # noqa: ANN001
    """A store after a whole pass, its rows trusted, an hour later."""
    assert run_pass(make_app(), store).status == "completed"
    _settle(db_path)
    clock.advance(hours=1)
    return store


@pytest.fixture
def not_racy(monkeypatch) -> None:
    """Files this test wrote a moment ago count as changed clearly before the walk (the lane
    otherwise keeps no digest of a skipped file changed within two seconds of it)."""
    monkeypatch.setattr(noop, "RACY_NS", 0)


def _answer(report) -> tuple:  # noqa: ANN001
    return report.status, report.root_hash, report.notes, [(s.path, s.reason) for s in report.skipped_files]


@pytest.mark.parametrize("preset", ["generic", "deepcode", "claude-code"])  # recursive or flat, the archive inside or beside
def test_the_digest_answers_what_the_rows_and_a_whole_scan_answer(settled, make_app, db_path, clock, monkeypatch, not_racy):
    """First skip: row by row, and the digest is kept. Second: the digest alone, no stat row
    read. Both report the root hash, notes and skipped files (a binary file, one not UTF-8, a
    symlink) that a whole scan of the store finds."""
    by_rows = noop.skip_if_unchanged(make_app(), settled)
    assert by_rows is not None and len(_digests(db_path)) == 1

    def no_rows(*_: object) -> None:
        raise AssertionError("the stat cache's rows were read")

    monkeypatch.setattr(quick, "stat_rows", no_rows)
    clock.advance(hours=1)
    by_digest = noop.skip_if_unchanged(make_app(), settled)
    scanned = scan_store(open_roots(settled.root, settled.settings.archive_root), settled.settings)
    whole = ("skipped", scanned.root_hash, len(settled.settings.notes_among(scanned.files)), [(s.path, s.reason) for s in scanned.skipped])
    assert _answer(by_rows) == _answer(by_digest) == whole
    assert {"logo.png", "latin.md", "elsewhere.md"} <= {path for _, _, _, skipped in [whole] for path, _ in skipped}
    assert scanned.archived  # the archive is in both


def _edit_keeping_mtime(root: Path) -> None:
    """Same size, other bytes, the old mtime put back: only the ctime tells."""
    path = root / "ports.md"
    before = path.stat()
    path.write_text(path.read_text().replace("8080", "8081"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _binary_turned_text(root: Path) -> None:
    (root / "logo.png").write_text("---\nname: Logo\n---\nNow a note.\n")


CHANGES = {
    "an edited note": lambda root: (root / "ports.md").write_text("---\nname: Ports\n---\nThe API listens on 9090.\n"),
    "an edit with its mtime put back": _edit_keeping_mtime,
    "a new note": lambda root: (root / "new.md").write_text("---\nname: New\n---\nWritten since.\n"),
    "a note gone": lambda root: (root / "build.md").unlink(),
    "a note in a subfolder edited": lambda root: (root / "deep" / "layout.md").write_text("---\nname: Layout\n---\nSources moved.\n"),
    "a binary file turned text": _binary_turned_text,
    "an archived note edited": lambda root: (root / ".dreamd-archive" / "old.md").write_text("changed\n"),
    "a note renamed": lambda root: (root / "build.md").rename(root / "make.md"),
}


@pytest.mark.parametrize("what", CHANGES)
def test_after_the_digest_is_kept_a_change_makes_the_lane_step_aside(what, settled, make_app, db_path, clock, not_racy):
    """With the digest kept, any change to a file the store holds (even one whose mtime was put
    back) leaves the lane to the whole pass, having written nothing."""
    assert noop.skip_if_unchanged(make_app(), settled) is not None and _digests(db_path)
    CHANGES[what](settled.root)
    clock.advance(hours=1)
    before = _counts(db_path), _digests(db_path)
    assert noop.skip_if_unchanged(make_app(), settled) is None
    assert (_counts(db_path), _digests(db_path)) == before


def test_a_change_of_the_stat_cache_drops_the_digest(settled, make_app, db_path, clock, not_racy):
    """A whole pass that rewrote the stat cache (a note edited, then read) drops the store's
    digest; the next skip vouches row by row again and keeps a new one."""
    assert noop.skip_if_unchanged(make_app(), settled) is not None
    kept = _digests(db_path)
    CHANGES["an edited note"](settled.root)
    clock.advance(hours=1)
    assert run_pass(make_app(), settled).status == "completed"
    assert _digests(db_path) == []
    _settle(db_path)
    clock.advance(hours=1)
    assert noop.skip_if_unchanged(make_app(), settled) is not None
    assert len(_digests(db_path)) == 1 and _digests(db_path) != kept


def test_a_skipped_file_changed_within_two_seconds_of_the_walk_keeps_no_digest(settled, make_app, db_path):
    """The binary file was written moments ago: its stat could hide a write in the same clock
    tick, so the lane skips on the rows' word but keeps no digest that would vouch for it."""
    assert noop.skip_if_unchanged(make_app(), settled) is not None
    assert _digests(db_path) == []


def test_the_daemon_s_watched_skip_keeps_no_digest(settled, make_app, db_path, clock, not_racy):
    """A skip on the watches' word compared no stat: it has nothing to keep."""
    first = noop.skip_if_unchanged(make_app(), settled)
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM stat_digests")
    unchanged = noop.Unchanged(first.root_hash, first.notes, tuple((s.path, s.reason) for s in first.skipped_files))
    clock.advance(hours=1)
    assert noop.skip_if_unchanged(make_app(), settled, unchanged=unchanged) is not None
    assert _digests(db_path) == []


KEY = (100, 1_700_000_000_000_000_000, 42, 1_700_000_000_000_000_000)


@pytest.mark.parametrize("field", range(4))
def test_the_digest_tells_every_stat_field_and_name_apart(field):
    """Size, mtime, inode and ctime each change the digest; so does a name, and a file moved
    between folders; the same stats give the same digest."""
    base = StatWalk({"a.md": KEY, "b/c.md": KEY}, {}, [], 0)
    changed = list(KEY)
    changed[field] += 1
    assert StatWalk(dict(base.files), {}, [], 5).digest == base.digest
    assert StatWalk({"a.md": tuple(changed), "b/c.md": KEY}, {}, [], 0).digest != base.digest
    assert StatWalk({"a.md": KEY, "b/d.md": KEY}, {}, [], 0).digest != base.digest
    assert StatWalk({"a.md": KEY, "b/c.md": KEY, "x.md": KEY}, {}, [], 0).digest != base.digest
    assert StatWalk({"a.mdb/c.md": KEY, "": KEY}, {}, [], 0).digest != base.digest  # names cannot run into each other


def test_no_digest_is_kept_when_the_glimpse_saw_another_set_of_files():
    """The glimpse walks a moment after the stat walk: a file it hashed that the stat walk did
    not see (created in between) would make the digest vouch for a root hash holding a file
    its stats do not; no digest then."""
    walked = StatWalk({"a.md": KEY}, {}, [], KEY[1] + 10**10)
    seen = {"a.md": (*KEY, "h" * 64, KEY[1] + 10**10)}
    assert noop._memo(walked, Glimpse({"a.md": "h" * 64}, 1, []), seen) is not None
    assert noop._memo(walked, Glimpse({"a.md": "h" * 64, "new.md": "g" * 64}, 2, []), seen) is None
    assert noop._memo(walked, Glimpse({}, 0, [Skipped("a.md", "binary")]), seen) is None  # a row, yet read and skipped


def test_the_stat_walk_leaves_out_the_temp_files_the_store_writes():
    """scan.py spells out the temp files' marker to stay light: it is the one stores.files uses."""
    assert scan._TEMP_MARKER == files.TEMP_MARKER
