"""The newest commit that touched each of some paths of a git repository, from git's metadata.

Used for the files a store's notes cite in the repository they describe (its workspace).
One ``git log --name-only`` walks the history once for a batch of paths; it reads commits
and trees from the object store, never a file of the working tree. Renames are not followed:
a renamed file is, for the note that cites its old name, a file that is gone. git runs fenced
(safe_git.py): the workspace's config, hooks and signature programs run nothing, and any user
may own the workspace, since it is only read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from daemon.core.errors import ConfigError
from daemon.diffs.safe_git import Git

# (sha, committer time as aware UTC, subject)
Commit = tuple[str, dt.datetime, str]

BATCH = 200  # paths per git process: well within any command-line limit
_RECORD, _FIELD = "\x1e", "\x1f"


def last_commits(workspace: Path, paths: Sequence[str]) -> dict[str, Commit]:
    """Path -> the newest commit whose change lists it (a deletion included); paths git
    never tracked are left out. Paths are relative to the workspace, which may be a folder
    inside its repository. Raises ConfigError when git cannot read the history."""
    found: dict[str, Commit] = {}
    git = Git.reading(workspace)
    for start in range(0, len(paths), BATCH):
        found.update(_batch(git, paths[start : start + BATCH]))
    return found


def head_of(workspace: Path) -> str:
    """The workspace's HEAD commit, or "" for a repository with no commit yet; raises
    ConfigError when the workspace is in no git work tree."""
    git = Git.reading(workspace)
    _git(git, "rev-parse", "--is-inside-work-tree")
    return _git(git, "rev-parse", "--verify", "--quiet", "HEAD", check=False).strip()


def _batch(git: Git, paths: Sequence[str]) -> dict[str, Commit]:
    wanted = set(paths)
    log = ("log", "--no-renames", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--name-only", "--relative")
    out = _git(git, *log, f"--format={_RECORD}%H{_FIELD}%ct{_FIELD}%s", "--", *(f":(literal){p}" for p in paths))
    found: dict[str, Commit] = {}
    for record in out.split(_RECORD)[1:]:
        head, _, names = record.partition("\n")
        sha, when, subject = head.split(_FIELD, 2)
        commit = (sha, dt.datetime.fromtimestamp(int(when), dt.timezone.utc), subject)
        for name in names.splitlines():
            if name in wanted and name not in found:
                found[name] = commit
    return found


def _git(git: Git, *args: str, check: bool = True) -> str:
    result = git.run("-c", "core.quotePath=false", *args)
    stderr = result.stderr.decode("utf-8", "replace").strip()
    if check and result.returncode != 0:
        detail = stderr.splitlines()[-1] if stderr else f"git exited {result.returncode}"
        raise ConfigError(f"workspace {git.cwd}: git cannot read its history ({detail})", hint="workspace names a folder of the git work tree the notes describe")
    return result.stdout.decode("utf-8", "replace")
