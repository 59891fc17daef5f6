"""The newest commit that touched each of some paths of a git repository, from git's metadata.

Used for the files a store's notes cite in the repository they describe (its workspace).
One ``git log --name-only`` walks the history once for a batch of paths; it reads commits
and trees from the object store, never a file of the working tree. Renames are not followed:
a renamed file is, for the note that cites its old name, a file that is gone.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from daemon.core.errors import ConfigError
from daemon.diffs.git import _GIT_ENV, git_binary

# (sha, committer time as aware UTC, subject)
Commit = tuple[str, dt.datetime, str]

BATCH = 200  # paths per git process: well within any command-line limit
_RECORD, _FIELD = "\x1e", "\x1f"


def last_commits(workspace: Path, paths: Sequence[str]) -> dict[str, Commit]:
    """Path -> the newest commit whose change lists it (a deletion included); paths git
    never tracked are left out. Paths are relative to the workspace, which may be a folder
    inside its repository. Raises ConfigError when git cannot read the history."""
    found: dict[str, Commit] = {}
    for start in range(0, len(paths), BATCH):
        found.update(_batch(workspace, paths[start : start + BATCH]))
    return found


def head_of(workspace: Path) -> str:
    """The workspace's HEAD commit, or "" for a repository with no commit yet; raises
    ConfigError when the workspace is in no git work tree."""
    _git(workspace, "rev-parse", "--is-inside-work-tree")
    return _git(workspace, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()


def _batch(workspace: Path, paths: Sequence[str]) -> dict[str, Commit]:
    wanted = set(paths)
    out = _git(workspace, "log", "--no-renames", "--name-only", "--relative", f"--format={_RECORD}%H{_FIELD}%ct{_FIELD}%s", "--", *(f":(literal){p}" for p in paths))
    found: dict[str, Commit] = {}
    for record in out.split(_RECORD)[1:]:
        head, _, names = record.partition("\n")
        sha, when, subject = head.split(_FIELD, 2)
        commit = (sha, dt.datetime.fromtimestamp(int(when), dt.timezone.utc), subject)
        for name in names.splitlines():
            if name in wanted and name not in found:
                found[name] = commit
    return found


def _git(workspace: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, **_GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"}
    command = [git_binary(), "-C", str(workspace), "-c", "core.quotePath=false", *args]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)  # noqa: S603 - fixed argv
    if check and result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"git exited {result.returncode}"
        raise ConfigError(f"workspace {workspace}: git cannot read its history ({detail})", hint="workspace names a folder of the git work tree the notes describe")
    return result.stdout
