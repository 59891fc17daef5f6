"""Races against the file primitives, run for real: another process swaps folders while dreamd
writes. Nothing outside the store may change. (A person writing to the note meanwhile:
``test_racing_writes``.)

Each race prints its counts (``-s`` shows them); the closing notes of the project quote them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from daemon.core.errors import StoreError
from daemon.stores import folders
from daemon.stores.files import write_atomic
from daemon.stores.paths import open_roots

pytestmark = pytest.mark.skipif(folders._renameat2() is None, reason="needs renameat2 (Linux, glibc >= 2.28)")

SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    a, b, n = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), int(sys.argv[3])
    print("ready", flush=True)
    for _ in range(n):
        renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
    """
)


def _swapping(store: Path, outside: Path, iterations: int) -> subprocess.Popen[str]:
    """A process exchanging ``store/sub`` (a real folder) with ``store/link`` (a symlink to
    ``outside``) as fast as it can, ``iterations`` times."""
    (store / "link").symlink_to(outside, target_is_directory=True)
    child = subprocess.Popen([sys.executable, "-c", SWAPPER, str(store / "sub"), str(store / "link"), str(iterations)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    return child


def _outside(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "note.md").write_bytes(b"a file that is not the store's\n")
    return outside, {p.name: p.read_bytes() for p in outside.iterdir()}


def _naive_write(root: Path, rel: str, data: bytes) -> None:
    (root / rel).write_bytes(data)  # what a check-then-use-by-path write amounts to


def _race(tmp_path: Path, write, rounds: int) -> tuple[int, int, int]:  # noqa: ANN001
    """(writes done, writes refused, escapes: times a byte outside the store changed)."""
    store = tmp_path / "store"
    (store / "sub").mkdir(parents=True)
    (store / "sub/note.md").write_bytes(b"inside\n")
    outside, before = _outside(tmp_path)
    roots = open_roots(store, ".dreamd-archive")
    child = _swapping(store, outside, 10**7)
    done = refused = escapes = 0
    try:
        for i in range(rounds):
            try:
                write(roots if write is write_atomic else store, "sub/note.md", f"written {i}\n".encode())
                done += 1
            except (StoreError, OSError):
                refused += 1
            now = {p.name: p.read_bytes() for p in outside.iterdir()}
            if now != before:
                escapes += 1
                for name in set(now) - set(before):
                    (outside / name).unlink()
                (outside / "note.md").write_bytes(before["note.md"])
    finally:
        child.kill()
        child.wait()
    return done, refused, escapes


def test_a_folder_swapped_for_a_symlink_mid_write_never_lets_a_byte_outside_the_store(tmp_path: Path) -> None:
    """400 writes while another process exchanges the note's folder with a symlink to an outside
    folder: every write lands inside or is refused; the outside folder never changes."""
    done, refused, escapes = _race(tmp_path, write_atomic, 400)
    print(f"directory-swap race: {done + refused} writes, {done} done, {refused} refused, {escapes} escapes")
    assert escapes == 0
    assert refused > 0 and done + refused == 400  # the race really ran; the next test shows it escapes a by-path write


def test_the_swap_race_does_escape_a_write_made_by_path(tmp_path: Path) -> None:
    """The same race against a plain by-path write: it does reach outside, so the test above can fail."""
    _, _, escapes = _race(tmp_path / "naive", _naive_write, 400)
    assert escapes > 0
