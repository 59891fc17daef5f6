"""Caught files: bytes a person wrote while dreamd was swapping a note, kept where they can see them.

A writer that opens a note by path (``echo >> note.md``, an editor's save) in the instant after
dreamd exchanged its new file in writes into dreamd's file, not the person's. When dreamd then
puts the person's file back (a conflict), those bytes would be left in dreamd's file at its temp
name; dreamd puts them back at the end of the person's file where that is provably the order they
were written in (``stores.files``), and otherwise into a caught file:

    <note's name>.dreamd-caught-j<journal>.txt     (-2, -3, … when one journal catches more)

It waits where dreamd's temp files wait: beside the note, or in the archive folder for an agent
that lists every file of its folder (DeepCode). No preset's listing loads it as a note (the others
list ``*.md`` only). dreamd never removes a caught file: ``dreamd resolve`` names it, and the
person reads it and deletes it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from daemon.stores import folders

MARKER = ".dreamd-caught"
_SUFFIX = ".txt"
_NAME = re.compile(r".+" + re.escape(MARKER) + r"(-j(\d+))?(-\d+)?" + re.escape(_SUFFIX) + r"\Z", re.S)
_NEW_FILE_MODE = 0o666  # as for every file dreamd creates: the umask or a default ACL decides
_MOST = 10_000  # caught files of one note and journal; a folder full of them is an error, not a loop


@dataclass(frozen=True)
class Caught:
    """Where bytes written to ``note`` during a swap went: ``how`` is ``back`` (appended to the
    note), ``file`` (a caught file holding just them), or, for a caught file holding a whole file,
    why: ``replaced`` (the file a save under the note's name replaced), ``held`` (dreamd's file,
    still open in another program), ``removed`` (the note's name was deleted), ``re-created``."""

    note: str
    where: str
    lines: int
    how: str

    def told(self) -> str:
        """What a person needs to know, for the end of an error line."""
        size = _lines(self.lines)
        told = {
            "back": f"nothing of it was overwritten, and what was written to it while dreamd swapped it back ({size}) is back at its end",
            "file": f"it is back as it was, but what was written to it meanwhile ({size}) landed in dreamd's file and is in {self.where}, not in {self.note}",
            "held": (f"it is back as it was, but dreamd's file, with what was written to it meanwhile ({size}), is still open in another program: "
                     f"it is kept as {self.where} (dreamd's text first), where what that program writes next lands too"),
            "replaced": f"a file was saved under its name meanwhile and is in place; the one it replaced ({size}) is kept as {self.where}",
            "removed": f"its name was removed meanwhile, so the file ({size}) is kept as {self.where}",
            "re-created": f"someone made a new file under its name meanwhile, so the one dreamd had moved away ({size}) is kept as {self.where}",
        }  # fmt: skip
        return told[self.how]


def lines(data: bytes) -> int:
    """Lines in ``data``, a last one without its newline counted too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def counted(data: bytes) -> str:
    """``3 lines``, ``1 line``: how much ``data`` is, as an error line says it."""
    return _lines(lines(data))


def _lines(n: int) -> str:
    return f"{n} line{'' if n == 1 else 's'}"


def beyond(data: bytes, ours: bytes) -> bytes:
    """What ``data`` holds besides ``ours``: what follows it, or all of it if it does not start with it."""
    return data[len(ours) :] if data.startswith(ours) else data


def beyond_known(data: bytes, known: Iterable[bytes]) -> bytes:
    """What a temp file holds that dreamd does not: nothing when it is one of the ``known`` bytes or
    the start of one (a write cut short); else what follows the longest one it starts with."""
    known = list(known)
    if any(blob.startswith(data) for blob in known):
        return b""
    return beyond(data, max((blob for blob in known if data.startswith(blob)), key=len, default=b""))


def name_for(note: str, tag: str, n: int = 1) -> str:
    """A caught file's name, for the note named ``note`` and the journal's ``tag`` (``j7-``)."""
    short = note.encode("utf-8", "surrogateescape")[:160].decode("utf-8", "ignore")  # room for the rest
    journal = f"-{tag.rstrip('-')}" if tag else ""
    return f"{short}{MARKER}{journal}{f'-{n}' if n > 1 else ''}{_SUFFIX}"


def is_caught_name(name: str, journal: int | None = None) -> bool:
    """Whether a file name is a caught file's (of that journal, when given)."""
    match = _NAME.match(name)
    return match is not None and (journal is None or match.group(2) == str(journal))


def write(folder: int, note: str, tag: str, data: bytes, mode: int | None = None) -> str:
    """A new caught file in ``folder`` holding ``data``, durably (file and folder fsynced); its
    name. ``mode``: the note's permission bits, so a private note's bytes stay private."""
    for n in range(1, _MOST):
        name = name_for(note, tag, n)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, _NEW_FILE_MODE, dir_fd=folder)
        except FileExistsError:
            continue
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.fsync(folder)
        return name
    raise FileExistsError(f"{_MOST} caught files of {note} already")


def move(folder: int, temp: str, note: str, tag: str) -> str:
    """Rename the file at ``temp`` to a caught file's name in the same folder, durably; its name.
    The file keeps its inode, so a program holding it open goes on writing into the caught file."""
    for n in range(1, _MOST):
        name = name_for(note, tag, n)
        try:
            folders.move_new(folder, temp, folder, name)
        except FileExistsError:
            continue
        os.fsync(folder)
        return name
    raise FileExistsError(f"{_MOST} caught files of {note} already")
