"""One contract for both kinds of store behind the store port: a folder of notes and Dexto's database."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import dexto_db
from conftest import T
from daemon.core.errors import ApplyError
from daemon.core.hashing import hash_bytes
from daemon.service.apply import journal
from daemon.stores import port
from daemon.stores.presets import resolve_settings


class Folder:
    preset = "generic"
    first, second = "a.md", "b.md"

    def make(self, tmp: Path) -> Path:
        root = tmp / "notes"
        root.mkdir()
        (root / "a.md").write_text("Deploys go out on Tuesdays.\n")
        (root / "b.md").write_text("Staging resets on Mondays.\n")
        return root

    def edited(self, data: bytes, text: str) -> bytes:
        return text.encode() + b"\n"

    def meddle(self, root: Path, text: str) -> None:
        (root / "a.md").write_text(text + "\n")


class Records:
    preset = "dexto"
    first, second = "memory:item:aaaaaaaaaaaa", "memory:item:bbbbbbbbbbbb"

    def make(self, tmp: Path) -> Path:
        return dexto_db.create(tmp / "agent.db", [
            dexto_db.memory("aaaaaaaaaaaa", "Deploys go out on Tuesdays.", T),
            dexto_db.memory("bbbbbbbbbbbb", "Staging resets on Mondays.", T),
        ])  # fmt: skip

    def edited(self, data: bytes, text: str) -> bytes:
        return data.rsplit(b"---\n", 1)[0] + b"---\n" + text.encode() + b"\n"

    def meddle(self, root: Path, text: str) -> None:
        conn = sqlite3.connect(root, isolation_level=None)
        dexto_db.put(conn, [dexto_db.memory("aaaaaaaaaaaa", text, T, updated=T + 1)])
        conn.close()


KINDS = [Folder(), Records()]


@pytest.fixture(params=KINDS, ids=["folder", "records"])
def kind(request):
    return request.param


def _open(kind, tmp_path):
    root = kind.make(tmp_path)
    settings = resolve_settings(kind.preset, {})
    return root, port.open_roots(root, settings), settings


def test_scan_hashes_each_note_and_on_disk_agrees(kind, tmp_path):
    """Every scanned note's hash is its bytes' hash, and on_disk reports the same hashes (None for a name not there)."""
    _, roots, settings = _open(kind, tmp_path)
    scan = port.scan(roots, settings)
    assert sorted(scan.notes) == [kind.first, kind.second]
    assert {p: e.hash for p, e in scan.notes.items()} == {p: hash_bytes(e.data) for p, e in scan.notes.items()}
    missing = kind.first.replace("a", "z")
    assert journal.on_disk(roots, [*scan.notes, missing]) == {**{p: e.hash for p, e in scan.notes.items()}, missing: None}


def test_a_write_then_its_undo_gives_back_the_exact_bytes(kind, tmp_path):
    """Writing a step and then undoing it leaves the store's notes as they were, byte for byte."""
    _, roots, settings = _open(kind, tmp_path)
    before = {p: e.data for p, e in port.scan(roots, settings).notes.items()}
    after = kind.edited(before[kind.first], "Deploys go out on Wednesdays.")
    step = journal.Step(kind.first, hash_bytes(before[kind.first]), hash_bytes(after))
    blobs = {hash_bytes(before[kind.first]): before[kind.first], hash_bytes(after): after}
    journal.write(roots, [step], blobs)
    assert port.scan(roots, settings).notes[kind.first].data == after
    journal.write(roots, [step], blobs, undo=True)
    assert {p: e.data for p, e in port.scan(roots, settings).notes.items()} == before


def test_a_note_changed_meanwhile_stops_the_write_and_keeps_the_change(kind, tmp_path):
    """A note someone rewrote after it was read is not overwritten: the write raises an ApplyError and their text stays."""
    root, roots, settings = _open(kind, tmp_path)
    data = port.scan(roots, settings).notes[kind.first].data
    after = kind.edited(data, "Deploys go out on Wednesdays.")
    kind.meddle(root, "Deploys go out on Fridays.")
    with pytest.raises(ApplyError):
        journal.write(roots, [journal.Step(kind.first, hash_bytes(data), hash_bytes(after))], {hash_bytes(after): after, hash_bytes(data): data})
    assert b"Deploys go out on Fridays." in port.scan(roots, settings).notes[kind.first].data


def test_an_archive_step_is_held_by_a_folder_and_kept_as_blobs_by_a_record_store(kind, tmp_path):
    """held_paths keeps a retired note's archive copy for a folder; a record store's archive is dreamd's blobs."""
    _, roots, _ = _open(kind, tmp_path)
    archived = f"{roots.archive_prefix}/{kind.first}"
    assert port.held_paths(roots, [kind.first, archived]) == ([kind.first, archived] if kind.preset == "generic" else [kind.first])
