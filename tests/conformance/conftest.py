"""Fixtures of the conformance suite: each preset's folder on disk, its config, its oracle, a session."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from . import fixtures, oracles
from .harness import Session, config_of

SERENA_HIDES_ARCHIVE = [r"\.dreamd-archive/.*"]


@dataclass(frozen=True)
class Setup:
    """A preset as these tests drive it: its folder, its store settings, its oracle."""

    preset: str
    folder: Callable[[], fixtures.Folder]
    oracle: Callable[[], oracles.Oracle]
    settings: dict | None = None


SETUPS = {
    "serena": Setup("serena", fixtures.serena, oracles.Serena),
    # Serena told (as its project.yml would) to ignore an archive kept inside the memories folder
    "serena-ignoring-archive": Setup(
        "serena",
        fixtures.serena,
        lambda: oracles.Serena(ignored=SERENA_HIDES_ARCHIVE, archive_inside=True),
        {"archive_root": ".dreamd-archive", "ignored_memory_patterns": SERENA_HIDES_ARCHIVE},
    ),
    "claude-code": Setup("claude-code", fixtures.claude_code, oracles.ClaudeCode),
    "deepcode": Setup("deepcode", fixtures.deepcode, oracles.DeepCode),
    "cline": Setup("cline", fixtures.cline, oracles.Cline),
}


@pytest.fixture
def folder_of(make_store: Callable[..., Path]) -> Callable[[str], Path]:
    """Factory: write a setup's folder (notes and the files around them); returns the notes root."""

    def make(name: str) -> Path:
        folder = SETUPS[name].folder()
        root = make_store(folder.notes, name=folder.notes_at)
        make_store(folder.around, name=posixpath.dirname(folder.notes_at))
        return root

    return make


@pytest.fixture
def session_of(folder_of: Callable[[str], Path], make_app: Callable[..., object], clock: object) -> Callable[[str], Session]:
    """Factory: a setup's folder with a configured store, an App and its oracle watching."""

    def make(name: str) -> Session:
        setup = SETUPS[name]
        root = folder_of(name)
        config = config_of(name, root, setup.preset, setup.settings)
        app = make_app(config)
        oracle = setup.oracle()
        allowed = frozenset()
        if isinstance(oracle, oracles.Cline):  # index lines whose task file was missing from the start
            allowed = frozenset(e.key for e in oracle.index_entries(root) if not e.resolves)
        return Session(app, config.store(name), clock, oracle, allowed)

    return make
