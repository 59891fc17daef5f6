"""A labeled store's workspace as a real git repository, built fresh for one eval pass.

Citation checks read a repository's git history (which files exist, when each last
changed), so an eval of them needs one; committing a nested ``.git`` into the corpus is
not possible, so the labels describe the commits (``[[workspace]]``: when, what is
written, what is deleted) and this module makes them with the git command line, each with
its labeled author and committer date. Nothing outside ``into`` is read or written: git runs
fenced (diffs/safe_git.py), so the user's and the system's configuration are ignored, no hook
or signature program runs, and git looks for no repository above ``into``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from daemon.core.errors import ConfigError, DiffError
from daemon.diffs.safe_git import Git
from daemon.evaluation.scoring import Commit

IDENTITY = ("-c", "user.name=dreamd eval", "-c", "user.email=eval@dreamd.invalid")


def build_repo(commits: Sequence[Commit], into: Path) -> Path:
    """``into`` (an empty or missing folder) as a repository holding ``commits`` in order."""
    into.mkdir(parents=True, exist_ok=True)
    _git(into, "init", "--quiet", "--initial-branch=main")
    for commit in commits:
        for path, text in commit.write:
            (into / path).parent.mkdir(parents=True, exist_ok=True)
            (into / path).write_text(text, encoding="utf-8")
        for path in commit.delete:
            if not (into / path).is_file():
                raise ConfigError(f"the labeled workspace deletes {path}, which no earlier commit wrote")
            (into / path).unlink()
        _git(into, "add", "--all")
        stamp = commit.at.isoformat()
        _git(into, *IDENTITY, "commit", "--quiet", "-m", commit.message, env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    return into


def _git(where: Path, *args: str, env: dict[str, str] | None = None) -> None:
    try:
        done = Git.scratch(where).run(*args, env=env)
    except DiffError:
        raise ConfigError("a labeled workspace needs git, and it is not installed") from None
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace").strip()
        raise ConfigError(f"building the labeled workspace failed: git {args[0]}: {stderr[:200]}")
