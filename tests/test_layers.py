"""The layers of DESIGN.md, as imports: a test fails when one reaches past another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "daemon"

# folder (or module) -> daemon.* packages it must never import, at any depth of the file
FORBIDDEN = {
    "core": ("daemon.db", "daemon.stores", "daemon.service", "daemon.planners", "daemon.llm", "daemon.cli", "daemon.scheduler", "daemon.policies", "daemon.diffs", "daemon.config"),
    "cli": ("daemon.db", "daemon.stores", "daemon.planners", "daemon.llm", "daemon.diffs"),
    "scheduler": ("daemon.db", "daemon.stores", "daemon.planners", "daemon.llm", "daemon.diffs", "daemon.policies"),
    "db": ("daemon.service", "daemon.cli", "daemon.scheduler", "daemon.config", "daemon.planners"),
    "config.py": ("daemon.scheduler", "daemon.service", "daemon.cli", "daemon.db"),
}
CORE_IO = ("os", "subprocess", "sqlalchemy", "socket", "shutil", "tempfile")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def _files(part: str) -> list[Path]:
    target = PACKAGE / part
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_layer_imports_past_its_neighbours(part):
    crossings = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in _files(part)
        for name in sorted(_imports(path))
        if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN[part])
    ]
    assert crossings == []


def test_core_does_no_io():
    """core is pure: no files, processes, sockets or database."""
    found = [f"{p.relative_to(PACKAGE)} imports {n}" for p in _files("core") for n in sorted(_imports(p)) if n.split(".")[0] in CORE_IO]
    assert found == []
