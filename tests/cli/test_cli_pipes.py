"""``dreamd … | head -1`` ends quietly: exit 0, nothing on stderr, no traceback, as ``git log | head -1``."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest

PAIRS = 300  # exact duplicates: 300 proposals, each command's output well past the pipe
PIPE_BYTES = 4096  # the pipe to head is made this small, so the output cannot fit in it


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A store of duplicate pairs passed over once; returns (db url, store)."""
    base = tmp_path_factory.mktemp("pipes")
    store = base / "store"
    store.mkdir()
    for i in range(PAIRS):
        note = f"---\nname: n{i}\n---\n\nThe build command number {i} is make all with -j{i}.\n"
        (store / f"a{i}.md").write_text(note)
        (store / f"b{i}.md").write_text(note)
    url = f"sqlite:///{base / 'state.db'}"
    subprocess.run([sys.executable, "-m", "daemon", "--db", url, "pass", "--store", str(store), "--preset", "generic", "--summary"], check=True, capture_output=True, timeout=300)
    return url, store


def _into_head(args):
    """Run dreamd with its stdout piped to ``head -1``; returns (dreamd's exit, its stderr, head's output)."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    head = subprocess.Popen(["head", "-1"], stdin=read, stdout=subprocess.PIPE)
    dreamd = subprocess.Popen([sys.executable, "-m", "daemon", *args], stdout=write, stderr=subprocess.PIPE)
    os.close(read)
    os.close(write)
    first, _ = head.communicate(timeout=120)
    _, err = dreamd.communicate(timeout=120)
    return dreamd.returncode, err.decode(), first.decode()


@pytest.mark.parametrize(
    "command",
    [["show", *map(str, range(1, PAIRS + 1))], ["proposals"], ["log", "--limit", "10000"], ["history", "--as-of", "2100-01-01T00:00:00Z"]],
    ids=["show", "proposals", "log", "history"],
)
def test_a_reader_that_stops_early_ends_dreamd_quietly(command, recorded):
    """The reader takes one line and leaves: dreamd exits 0 and prints nothing on stderr."""
    url, store = recorded
    args = ["--db", url, *command] + ([str(store)] if command[0] == "history" else [])
    code, err, first = _into_head(args)
    assert (code, err) == (0, "")
    assert first.count("\n") == 1


def test_the_output_is_longer_than_what_the_pipe_holds(recorded):
    """Each command's full output is many times the pipe, so head really leaves before dreamd has written it all."""
    url, store = recorded
    sizes = [
        len(subprocess.run([sys.executable, "-m", "daemon", "--db", url, *args], capture_output=True, check=True, timeout=120).stdout)
        for args in (["proposals"], ["log", "--limit", "10000"], ["history", str(store), "--as-of", "2100-01-01T00:00:00Z"])
    ]
    assert min(sizes) > 3 * PIPE_BYTES, sizes
