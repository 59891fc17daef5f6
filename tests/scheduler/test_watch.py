"""The daemon's watches (real inotify): a store is vouched for only while no event came since
its last pass began, and anything that leaves a doubt makes its next pass walk it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from daemon.scheduler import watch
from daemon.scheduler.watch import RESTAT_S, Watches

SEEN = {"root_hash": "r1", "notes": 2, "skipped": []}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def watches(clock: Clock):
    from inotify_simple import INotify, flags

    made = Watches(INotify(nonblocking=True), flags, clock)
    yield made
    made.close()


def _store(tmp_path: Path, name: str = "notes") -> Path:
    root = tmp_path / name
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("a\n")
    (root / "sub" / "b.md").write_text("b\n")
    return root


def _quiet(watches: Watches, name: str) -> None:
    """A first pass (which walks the store), then the store vouched for by what it saw."""
    assert watches.claim(name) is None
    watches.passed(name, SEEN)


def test_a_store_quiet_since_its_last_pass_is_vouched_for(tmp_path, watches):
    """After a pass that began watched, with no event since, the next claim gets what it saw."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    assert watches.claim("notes") == SEEN


def test_the_first_pass_after_start_is_never_vouched_for(tmp_path, watches):
    """Nothing watched the store before the daemon started: its first pass walks it."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    assert watches.claim("notes") is None


CHANGES = {
    "an edit": lambda root: (root / "a.md").write_text("a, edited\n"),
    "a new note": lambda root: (root / "c.md").write_text("c\n"),
    "a deletion": lambda root: (root / "a.md").unlink(),
    "a rename": lambda root: (root / "a.md").rename(root / "z.md"),
    "a chmod": lambda root: (root / "a.md").chmod(0o600),
    "a touch": lambda root: os.utime(root / "a.md", ns=(1, 1)),
    "a truncation": lambda root: os.truncate(root / "a.md", 0),
    "an edit in a subfolder": lambda root: (root / "sub" / "b.md").write_text("b, edited\n"),
    "a new folder": lambda root: (root / "new").mkdir(),
    "a note in the archive": lambda root: (root / ".dreamd-archive" / "old.md").write_text("old\n"),
    "a hard link": lambda root: os.link(root / "a.md", root / "a-too.md"),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_any_change_since_the_last_pass_makes_the_next_one_walk(what, tmp_path, watches):
    """An edit, a new, deleted, renamed, chmod-ed, touched, truncated or linked note, in any
    watched folder: the next claim is None."""
    root = _store(tmp_path)
    (root / ".dreamd-archive").mkdir()
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    CHANGES[what](root)
    assert watches.claim("notes") is None


def test_a_change_during_a_pass_is_not_vouched_for(tmp_path, watches):
    """A write after the pass began (it may have been read before it): what the pass saw is not kept."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    assert watches.claim("notes") == SEEN
    (root / "a.md").write_text("a, edited mid-pass\n")
    watches.passed("notes", SEEN)
    assert watches.claim("notes") is None


def test_a_folder_made_since_is_watched_from_the_next_pass_on(tmp_path, watches):
    """A new folder drops the store's watches; the next pass watches it too, so a write in it is seen."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    (root / "topic").mkdir()
    assert watches.claim("notes") is None
    watches.passed("notes", SEEN)
    (root / "topic" / "t.md").write_text("t\n")
    assert watches.claim("notes") is None


def test_an_archive_root_made_later_beside_the_notes_is_seen(tmp_path, watches):
    """The archive root beside the notes did not exist at first: its appearance is a change."""
    root = _store(tmp_path)
    archive = tmp_path / "notes.dreamd-archive"
    watches.track({"notes": (root, archive)})
    _quiet(watches, "notes")
    (tmp_path / "unrelated").mkdir()  # its parent's other names are none of the store's business
    assert watches.claim("notes") == SEEN
    watches.passed("notes", SEEN)
    archive.mkdir()
    assert watches.claim("notes") is None


def test_an_overflowed_queue_makes_every_store_walk(tmp_path, watches):
    """Past the kernel's queue limit events are dropped: no store is vouched for, even one no event was for."""
    busy, calm = _store(tmp_path, "busy"), _store(tmp_path, "calm")
    watches.track({"busy": (busy, busy / ".dreamd-archive"), "calm": (calm, calm / ".dreamd-archive")})
    _quiet(watches, "busy")
    _quiet(watches, "calm")
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    files = [busy / "a.md", busy / "sub" / "b.md"]
    for i in range(limit + 10):  # alternating names: the kernel merges only identical events in a row
        os.utime(files[i % 2], ns=(i, i))
    assert watches.claim("calm") is None
    assert watches.claim("busy") is None


def test_a_store_is_walked_at_least_every_restat_period(tmp_path, watches, clock):
    """A write through a shared memory map raises no event: after RESTAT_S a quiet store is walked anyway."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    clock.now += RESTAT_S + 1
    assert watches.claim("notes") is None


def test_a_store_no_longer_configured_is_let_go(tmp_path, watches):
    """A store dropped from the config is forgotten: configured again, its first pass walks it."""
    root = _store(tmp_path)
    watches.track({"notes": (root, root / ".dreamd-archive")})
    _quiet(watches, "notes")
    watches.track({})
    watches.track({"notes": (root, root / ".dreamd-archive")})
    assert watches.claim("notes") is None


def test_a_store_not_watched_by_folder_is_never_vouched_for(tmp_path, watches):
    """A record store (no folders given) gets no word from the watches."""
    watches.track({"records": None})
    assert watches.claim("records") is None
    watches.passed("records", SEEN)
    assert watches.claim("records") is None


def test_a_file_system_other_hosts_write_is_not_trusted():
    """Only a local file system's writes all raise events here: /proc's kind is not among them, /'s is."""
    assert "may be written by other hosts" in watch._not_local(Path("/proc/self"))
    assert watch._not_local(Path("/dev/shm")) == ""


def test_a_refused_watch_is_said_once_and_tried_again_at_each_pass(tmp_path, watches):
    """A folder the kernel will not watch (here: not there yet) leaves the store walked at
    every pass, says so once, and is watched once it can be."""
    from structlog.testing import capture_logs

    root = tmp_path / "notes"
    watches.track({"notes": (root, root / ".dreamd-archive")})
    with capture_logs() as logs:
        for _ in range(3):
            assert watches.claim("notes") is None
            watches.passed("notes", SEEN)
    assert [entry["event"] for entry in logs] == ["watch.failed"]
    _store(tmp_path)
    assert watches.claim("notes") is None
    watches.passed("notes", SEEN)
    assert watches.claim("notes") == SEEN
