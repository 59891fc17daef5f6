"""A fault seam for the file system under a store: the Nth write step fails with an errno.

Inside ``failing(root, ...)`` the operations that change files (folder creation, a file
created, a write, an fsync, an exchange or rename, an unlink, a folder removed) are counted when they touch
``root`` and the chosen one fails as the kernel would fail it (ENOSPC, EIO, EDQUOT). Only the
test process is patched, only for the block; the code under test is the code that ships.
``persist`` makes every later step fail too: a disk that stays broken (a rollback cannot
finish either). ``recording(root)`` lists the steps without failing any.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from daemon.stores import folders


@dataclass
class Seam:
    """The steps seen so far, as (operation, store path); which one fails, with what."""

    root: str
    fail_at: int | None = None
    code: int = 0
    persist: bool = False
    steps: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)

    def where(self, fd: int | None, name: str | None = None) -> str | None:
        """The store path an operation touches (``fd`` a folder with ``name``, or a file), or None outside."""
        try:
            base = os.readlink(f"/proc/self/fd/{fd}") if fd is not None else ""
        except OSError:
            return None
        path = os.path.join(base, name) if name is not None else base.removesuffix(" (deleted)")
        if path != self.root and not path.startswith(self.root + "/"):
            return None
        return path[len(self.root) + 1 :]

    def step(self, operation: str, path: str | None) -> None:
        if path is None:
            return
        self.steps.append((operation, path))
        number = len(self.steps)
        if self.fail_at is not None and (number == self.fail_at or (self.persist and number > self.fail_at)):
            self.failed.append((operation, path))
            raise OSError(self.code, os.strerror(self.code), path)


def _patch(monkeypatch: pytest.MonkeyPatch, seam: Seam) -> None:
    real_mkdir, real_open, real_write, real_fsync = os.mkdir, os.open, os.write, os.fsync
    real_unlink, real_rename, real_rmdir = os.unlink, os.rename, os.rmdir
    real_exchange, real_move_new = folders.exchange, folders.move_new

    def mkdir(name, mode=0o777, *, dir_fd=None):  # noqa: ANN001, ANN202
        seam.step("mkdir", seam.where(dir_fd, name) if dir_fd is not None else None)
        return real_mkdir(name, mode, dir_fd=dir_fd)

    def open_(name, flags, mode=0o777, *, dir_fd=None):  # noqa: ANN001, ANN202
        if flags & os.O_CREAT and dir_fd is not None:
            seam.step("create", seam.where(dir_fd, name))
        return real_open(name, flags, mode, dir_fd=dir_fd)

    def write(fd, data):  # noqa: ANN001, ANN202
        seam.step("write", seam.where(fd))
        return real_write(fd, data)

    def fsync(fd):  # noqa: ANN001, ANN202
        seam.step("fsync", seam.where(fd))
        return real_fsync(fd)

    def unlink(name, *, dir_fd=None):  # noqa: ANN001, ANN202
        seam.step("unlink", seam.where(dir_fd, name) if dir_fd is not None else None)
        return real_unlink(name, dir_fd=dir_fd)

    def rmdir(name, *, dir_fd=None):  # noqa: ANN001, ANN202
        seam.step("rmdir", seam.where(dir_fd, name) if dir_fd is not None else None)
        return real_rmdir(name, dir_fd=dir_fd)

    def rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):  # noqa: ANN001, ANN202
        seam.step("rename", seam.where(dst_dir_fd, dst) if dst_dir_fd is not None else None)
        return real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    def exchange(src_fd, src, dst_fd, dst):  # noqa: ANN001, ANN202
        seam.step("exchange", seam.where(dst_fd, dst))
        return real_exchange(src_fd, src, dst_fd, dst)

    def move_new(src_fd, src, dst_fd, dst):  # noqa: ANN001, ANN202
        seam.step("rename", seam.where(dst_fd, dst))
        return real_move_new(src_fd, src, dst_fd, dst)

    replaced: list[tuple[object, str, Callable[..., object]]] = [
        (os, "mkdir", mkdir), (os, "open", open_), (os, "write", write), (os, "fsync", fsync), (os, "unlink", unlink),
        (os, "rename", rename), (os, "rmdir", rmdir), (folders, "exchange", exchange), (folders, "move_new", move_new),
    ]  # fmt: skip
    for target, name, function in replaced:
        monkeypatch.setattr(target, name, function)


@contextlib.contextmanager
def failing(root: Path, fail_at: int | None, code: int = 0, *, persist: bool = False) -> Iterator[Seam]:
    """Count the write steps under ``root``; step ``fail_at`` (1-based) fails with ``code``."""
    seam = Seam(os.path.realpath(root), fail_at, code, persist)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _patch(monkeypatch, seam)
        yield seam


def recording(root: Path) -> contextlib.AbstractContextManager[Seam]:
    """Count the write steps under ``root``, failing none."""
    return failing(root, None)
