"""A person writing to a note while dreamd replaces it, run for real (invariant 10).

A writer process watches the note's folder and starts appending numbered lines the moment
dreamd's temp file appears: by path, re-opened for every line as ``echo >>`` does, or through
a descriptor held open for a burst of lines, as an editor or an agent mid-write holds one.
Whichever way each write goes (into the person's file, into dreamd's file after the
exchange, during the swap back), every line must afterwards be in the note or in a caught
file beside it, in the order written; none may be only in a blob or a temp file.

Each race prints its iteration and loss counts (``-s`` shows them); ``bench/bench_races.py``
runs the same harness for longer.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from daemon.core.errors import ConflictError, EditRacedError
from daemon.core.hashing import hash_bytes
from daemon.stores import files, folders
from daemon.stores.files import TEMP_MARKER, remove_file, temp_tag, write_atomic
from daemon.stores.paths import open_roots

pytestmark = pytest.mark.skipif(folders._renameat2() is None, reason="needs renameat2 (Linux, glibc >= 2.28)")

BASE = b"# Deploy\n\nThe port is 8080.\n"
NEW = b"# Deploy\n\nThe port is 8080 (merged with ports.md).\n"
LINE = re.compile(rb"person line (\d+)\n")

WRITER = textwrap.dedent(
    """
    import os, random, sys, time
    folder, note, marker, how, done = sys.argv[1:6]
    k = 0

    def present():
        return any(marker in name for name in os.listdir(folder))

    def line():
        global k
        k += 1
        return b"person line %d\\n" % (k - 1)

    held = None

    def burst():
        global held
        if how == "held":  # a burst through a descriptor held open across whatever happens
            fd = os.open(note, os.O_WRONLY | os.O_APPEND)
            for _ in range(random.randrange(1, 12)):
                os.write(fd, line())
                time.sleep(random.random() * 0.0002)
            os.close(fd)
            return
        with open(note, "ab") as f:  # by path, re-opened for each line: whatever has the name now
            f.write(line())
        if how == "mixed":  # and through one descriptor, opened when the temp file appeared
            if held is None:
                held = os.open(note, os.O_WRONLY | os.O_APPEND)
            os.write(held, line())

    print("ready", flush=True)
    for _ in sys.stdin:
        first = k
        while not present() and not os.path.exists(done):
            pass  # dreamd may be done before this loop ever saw its temp file
        if random.random() < 0.4:
            time.sleep(random.random() * 0.002)  # sometimes only after the exchange
        stop = time.monotonic() + 0.05  # a temp file left behind must not keep it writing
        while present() and time.monotonic() < stop:
            burst()
        for _ in range(random.randrange(3)):
            burst()  # and right after dreamd is done
        if held is not None:
            os.close(held)
            held = None
        print(first, k, flush=True)
    """
)


def caught_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file() and ".dreamd-caught" in p.name)


def race(store: Path, how: str, rounds: int) -> Counter[str]:
    """Run ``rounds`` writes of the note against the writer; the counts of what happened."""
    store.mkdir(parents=True)
    note = store / "note.md"
    roots = open_roots(store, ".dreamd-archive")
    done = store.parent / f"{store.name}.done"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(store), str(note), TEMP_MARKER, how, str(done)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None and child.stdout.readline() == "ready\n"
    counts: Counter[str] = Counter()
    try:
        for _ in range(rounds):
            note.write_bytes(BASE)
            child.stdin.write("go\n")
            child.stdin.flush()
            try:
                write_atomic(roots, "note.md", NEW, expected={hash_bytes(BASE)}, keep=lambda path, data: None, tag=temp_tag(1))
                counts["written"] += 1
            except EditRacedError:
                counts["raced"] += 1
            except ConflictError as exc:
                counts["conflict"] += 1
                counts[_caught(str(exc))] += 1
            done.touch()
            ready, _, _ = select.select([child.stdout], [], [], 5)
            assert ready, "the writer stopped answering"
            first, last = map(int, child.stdout.readline().split())
            done.unlink()
            counts["rounds"] += 1
            counts["lines"] += last - first
            _count(store, note, range(first, last), counts)
    finally:
        child.kill()
        child.wait()
    return counts


def _caught(message: str) -> str:
    """Where a conflict says the lines written to dreamd's file went."""
    if "back at its end" in message:
        return "caught: back in the note"
    if "is kept as" in message:
        return "caught: a whole file"
    return "caught: a caught file" if "landed in dreamd's file" in message else "caught: none"


def _count(store: Path, note: Path, written: range, counts: Counter[str]) -> None:
    """Find every line written this round in the note or a caught file; clear them for the next round."""
    seen: list[int] = []
    for path in [note, *caught_files(store)]:
        numbers = [int(n) for n in LINE.findall(path.read_bytes())]
        if numbers != sorted(set(numbers)):
            counts["out of order"] += 1
        counts["in note" if path == note else "in caught files"] += len(numbers)
        seen += numbers
        if path != note:
            path.unlink()
    counts["lost"] += len(set(written) - set(seen))
    for temp in [p for p in store.rglob("*") if TEMP_MARKER in p.name]:
        counts["temp files left"] += 1
        temp.unlink()


HOW = {  # rounds of each: about 5 s apiece here, whatever the load; bench/bench_races.py runs more
    "path": 200,  # a line at a time by path, re-opened for each
    "held": 150,  # bursts through a descriptor held open across the exchange or the swap back
    "mixed": 50,  # both at once: the person's file is written after the exchange too
}


@pytest.mark.parametrize("how", HOW)
def test_lines_a_person_writes_while_dreamd_replaces_the_note_are_never_lost(tmp_path: Path, how: str) -> None:
    """Hundreds of writes of a note while a person appends to it: no line is lost, none is out
    of order (in the note, in a caught file), no temp file is left."""
    rounds = HOW[how]
    counts = race(tmp_path / "store", how, rounds)
    print(f"racing writes ({how}): {dict(sorted(counts.items()))}")
    assert counts["lost"] == 0 and counts["out of order"] == 0 and counts["temp files left"] == 0
    assert counts["rounds"] == rounds and counts["conflict"] > rounds / 3 and counts["lines"] > rounds  # the race really ran


EDIT = b"An edit after dreamd's last look.\n"


def _after_exchange(monkeypatch: pytest.MonkeyPatch, act) -> None:  # noqa: ANN001
    """Run ``act`` right after dreamd's first exchange (or move): dreamd's file has the note's name."""
    real_exchange, real_move = folders.exchange, folders.move_new
    done: list[bool] = []

    def once(real):  # noqa: ANN001, ANN202
        def call(*args: object) -> object:
            result = real(*args)
            if not done:
                done.append(True)
                act()
            return result

        return call

    monkeypatch.setattr(folders, "exchange", once(real_exchange))
    monkeypatch.setattr(folders, "move_new", once(real_move))


def _note(tmp_path: Path, data: bytes = BASE) -> tuple[Path, Path]:
    """A store of one note holding ``data``: the store and the note."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "note.md").write_bytes(data)
    return store, store / "note.md"


def _edited(tmp_path: Path) -> tuple[Path, Path]:
    """A store whose note someone edited since dreamd last hashed it (BASE)."""
    return _note(tmp_path, BASE + EDIT)


def _write(store: Path) -> ConflictError:
    with pytest.raises(ConflictError) as failed:
        write_atomic(open_roots(store, ".dreamd-archive"), "note.md", NEW, expected={hash_bytes(BASE)}, tag=temp_tag(4))
    assert not [p for p in store.rglob("*") if TEMP_MARKER in p.name]
    return failed.value


def test_a_save_under_the_notes_name_during_the_swap_stays_and_what_it_replaced_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor saves the note (a new file renamed over its name) while dreamd's file has it:
    the save ends in place, the edited file dreamd had displaced in a caught file, whole."""
    store, note = _edited(tmp_path)

    def save() -> None:
        (store / ".note.md.swp").write_bytes(b"Saved by an editor.\n")
        (store / ".note.md.swp").rename(note)

    _after_exchange(monkeypatch, save)
    failed = _write(store)
    assert str(failed) == ("note.md changed while dreamd was writing; a file was saved under its name meanwhile and is in place; "
                           "the one it replaced (4 lines) is kept as note.md.dreamd-caught-j4.txt")  # fmt: skip
    assert note.read_bytes() == b"Saved by an editor.\n"
    assert (store / "note.md.dreamd-caught-j4.txt").read_bytes() == BASE + EDIT


def test_a_note_removed_during_the_swap_is_kept_as_a_caught_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The note's name is removed while dreamd's file has it: nothing comes back under the
    name, and the person's displaced file waits in a caught file."""
    store, note = _edited(tmp_path)
    _after_exchange(monkeypatch, note.unlink)
    failed = _write(store)
    assert str(failed) == "note.md changed while dreamd was writing; its name was removed meanwhile, so the file (4 lines) is kept as note.md.dreamd-caught-j4.txt"
    assert not note.exists()
    assert (store / "note.md.dreamd-caught-j4.txt").read_bytes() == BASE + EDIT


def test_dreamds_file_still_open_after_the_swap_back_becomes_the_caught_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program opened the note by path while dreamd's file had its name and keeps it open:
    that file becomes the caught file whole, so what it writes even after dreamd gave up lands
    there, not in a file removed; the note is the person's edited file."""
    store, note = _edited(tmp_path)
    held: list[int] = []

    def opened() -> None:
        held.append(os.open(note, os.O_WRONLY | os.O_APPEND))
        os.write(held[0], b"Written while dreamd's file had the name.\n")

    _after_exchange(monkeypatch, opened)
    failed = _write(store)
    os.write(held[0], b"Written after dreamd gave up.\n")
    os.close(held[0])
    assert str(failed) == ("note.md changed while dreamd was writing; it is back as it was, but dreamd's file, with what was written to it "
                           "meanwhile (1 line), is still open in another program: it is kept as note.md.dreamd-caught-j4.txt (dreamd's text first), "
                           "where what that program writes next lands too")  # fmt: skip
    assert note.read_bytes() == BASE + EDIT
    assert (store / "note.md.dreamd-caught-j4.txt").read_bytes() == NEW + b"Written while dreamd's file had the name.\nWritten after dreamd gave up.\n"


def test_a_note_re_created_while_dreamd_removes_it_keeps_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """dreamd moves an edited note away to remove it and someone appends to its name meanwhile
    (creating a new file): the new file stays, the moved one becomes a caught file."""
    store, note = _edited(tmp_path)
    _after_exchange(monkeypatch, lambda: note.write_bytes(b"Appended to a note that was not there.\n"))
    with pytest.raises(ConflictError) as failed:
        remove_file(open_roots(store, ".dreamd-archive"), "note.md", expected={hash_bytes(BASE)}, tag=temp_tag(4))
    assert str(failed.value) == ("note.md changed while dreamd was writing; someone made a new file under its name meanwhile, "
                                 "so the one dreamd had moved away (4 lines) is kept as note.md.dreamd-caught-j4.txt")  # fmt: skip
    assert note.read_bytes() == b"Appended to a note that was not there.\n"
    assert (store / "note.md.dreamd-caught-j4.txt").read_bytes() == BASE + EDIT


OPENER = textwrap.dedent(
    """
    import sys
    with open(sys.argv[1], "ab") as f:  # waits while dreamd holds the lease
        f.write(sys.argv[2].encode())
    """
)


def _opening(path: str, line: str, fd: int) -> subprocess.Popen[bytes]:
    """Another process opening ``path`` (so it waits on dreamd's lease of ``fd``), to write ``line``."""
    child = subprocess.Popen([sys.executable, "-c", OPENER, path, line])
    for _ in range(500):
        if files._lease_broken(fd):
            return child
        time.sleep(0.01)
    raise AssertionError("the other process never opened the file")


def test_a_file_someone_begins_to_open_after_its_check_is_put_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process opens the displaced file after dreamd checked it (as one whose path lookup came
    before the exchange does): its lease breaks, dreamd puts the file back instead of removing
    it, and what that process writes lands in the note."""
    store, note = _note(tmp_path)
    real = files._drop_displaced
    children = []

    def drop(place, checked, keep, undo):  # noqa: ANN001
        children.append(_opening(str(store / place.temp), "Written by a late opener.\n", checked.fd))
        return real(place, checked, keep, undo)

    monkeypatch.setattr(files, "_drop_displaced", drop)
    with pytest.raises(ConflictError, match="^note.md is open in another program, which could still write to it; nothing of it was overwritten$"):
        write_atomic(open_roots(store, ".dreamd-archive"), "note.md", NEW, expected={hash_bytes(BASE)}, tag=temp_tag(4))
    assert children[0].wait(5) == 0
    assert note.read_bytes() == BASE + b"Written by a late opener.\n"
    assert not [p for p in store.iterdir() if p.name != "note.md"]


def test_a_file_someone_opens_as_its_last_name_goes_is_read_once_they_are_done(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that reaches the displaced file as dreamd removes its last name (here through
    /proc) breaks the lease: dreamd lets it finish, reads what it wrote, and that goes to a
    caught file beside the note (the write refused, edit-raced), not into a removed file."""
    store, note = _note(tmp_path)
    real = files._check_late
    children = []

    def late(place, checked, keep):  # noqa: ANN001
        children.append(_opening(f"/proc/{os.getpid()}/fd/{checked.fd}", "Written as the name went.\n", checked.fd))
        return real(place, checked, keep)

    monkeypatch.setattr(files, "_check_late", late)
    with pytest.raises(EditRacedError, match=r"^note.md was written to in the instant dreamd replaced it; what was written then \(1 line\) is in note.md.dreamd-caught-j4.txt "):
        write_atomic(open_roots(store, ".dreamd-archive"), "note.md", NEW, expected={hash_bytes(BASE)}, keep=lambda path, data: None, tag=temp_tag(4))
    assert children[0].wait(5) == 0
    assert note.read_bytes() == NEW
    assert (store / "note.md.dreamd-caught-j4.txt").read_bytes() == b"Written as the name went.\n"
