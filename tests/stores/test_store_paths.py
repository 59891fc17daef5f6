"""Path safety: nothing outside the store root is named, read or written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from daemon.core.errors import StoreError, UnsafePathError
from daemon.stores.files import read_file, remove_file, write_atomic
from daemon.stores.paths import safe_relpath, store_root


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("a.md", "a.md"),
        ("sub/a.md", "sub/a.md"),
        ("./a.md", "a.md"),
        ("sub/./a.md", "sub/a.md"),
        (".dreamd-archive/a.md", ".dreamd-archive/a.md"),
        ("..a.md", "..a.md"),
        ("a..md", "a..md"),
    ],
)
def test_safe_relpath_accepts(rel: str, expected: str) -> None:
    """Relative POSIX paths are accepted and "." components dropped."""
    assert safe_relpath(rel) == expected


@pytest.mark.parametrize(
    "rel",
    [
        "",
        ".",
        "/etc/passwd",
        "//server/share",
        "..",
        "../a.md",
        "sub/../../a.md",
        "sub/..",
        "a//b.md",
        "sub/",
        "a\0b.md",
        "sub\\a.md",
        "..\\a.md",
        "C:/a.md",
        "c:a.md",
    ],
)
def test_safe_relpath_refuses(rel: str) -> None:
    """Absolute, climbing, empty, NUL, backslash and drive-letter paths are refused."""
    with pytest.raises(UnsafePathError):
        safe_relpath(rel)


def test_a_write_creates_missing_folders_under_the_root(tmp_path: Path) -> None:
    """A path whose folders do not exist yet is written under the root."""
    write_atomic(tmp_path, "new/dir/a.md", b"x")
    assert (tmp_path / "new/dir/a.md").read_bytes() == b"x"


def test_a_symlinked_file_is_refused(tmp_path: Path) -> None:
    """A symlink as the final component is refused, even one pointing inside the store."""
    (tmp_path / "real.md").write_text("x")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(UnsafePathError, match="symlink"):
        read_file(tmp_path, "link.md")
    with pytest.raises(UnsafePathError, match="symlink"):
        write_atomic(tmp_path, "link.md", b"y")
    assert (tmp_path / "real.md").read_text() == "x"


def test_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    """A symlinked folder anywhere along the path is refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "store"
    root.mkdir()
    (root / "sub").symlink_to(outside)
    for action in (lambda: read_file(root, "sub/a.md"), lambda: write_atomic(root, "sub/a.md", b"x"), lambda: remove_file(root, "sub/a.md")):
        with pytest.raises(UnsafePathError):
            action()
    assert list(outside.iterdir()) == []


def test_store_root_may_be_a_symlink(tmp_path: Path) -> None:
    """The configured root may be reached through a symlink; it is resolved once."""
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert store_root(tmp_path / "alias") == (tmp_path / "real").resolve()


@pytest.mark.parametrize("name", ["missing", "file.md"])
def test_store_root_must_be_a_folder(tmp_path: Path, name: str) -> None:
    """A missing root or a root that is a file is a StoreError."""
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(StoreError, match=name):
        store_root(tmp_path / name)


def test_store_root_symlink_loop(tmp_path: Path) -> None:
    """A root that is a symlink loop is a StoreError, not a crash."""
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.raises(StoreError):
        store_root(tmp_path / "loop")
