"""Unified diffs from ``git diff --no-index --histogram``, which ``git apply`` accepts.

The files a change writes are laid out as ``a/<path>`` (before) and ``b/<path>`` (after) in
a private temporary folder, and one ``git diff --no-index --no-prefix a b`` compares the
two trees: the patch carries the store-relative paths a reviewer expects and applies with
``git apply`` at the store root. The temporary folder is outside every store and removed
at once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from daemon.core.errors import DiffError
from daemon.core.proposals import Change
from daemon.diffs.window import MIN_BYTES, Window, restore, window

_PLAIN_PATH = re.compile(r"^[\w./@+-]+$")  # printed by git as is, never quoted
_SECTION = re.compile(r"^diff --git ", re.MULTILINE)

_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


def git_binary() -> str:
    found = shutil.which("git")
    if not found:
        raise DiffError("git is not installed", hint="install git: dreamd uses its diff engine")
    return found


def unified_diff(change: Change) -> str:
    """The whole change as one unified diff, files in path order, from one git process."""
    git = git_binary()
    env = {**os.environ, **_GIT_ENV}
    written = change.written
    if not written:
        return ""
    with tempfile.TemporaryDirectory(prefix="dreamd-diff-") as tmp:
        for side in ("a", "b"):
            os.mkdir(os.path.join(tmp, side))
        windows: dict[str, Window] = {}
        for path in written:
            before, after = change.before(path), change.after(path)
            win = _large_edit(path, before, after)
            if win is not None:
                windows[path], before, after = win, win.before, win.after
            _place(Path(tmp), "a", path, before)
            _place(Path(tmp), "b", path, after)
        done = subprocess.run(
            [git, "-c", "core.quotepath=false", "diff", "--no-index", "--histogram",
             "--no-prefix", "--no-color", "--no-ext-diff", "--no-renames", "--", "a", "b"],
            cwd=tmp, env=env, capture_output=True, check=False,
        )  # fmt: skip
    if done.returncode not in (0, 1):
        raise DiffError(f"git diff failed on {', '.join(written)}: {done.stderr.decode(errors='replace').strip()}")
    text = done.stdout.decode("utf-8")
    return _whole_files(text, windows) if windows else text


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


def _place(tmp: Path, side: str, path: str, data: bytes | None) -> None:
    if data is None:
        return
    target = tmp / side / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def reapply(diff: str, path: str, current: bytes) -> bytes | None:
    """``current`` with the diff's hunks for ``path`` applied by ``git apply``, or None.

    git applies a hunk only where all its context and removed lines match exactly
    (an offset is allowed, fuzz is not), so the reviewed edit lands unchanged on a file
    that others edited elsewhere, or not at all.
    """
    git = git_binary()
    env = {**os.environ, **_GIT_ENV}
    with tempfile.TemporaryDirectory(prefix="dreamd-apply-") as tmp:
        _place(Path(tmp), "tree", path, current)
        patch = Path(tmp) / "change.diff"
        patch.write_text(diff, encoding="utf-8")
        done = subprocess.run(
            [git, "apply", "-C0", "--include", path, "--whitespace=nowarn", str(patch)],
            cwd=Path(tmp) / "tree", env={**env, "GIT_CEILING_DIRECTORIES": tmp}, capture_output=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            return None
        return (Path(tmp) / "tree" / path).read_bytes()
