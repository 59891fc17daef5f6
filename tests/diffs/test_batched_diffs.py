"""One git process for a batch of changes gives each change the diff it gets alone."""

from __future__ import annotations

import random

from daemon.core.hashing import hash_bytes
from daemon.core.proposals import Change
from daemon.diffs import git
from daemon.diffs.window import MIN_BYTES


def _change(files: dict[str, tuple[bytes | None, bytes | None]]) -> Change:
    base, result, data = {}, {}, {}
    for path, (before, after) in files.items():
        for side, content in ((base, before), (result, after)):
            side[path] = None if content is None else hash_bytes(content)
            if content is not None:
                data[hash_bytes(content)] = content
    return Change(base, result, data)


def _note(rng: random.Random, words: int = 30) -> bytes:
    return (" ".join(rng.choice(["build", "deploy", "port", "test", "cache", "ci"]) for _ in range(words)) + "\n").encode()


def _random_change(rng: random.Random, i: int) -> Change:
    """A merge-like change: a note moved into the archive with a mark, a survivor edited,
    sometimes a large index edited in place; odd names (spaces, quotes, digits, a b/ folder)."""
    name = rng.choice([f"n{i}.md", f"my note {i}.md", f'q"{i}.md', f"{i}/7/x.md", f"b/{i}/y.md", f"tab\t{i}.md"])
    moved = _note(rng)
    files = {name: (moved, None), f".archive/{name}": (None, b"---\nstatus: superseded\n---\n" + moved)}
    survivor = _note(rng)
    files[f"s{i}.md"] = (survivor, survivor + b"an added line\n")
    if rng.random() < 0.4:
        index = b"".join(f"- [n{k}](n{k}.md)\n".encode() for k in range(MIN_BYTES // 12 + 50))
        files["MEMORY.md"] = (index, index.replace(f"- [n{i}](n{i}.md)\n".encode(), b""))
    if rng.random() < 0.2:
        files[f"new{i}.md"] = (None, _note(rng))
    return _change(files)


def test_a_batch_gives_every_change_its_own_diff():
    """30 changes of every shape at once: each diff equals the one git gives that change alone."""
    rng = random.Random(9)
    changes = [_random_change(rng, i) for i in range(30)] + [_change({"same.md": (b"x\n", b"x\n")})]
    assert git.unified_diffs(changes) == [git.unified_diff(c) for c in changes]
    assert git.unified_diffs([]) == []


def test_two_changes_moving_the_same_note_are_diffed_apart():
    """Two proposals both retire the same note into the archive (identical bytes): git could pair
    one's deletion with the other's addition; each still gets exactly its own diff."""
    note = b"The staging database is reset every Monday.\n" * 3
    marked = b"---\nstatus: superseded\n---\n" + note
    one = _change({"dup.md": (note, None), ".archive/dup.md": (None, marked), "a.md": (b"a\n", b"a\nb\n")})
    two = _change({"dup.md": (note, None), ".archive/dup.md": (None, marked), "c.md": (b"c\n", b"c\nd\n")})
    alone = [git.unified_diff(one), git.unified_diff(two)]
    assert git.unified_diffs([one, two]) == alone
    assert "rename from dup.md\nrename to .archive/dup.md\n" in alone[0]


def test_the_scratch_folder_is_memory_only_when_it_has_room(monkeypatch):
    """/dev/shm when it holds four times the batch and 256 MB more; else the system's temp
    folder (None); a machine without /dev/shm also gets None."""
    import os

    class Free:
        f_frsize = 4096

        def __init__(self, blocks: int) -> None:
            self.f_bavail = blocks

    monkeypatch.setattr(os, "access", lambda path, mode: True)
    monkeypatch.setattr(os, "statvfs", lambda path: Free((512 << 20) // 4096))
    assert git.scratch_dir(10 << 20) == git.SHM
    assert git.scratch_dir(100 << 20) is None

    def missing(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(os, "statvfs", missing)
    assert git.scratch_dir(0) is None
