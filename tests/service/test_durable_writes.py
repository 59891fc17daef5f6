"""What makes an apply's writes durable: each file's bytes are fsynced before its rename, and
every folder a rename or removal changed is fsynced, once, after the journal's last write and
before the journal is closed as done (recovery puts any mix of before and after right, so
only the folders being durable by then counts)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.service.apply.applying import apply
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

FIRST = "Deploys to staging run from the release branch every weekday at 15:00 UTC.\n"
SECOND = "The build cache lives in the shared bucket and is cleared on Sundays at midnight.\n"


def _merges_accepted(app, root: Path, preset: str) -> list[int]:
    store = adhoc_store(root, preset)
    ids = [o.id for o in run_pass(app, store).outcomes if o.state == "pending" and o.planned.draft.kind == "merge"]
    for pid in ids:
        decide(app, pid, "accept")
    return ids


@pytest.mark.parametrize(("preset", "notes", "archive"), [
    ("deepcode", "", ".dreamd-archive"),  # the archive inside the notes folder: temp files wait there
    ("serena", "memories", "memories.dreamd-archive"),  # the archive beside it: temp files wait beside their target
])  # fmt: skip
def test_each_folder_an_apply_changed_is_synced_once_after_its_writes_and_before_its_journal_closes(make_store, make_app, monkeypatch, preset, notes, archive):
    """Two merges in one run, each moving a note into the archive and (DeepCode) editing the
    index: each journal ends with one fsync of each changed folder, after the files' own."""
    prefix = f"{notes}/" if notes else ""
    files = {f"{prefix}a.md": FIRST, f"{prefix}a-copy.md": FIRST, f"{prefix}b.md": SECOND, f"{prefix}b-copy.md": SECOND}
    if preset == "deepcode":
        files["MEMORY.md"] = "# Memory\n\n- [a](a.md)\n- [a copy](a-copy.md)\n- [b](b.md)\n- [b copy](b-copy.md)\n"
    base = make_store(files)
    root = base / notes if notes else base
    app = make_app()
    ids = _merges_accepted(app, root, preset)
    assert len(ids) == 2
    events: list[tuple[str, str]] = []
    real_fsync, real_close = os.fsync, repo.close_journal

    def fsync(fd: int) -> None:
        kind = "folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        events.append((kind, os.path.realpath(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def close_journal(conn, store_id, journal_id, state, now):  # noqa: ANN001, ANN202
        events.append(("journal closed", state))
        return real_close(conn, store_id, journal_id, state, now)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(repo, "close_journal", close_journal)
    assert [r.state for r in apply(app, ids)] == ["applied", "applied"]
    monkeypatch.undo()

    archive_folder = os.path.realpath(base / archive)
    changed = {os.path.realpath(root), archive_folder}  # a note moved out of one into the other
    closes = [i for i, e in enumerate(events) if e[0] == "journal closed"]
    assert [events[i][1] for i in closes] == ["done", "done"]
    start = 0
    for number, close in enumerate(closes, 1):
        journal = events[start:close]
        last_file = max(i for i, (kind, _) in enumerate(journal) if kind == "file")
        tail = [path for _, path in journal[last_file + 1 :]]
        assert sorted(tail) == sorted(changed), f"folders synced after the writes: {tail}"
        if number == 2:  # the archive folder exists now: no folder is synced but at the end, once
            synced = [path for kind, path in journal if kind == "folder"]
            assert sorted(synced) == sorted(changed), f"folders synced in the journal: {synced}"
        start = close + 1
    assert verify(app, adhoc_store(root, preset)).clean
