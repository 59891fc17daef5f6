"""Unified diffs from ``git diff --no-index --histogram``, which ``git apply`` accepts.

The files a change writes are laid out as ``a/<path>`` (before) and ``b/<path>`` (after) in
a private temporary folder, and one ``git diff --no-index --no-prefix a b`` compares the
two trees: the patch carries the store-relative paths a reviewer expects and applies with
``git apply`` at the store root. The temporary folder is outside every store and removed
at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from daemon.core.errors import DiffError
from daemon.core.proposals import Change

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
        for path in written:
            _place(Path(tmp), "a", path, change.before(path))
            _place(Path(tmp), "b", path, change.after(path))
        done = subprocess.run(
            [git, "-c", "core.quotepath=false", "diff", "--no-index", "--histogram",
             "--no-prefix", "--no-color", "--no-ext-diff", "--no-renames", "--", "a", "b"],
            cwd=tmp, env=env, capture_output=True, check=False,
        )  # fmt: skip
    if done.returncode not in (0, 1):
        raise DiffError(f"git diff failed on {', '.join(written)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode("utf-8")


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
