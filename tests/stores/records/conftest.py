"""Fixtures for record-store tests: Dexto databases on disk, built as Dexto builds them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the dexto_db helper beside these tests

import dexto_db  # noqa: E402

T = 1_733_000_000_000  # ms: 2024-11-30, as Dexto's Date.now() writes it
BUILD = "The build runs with `make build` and the tests with `make test`; both need Node 20 and pnpm 9 installed first."

STANDARD = [
    dexto_db.memory("Ab3dE_fG-hIj", BUILD, T, tags=["build", "ci"], metadata={"source": "user"}),
    dexto_db.memory("Zz9yX8wV7uT6", BUILD, T + 1_000),
    dexto_db.memory("pInNeD000001", "Déjà vu: the café's API key lives in 1Password 🔑, never in the repo.", T + 2_000, metadata={"source": "system", "pinned": True, "team": "ops"}),
    dexto_db.memory("uNiQuE000002", "Deploys go out on Tuesdays after the 10:00 stand-up.", T + 3_000, tags=["release"]),
]


@pytest.fixture
def dexto(tmp_path: Path) -> Path:
    """A Dexto database with two exact duplicates, a pinned memory and a unique one."""
    folder = tmp_path / ".dexto" / "database"
    folder.mkdir(parents=True)
    return dexto_db.create(folder / "coding-agent.db", STANDARD, others={"prompt:custom:x": '{"name":"x"}'})
