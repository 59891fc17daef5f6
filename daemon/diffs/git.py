"""Unified diffs from ``git diff --no-index --histogram``, which ``git apply`` accepts.

The files a change writes are laid out as ``a/<path>`` (before) and ``b/<path>`` (after) in
a private temporary folder, and one ``git diff --no-index --no-prefix -M a b`` compares the
two trees. A note moved into the archive is found as a rename, so the reviewer reads its
real edit (the retirement marker) instead of a whole-file delete and add. The headers are
then written as git writes them in a repository (``diff --git a/X b/X`` for every file,
``rename from X``/``rename to Y`` with store paths), so the patch carries the store-relative
paths a reviewer expects and applies with ``git apply`` at the store root. The temporary
folder is outside every store and removed at once; git runs there fenced (safe_git.py), and
looks for no repository above it.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from daemon.core.errors import DiffError
from daemon.core.patch import unquote_git
from daemon.core.proposals import Change
from daemon.diffs.safe_git import Git
from daemon.diffs.window import MIN_BYTES, Window, restore, window

_PLAIN_PATH = re.compile(r"^[\w./@+-]+$")  # printed by git as is, never quoted
_SECTION = re.compile(r"^diff --git ", re.MULTILINE)

def unified_diff(change: Change) -> str:
    """The whole change as one unified diff, files in path order, from one git process."""
    return unified_diffs([change])[0]


def unified_diffs(changes: list[Change]) -> list[str]:
    """Each change's unified diff, as ``unified_diff`` makes it, from one git process for all
    of them: change ``i`` is laid out under ``a/i/`` and ``b/i/``, and the output is cut back
    into one diff per change. A rename git pairs across two changes (two proposals moving the
    same note) belongs to neither: those changes are diffed again on their own."""
    with lay_out(changes) as laid:
        return laid.diffs()


class Layout:
    """Changes laid out for one ``git diff`` in a scratch folder (``lay_out``), and their
    diffs once git has compared them (``diffs``); the folder goes with ``close``.

    The two steps may run on different threads: a pass writes the files on its own thread
    and runs git on another while it builds the next batch. Writing thousands of small files
    on the other thread cost more than the writing: each system call let the busy building
    thread keep the interpreter for up to a switch interval (1.2 s over a first pass's 3,534
    files, where 0.1 s on the building thread itself)."""

    def __init__(self, changes: list[Change]) -> None:
        self.changes = changes
        self.placed = [i for i, change in enumerate(changes) if change.written]
        self.windows: dict[int, dict[str, Window]] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if not self.placed:
            return
        need = sum(len(d) for i in self.placed for d in changes[i].data.values())
        self._tmp = tempfile.TemporaryDirectory(prefix="dreamd-diff-", dir=scratch_dir(need))
        try:
            self._write(self._tmp.name)
        except BaseException:
            self.close()
            raise

    def _write(self, tmp: str) -> None:
        made: set[str] = set()  # folders laid out already: a batch writes thousands of files into a few
        for side in ("a", "b"):
            os.mkdir(os.path.join(tmp, side))
        for i in self.placed:
            change, found = self.changes[i], self.windows.setdefault(i, {})
            for path in change.written:
                before, after = change.before(path), change.after(path)
                win = _large_edit(path, before, after)
                if win is not None:
                    found[path], before, after = win, win.before, win.after
                _place(tmp, "a", f"{i}/{path}", before, made)
                _place(tmp, "b", f"{i}/{path}", after, made)

    def diffs(self) -> list[str]:
        """Each change's diff (DiffError when git fails on the batch)."""
        if self._tmp is None:
            return [""] * len(self.changes)
        done = Git.scratch(Path(self._tmp.name)).run(
            "-c", "core.quotepath=false", "diff", "--no-index", "--histogram", "--no-prefix",
            "--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", "--", "a", "b",
        )  # fmt: skip
        if done.returncode not in (0, 1):
            names = ", ".join(p for i in self.placed for p in self.changes[i].written)
            raise DiffError(f"git diff failed on {names}: {done.stderr.decode(errors='replace').strip()}")
        sections, crossed = _by_change(done.stdout.decode("utf-8"))
        out = []
        for i, change in enumerate(self.changes):
            if i not in sections and i not in crossed:
                out.append("")
            elif i in crossed:
                out.append(unified_diffs([change])[0])
            else:
                text = repository_headers("".join(sections[i]))
                out.append(_whole_files(text, self.windows[i]) if self.windows[i] else text)
        return out

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Layout:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def lay_out(changes: list[Change]) -> Layout:
    """The changes' files written out for one ``git diff`` (see ``Layout``)."""
    return Layout(changes)


SHM = "/dev/shm"


def scratch_dir(need: int) -> str | None:
    """Where the files git compares are laid out: memory (``/dev/shm``) when it has room for
    four times ``need`` bytes and 256 MB more, else the system's temporary folder. Thousands
    of small files written and removed per pass cost far less there than on a disk."""
    try:
        free = os.statvfs(SHM)
    except OSError:
        return None
    room = free.f_bavail * free.f_frsize
    return SHM if room >= 4 * need + (256 << 20) and os.access(SHM, os.W_OK | os.X_OK) else None


_NUMBERED = re.compile(r'(?<![^ "])("?)([ab])/(\d+)/')


def _by_change(text: str) -> tuple[dict[int, list[str]], set[int]]:
    """The sections of a batch's diff per change, its ``i/`` folder taken out of every path
    of the header (``a/3/x.md`` is ``a/x.md`` of change 3); and the changes a section mixes."""
    starts = [m.start() for m in _SECTION.finditer(text)] + [len(text)]
    sections: dict[int, list[str]] = {}
    crossed: set[int] = set()
    for start, end in zip(starts, starts[1:]):
        section = text[start:end]
        head, sep, body = section.partition("\n@@")
        owners = {int(m.group(3)) for m in _NUMBERED.finditer(head)}
        if len(owners) != 1:
            crossed |= owners
            continue
        head = _NUMBERED.sub(lambda m: f"{m.group(1)}{m.group(2)}/", head)
        sections.setdefault(owners.pop(), []).append(head + sep + body)
    return sections, crossed


_RENAME = re.compile(r"^(rename|copy) (from|to) (.*)$")


def repository_headers(text: str) -> str:
    """Rewrite ``--no-index`` headers over the ``a``/``b`` folders as a repository's diff has
    them: ``diff --git a/X b/Y`` (an added file is not ``b/X b/X``, a deleted one not
    ``a/X a/X``) and ``rename from X``/``rename to Y`` without the folder names."""
    starts = [m.start() for m in _SECTION.finditer(text)] + [len(text)]
    out = [text[: starts[0]]]
    for start, end in zip(starts, starts[1:]):
        out.append(_section_headers(text[start:end]))
    return "".join(out)


def _section_headers(section: str) -> str:
    lines = section.split("\n")
    source = target = None
    for line in lines[1:]:
        if line.startswith(("--- ", "@@")):
            break
        found = _RENAME.match(line)
        if found:
            path = _below_side(found.group(3))
            source, target = (path, target) if found.group(2) == "from" else (source, path)
    if source is None or target is None:  # no rename: one path, written twice on the first line
        rest = lines[0][len("diff --git ") :]
        source = target = _below_side(rest[: (len(rest) - 1) // 2])
    lines[0] = f"diff --git {quote_git('a/' + source)} {quote_git('b/' + target)}"
    for i, line in enumerate(lines[1:], start=1):
        if line.startswith(("--- ", "@@")):
            break
        found = _RENAME.match(line)
        if found:
            lines[i] = f"{found.group(1)} {found.group(2)} {quote_git(source if found.group(2) == 'from' else target)}"
    return "\n".join(lines)


def _below_side(token: str) -> str:
    """A path as git printed it under the ``a`` or ``b`` folder, without that folder."""
    return unquote_git(token).split("/", 1)[1]


def quote_git(path: str) -> str:
    """``path`` as git writes it in a header: C-quoted when it holds a quote, a backslash or a
    control character (non-ASCII stays as is: ``core.quotepath=false``)."""
    if not _NEEDS_QUOTES.search(path):
        return path
    return '"' + _NEEDS_QUOTES.sub(lambda m: _QUOTED.get(m.group(), f"\\{ord(m.group()):03o}"), path) + '"'


_NEEDS_QUOTES = re.compile(r'["\\\x00-\x1f\x7f]')
_QUOTED = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _large_edit(path: str, before: bytes | None, after: bytes | None) -> Window | None:
    """A window for a large file edited in place (see window.py), else None."""
    if before is None or after is None or len(before) < MIN_BYTES or not _PLAIN_PATH.match(path):
        return None
    return window(before, after)


def _whole_files(text: str, windows: dict[str, Window]) -> str:
    """The diff of windows rewritten file by file as the diff of the whole files."""
    starts = [m.start() for m in _SECTION.finditer(text)] + [len(text)]
    out = [text[: starts[0]]]
    for start, end in zip(starts, starts[1:]):
        section = text[start:end]
        header = section.split("\n", 1)[0]
        path = next((p for p in windows if header == f"diff --git a/{p} b/{p}"), None)
        out.append(restore(section, windows[path]) if path else section)
    return "".join(out)


def _place(tmp: str, side: str, path: str, data: bytes | None, made: set[str]) -> None:
    if data is None:
        return
    target = os.path.join(tmp, side, path)
    folder = os.path.dirname(target)
    if folder not in made:
        os.makedirs(folder, exist_ok=True)
        made.add(folder)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:  # no buffered file object: its set-up asks the system more than the write does
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
