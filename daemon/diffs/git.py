"""Unified diffs from ``git diff --no-index --histogram``, which ``git apply`` accepts.

Each touched file is diffed on its own between ``a/<path>`` and ``b/<path>`` in a private
temporary folder (``/dev/null`` for a side that does not exist), so the patch carries the
store-relative paths a reviewer expects and applies with ``git apply`` at the store root.
The temporary folder is outside every store and removed at once.
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
    """The whole change as one unified diff, files in path order."""
    git = git_binary()
    env = {**os.environ, **_GIT_ENV}
    chunks: list[str] = []
    with tempfile.TemporaryDirectory(prefix="dreamd-diff-") as tmp:
        for path in change.written:
            left = _place(Path(tmp), "a", path, change.before(path))
            right = _place(Path(tmp), "b", path, change.after(path))
            done = subprocess.run(
                [git, "-c", "core.quotepath=false", "diff", "--no-index", "--histogram",
                 "--no-prefix", "--no-color", "--no-ext-diff", "--no-renames", "--", left, right],
                cwd=tmp, env=env, capture_output=True, check=False,
            )  # fmt: skip
            if done.returncode not in (0, 1):
                raise DiffError(f"git diff failed on {path}: {done.stderr.decode(errors='replace').strip()}")
            chunks.append(done.stdout.decode("utf-8"))
    return "".join(chunks)


def _place(tmp: Path, side: str, path: str, data: bytes | None) -> str:
    if data is None:
        return os.devnull
    target = tmp / side / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return f"{side}/{path}"
