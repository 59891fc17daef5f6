"""Commits on a branch of a person's repository, made with git's plumbing only.

Objects are written with ``hash-object -w``, trees are built in a temporary index (named by
``GIT_INDEX_FILE``, in a private folder outside the repository) with ``read-tree`` and
``update-index``, commits with ``commit-tree`` and the branch with ``update-ref``. None of
these reads or writes the work tree, the checked-out branch or the repository's own index,
so a review branch can be made while someone has uncommitted work in the same checkout.
git runs fenced (safe_git.py): the repository's hooks (reference-transaction, post-index-change),
fsmonitor and signature programs run nothing; blobs are hashed without filters. A repository
another user owns is refused, as git refuses it: dreamd writes only into the user's own.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from daemon.core.errors import ConfigError, StoreError
from daemon.diffs.safe_git import Git

NEW_FILE_MODE = "100644"
# commits say they were made by dreamd unless git's own variables name someone
IDENTITY = {"GIT_AUTHOR_NAME": "dreamd", "GIT_AUTHOR_EMAIL": "dreamd@localhost", "GIT_COMMITTER_NAME": "dreamd", "GIT_COMMITTER_EMAIL": "dreamd@localhost"}


def work_tree_top(folder: Path) -> Path:
    """The top folder of the git work tree ``folder`` is in; ConfigError outside one, or in
    a repository another user owns."""
    done = Git(folder).run("rev-parse", "--show-toplevel", env=_env())
    if b"dubious ownership" in done.stderr:
        raise ConfigError(f"{folder} is in a repository another user owns, so dreamd makes no branch in it", hint="run export as its owner, or use --dir DIR")
    if done.returncode != 0 or not done.stdout.strip():
        raise ConfigError(f"{folder} is not inside a git work tree, so there is no branch to make", hint="use --dir DIR to write patch files instead")
    return Path(done.stdout.decode("utf-8", "surrogateescape").strip()).resolve()


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """dreamd's identity unless git's own variables name someone, literal pathspecs, and ``extra``."""
    named = {key: os.environ[key] for key in IDENTITY if key in os.environ}
    return {**IDENTITY, **named, "GIT_LITERAL_PATHSPECS": "1", **(extra or {})}


@dataclass(frozen=True)
class Repository:
    """One work tree's repository, driven by plumbing commands run at its top folder."""

    top: Path

    @cached_property
    def git(self) -> Git:
        return Git(self.top)

    def attempt(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return self.git.run(*args, env=_env())

    def run(self, *args: str, data: bytes | None = None, env: Mapping[str, str] | None = None) -> bytes:
        done = self.git.run(*args, data=data, env=_env(env))
        if done.returncode != 0:
            raise StoreError(f"git {args[0]} failed in {self.top}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def head(self) -> str:
        """The commit HEAD names; ConfigError when the repository has none yet."""
        done = self.attempt("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        if done.returncode != 0:
            raise ConfigError(f"the repository at {self.top} has no commit yet to branch from", hint="commit the store first")
        return done.stdout.decode().strip()

    def check_new_branch(self, name: str) -> str:
        """``refs/heads/NAME`` for a valid branch name no branch has yet; ConfigError otherwise."""
        valid = self.attempt("check-ref-format", "--branch", name)
        if valid.returncode != 0 or name.startswith("-"):
            raise ConfigError(f"{name!r} is not a valid branch name")
        ref = f"refs/heads/{name}"
        exists = self.attempt("show-ref", "--verify", "--quiet", ref)
        if exists.returncode == 0:
            raise ConfigError(f"branch {name} exists already; nothing was changed", hint="choose another name, or delete it with git branch -D")
        return ref

    def write_blob(self, data: bytes) -> str:
        return self.run("hash-object", "-w", "--no-filters", "--stdin", data=data).decode().strip()

    def commit(self, tree: str, parent: str, message: str, *, authored: str, committed: str) -> str:
        dates = {"GIT_AUTHOR_DATE": authored, "GIT_COMMITTER_DATE": committed}
        return self.run("commit-tree", "--no-gpg-sign", tree, "-p", parent, "-F", "-", data=message.encode("utf-8"), env=dates).decode().strip()

    def create_branch(self, ref: str, commit: str) -> None:
        """Point ``ref`` at ``commit`` only if it still does not exist (the empty old value)."""
        self.run("update-ref", "-m", "dreamd export", ref, commit, "")

    @contextmanager
    def scratch_index(self, commit: str) -> Iterator[ScratchIndex]:
        """A temporary index holding ``commit``'s tree, removed afterwards."""
        with tempfile.TemporaryDirectory(prefix="dreamd-index-") as folder:
            index = ScratchIndex(self, {"GIT_INDEX_FILE": str(Path(folder) / "index")})
            self.run("read-tree", commit, env=index.env)
            yield index


@dataclass(frozen=True)
class ScratchIndex:
    """A temporary index: the tree of the next commit, edited file by file."""

    repo: Repository
    env: dict[str, str]

    def entry(self, path: str) -> tuple[str, bytes] | None:
        """(mode, bytes) of ``path`` in this index, or None when it holds no such file."""
        listed = self.repo.run("ls-files", "--stage", "-z", "--", path, env=self.env)
        if not listed:
            return None
        mode, sha = listed.split(b" ", 2)[:2]
        return mode.decode(), self.repo.run("cat-file", "blob", sha.decode())

    def put(self, path: str, data: bytes, mode: str = NEW_FILE_MODE) -> None:
        blob = self.repo.write_blob(data)
        entry = f"{mode} {blob}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"
        self.repo.run("update-index", "-z", "--index-info", data=entry, env=self.env)

    def remove(self, path: str) -> None:
        self.repo.run("update-index", "--force-remove", "--", path, env=self.env)

    def write_tree(self) -> str:
        return self.repo.run("write-tree", env=self.env).decode().strip()
