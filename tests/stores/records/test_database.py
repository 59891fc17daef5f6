"""Dexto's database as a store: read-only consistent scans, compare-and-swap transactions."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dexto_db
from conftest import T
from daemon.core.errors import StaleError, StoreError
from daemon.core.hashing import hash_bytes
from daemon.service.apply.journal import Step
from daemon.stores.records import database
from daemon.stores.records.rendering import render


def _scan(db: Path):
    return database.scan(database.open_roots(db))


def _files(db: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(db.parent.iterdir())}


def test_scan_reads_each_memory_as_a_note_named_by_its_key(dexto):
    """Every memory:item row is a note whose bytes are the rendering of its exact value; other keys are left out."""
    scan = _scan(dexto)
    values = dexto_db.values(dexto)
    assert sorted(scan.notes) == ["memory:item:Ab3dE_fG-hIj", "memory:item:Zz9yX8wV7uT6", "memory:item:pInNeD000001", "memory:item:uNiQuE000002"]
    assert {k: e.data for k, e in scan.notes.items()} == {k: render(v) for k, v in values.items() if k.startswith("memory:item:")}
    assert (scan.skipped, scan.archived) == ([], {})


def test_scan_reports_every_row_it_must_not_touch_with_why(dexto):
    """Invalid JSON, a rule break, an id that is not its key's and an upper-case key are reported, not read as notes."""
    conn = sqlite3.connect(dexto, isolation_level=None)
    rows = {
        "memory:item:broken000001": '{"id":"broken000001","content":',
        "memory:item:toolong00001": '{"id":"toolong00001","content":"' + "x" * 10_001 + '","createdAt":1,"updatedAt":1}',
        "memory:item:moved0000001": '{"id":"other0000001","content":"c","createdAt":1,"updatedAt":1}',
        "MEMORY:ITEM:shout0000001": '{"id":"shout0000001","content":"c","createdAt":1,"updatedAt":1}',
    }
    for key, value in rows.items():
        conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", (key, value, 1))
    conn.close()
    scan = _scan(dexto)
    assert [(s.path, s.reason.split(":")[0]) for s in scan.skipped] == [
        ("MEMORY:ITEM:shout0000001", "bad-key"),
        ("memory:item:broken000001", "invalid-json"),
        ("memory:item:moved0000001", "id-differs-from-key"),
        ("memory:item:toolong00001", "breaks-dexto-rules"),
    ]
    assert "Dexto's prompt shows no memory at all" in scan.skipped[1].reason
    assert len(scan.notes) == 4


def test_scan_never_writes_the_database_nor_changes_its_journal_mode(dexto):
    """Scanning leaves the .db bytes as they were and the database in WAL mode (file header bytes 18-19 are 2)."""
    before = dexto.read_bytes()
    _scan(dexto)
    database.on_disk(database.open_roots(dexto), ["memory:item:Ab3dE_fG-hIj"])
    assert dexto.read_bytes() == before
    assert before[18:20] == b"\x02\x02"


def test_a_database_without_dexto_layout_is_one_store_error(tmp_path):
    """A SQLite file with no kv_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, …) is refused with one line."""
    db = tmp_path / "other.db"
    sqlite3.connect(db).execute("CREATE TABLE kv_store (key TEXT, value BLOB)").connection.close()
    with pytest.raises(StoreError) as caught:
        _scan(db)
    assert caught.value.one_line() == (
        f"error[store]: {db} is not a Dexto database: no table kv_store(key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at, updated_at)"
        " (the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db)"
    )


def test_a_file_that_is_not_sqlite_is_one_store_error(tmp_path):
    """Text in a .db file is refused as not an SQLite database, and left as it was."""
    db = tmp_path / "notes.db"
    db.write_text("# not a database\n" * 100)
    with pytest.raises(StoreError, match="is not an SQLite database"):
        _scan(db)
    assert db.read_text() == "# not a database\n" * 100


def test_a_missing_database_or_a_folder_is_refused_when_opened(tmp_path):
    """open_roots refuses a path with no file and a folder, naming the path."""
    with pytest.raises(StoreError, match="No such file or directory"):
        database.open_roots(tmp_path / "gone.db")
    with pytest.raises(StoreError, match="is not a database file"):
        database.open_roots(tmp_path)
    assert not (tmp_path / "gone.db").exists()


WRITER = r"""
import json, sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
deadline = time.monotonic() + float(sys.argv[2])
n = 0
while time.monotonic() < deadline:
    n += 1
    conn.execute("BEGIN IMMEDIATE")
    for ident in ("pairAAAAAAAA", "pairBBBBBBBB"):
        # ASCII text and integers: json.dumps with compact separators is JSON.stringify
        value = json.dumps({"id": ident, "content": f"generation {n}", "createdAt": 1, "updatedAt": n}, separators=(",", ":"))
        conn.execute("INSERT OR REPLACE INTO kv_store (key, value, updated_at) VALUES (?, ?, ?)", ("memory:item:" + ident, value, n))
    conn.execute("COMMIT")
print(n)
"""


def test_a_wal_database_being_written_is_read_as_one_committed_state(dexto):
    """While a Dexto-like writer replaces two memories together in each transaction, every scan sees both from the same one."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(dexto), "2.0"], stdout=subprocess.PIPE, text=True)
    seen = []
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            notes = _scan(dexto).notes
            pair = [notes.get(f"memory:item:pair{c * 8}") for c in "AB"]
            if all(pair):
                seen.append(tuple(e.data.decode().rsplit("generation ", 1)[1] for e in pair))
    finally:
        generations = int(writer.communicate(timeout=10)[0])
    assert seen and all(a == b for a, b in seen)
    assert len({a for a, _ in seen}) > 1 and generations > 1


def _hashes(db: Path) -> dict[str, str]:
    return {k: hash_bytes(render(v)) for k, v in dexto_db.values(db).items() if k.startswith("memory:item:")}


def _edited(db: Path, key: str, content: str) -> tuple[Step, dict[str, bytes]]:
    """A step replacing ``key``'s content, with the bytes of both sides."""
    before = render(dexto_db.values(db)[key])
    after = before.rsplit(b"---\n", 1)[0] + b"---\n" + content.encode() + b"\n"
    return Step(key, hash_bytes(before), hash_bytes(after)), {hash_bytes(before): before, hash_bytes(after): after}


def test_write_updates_exactly_the_reviewed_value_in_one_transaction(dexto):
    """An update step writes the new value and touches no other row."""
    step, blobs = _edited(dexto, "memory:item:uNiQuE000002", "Deploys go out on Wednesdays.")
    others = {k: v for k, v in dexto_db.values(dexto).items() if k != step.path}
    written = database.write(database.open_roots(dexto), [step], blobs)
    values = dexto_db.values(dexto)
    assert values[step.path] == '{"id":"uNiQuE000002","content":"Deploys go out on Wednesdays.","createdAt":1733000003000,"updatedAt":1733000003000,"tags":["release"]}'
    assert {k: v for k, v in values.items() if k != step.path} == others
    assert written.changed == 1 and written.held_s < 0.5


def test_write_rolls_everything_back_when_one_record_changed_meanwhile(dexto):
    """A delete and an update where the updated record was rewritten by Dexto: StaleError and not one row changed."""
    step, blobs = _edited(dexto, "memory:item:uNiQuE000002", "Deploys go out on Wednesdays.")
    gone = Step("memory:item:Zz9yX8wV7uT6", _hashes(dexto)["memory:item:Zz9yX8wV7uT6"], None)
    conn = sqlite3.connect(dexto, isolation_level=None)
    dexto_db.put(conn, [dexto_db.memory("uNiQuE000002", "Deploys go out on Thursdays.", T + 3_000, updated=T + 9_000, tags=["release"])])
    conn.close()
    before = dexto_db.values(dexto)
    with pytest.raises(StaleError, match="memory:item:uNiQuE000002 changed since it was read"):
        database.write(database.open_roots(dexto), [gone, step], blobs)
    assert dexto_db.values(dexto) == before


def test_write_refuses_a_value_that_breaks_dexto_rules_before_touching_a_row(dexto):
    """A step whose result has content over 10,000 characters is refused (StoreError) and nothing is written."""
    step, blobs = _edited(dexto, "memory:item:uNiQuE000002", "x" * 10_001)
    before = dexto_db.values(dexto)
    with pytest.raises(StoreError, match="breaks Dexto's rules: content must be 1-10,000 characters; refusing to write it"):
        database.write(database.open_roots(dexto), [step], blobs)
    assert dexto_db.values(dexto) == before


def test_write_waits_for_a_lock_then_fails_with_one_line_and_writes_nothing(dexto, monkeypatch):
    """While another connection holds the write lock past dreamd's wait, the write is a StoreError naming the lock; no row changes."""
    monkeypatch.setattr(database, "LOCK_WAIT_S", 0.2)
    step, blobs = _edited(dexto, "memory:item:uNiQuE000002", "Deploys go out on Wednesdays.")
    holder = sqlite3.connect(dexto, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match="is locked by another writer"):
            database.write(database.open_roots(dexto), [step], blobs)
        waited = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert 0.2 <= waited < 1.0
    assert dexto_db.values(dexto)[step.path] == '{"id":"uNiQuE000002","content":"Deploys go out on Tuesdays after the 10:00 stand-up.","createdAt":1733000003000,"updatedAt":1733000003000,"tags":["release"]}'


READ_ONLY_WRITE = r"""
import json, sys
from daemon.core.errors import StoreError
from daemon.service.apply.journal import Step
from daemon.stores.records import database
path, before, after, blobs = json.loads(sys.stdin.read())
try:
    database.write(database.open_roots(sys.argv[1]), [Step(path, before, after)], {k: v.encode() for k, v in blobs.items()})
except StoreError as exc:
    print(exc.one_line())
"""


def test_write_to_a_read_only_database_is_one_store_error(dexto):
    """A database file and folder without write permission give one 'read-only' line, nothing written (root runs it without CAP_DAC_OVERRIDE)."""
    import json

    step, blobs = _edited(dexto, "memory:item:uNiQuE000002", "Deploys go out on Wednesdays.")
    before = _files(dexto)
    dexto.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    dexto.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    try:
        done = subprocess.run([*drop, sys.executable, "-c", READ_ONLY_WRITE, str(dexto)], input=json.dumps([step.path, step.before, step.after, {k: v.decode() for k, v in blobs.items()}]), capture_output=True, text=True, check=True)
    finally:
        dexto.parent.chmod(stat.S_IRWXU)
        dexto.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert done.stdout.splitlines()[-1] == f"error[store]: record store {dexto} is read-only; nothing was written (dreamd needs write access to the database file and its folder to apply)"
    assert _files(dexto) == before


def test_dreamd_waits_for_a_lock_for_less_time_than_dexto_does():
    """dreamd's lock wait (2 s) is shorter than Dexto's 5 s, so Dexto's own writes outlast dreamd's, never the reverse."""
    from daemon.stores.records import dexto

    assert (database.LOCK_WAIT_S, dexto.WRITER_WAIT_S) == (2.0, 5.0)


def test_excluded_keys_are_left_out_of_the_scan_silently(dexto):
    """A key an ``exclude`` glob names is neither a note nor reported."""
    from daemon.stores import port
    from daemon.stores.presets import resolve_settings

    scan = port.scan(database.open_roots(dexto), resolve_settings("dexto", {"exclude": ["memory:item:pInNeD*"]}))
    assert ("memory:item:pInNeD000001" in scan.notes, scan.skipped) == (False, [])
    assert len(scan.notes) == 3
