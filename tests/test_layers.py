"""The layers of DESIGN.md, as imports: a test fails when one reaches past another."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "daemon"

# folder (or module) -> daemon.* packages it must never import, at any depth of the file
FORBIDDEN = {
    "core": ("daemon.db", "daemon.stores", "daemon.service", "daemon.planners", "daemon.llm", "daemon.cli", "daemon.scheduler", "daemon.policies", "daemon.diffs", "daemon.config"),
    "cli": ("daemon.db", "daemon.stores", "daemon.planners", "daemon.llm", "daemon.diffs"),
    "scheduler": ("daemon.db", "daemon.stores", "daemon.planners", "daemon.llm", "daemon.diffs", "daemon.policies"),
    "db": ("daemon.service", "daemon.cli", "daemon.scheduler", "daemon.config", "daemon.planners", "daemon.evaluation"),
    "service": ("daemon.cli", "daemon.scheduler", "daemon.evaluation"),
    "evaluation": ("daemon.cli", "daemon.scheduler"),
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


ROOMS = ("passes", "apply", "review")  # daemon/service/<room>/: one job each, offered through a face


def _room_of(path: Path) -> str | None:
    parts = path.relative_to(PACKAGE).parts
    return parts[1] if parts[0] == "service" and len(parts) > 2 and parts[1] in ROOMS else None


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_of_the_service_is_entered_only_through_its_face(room):
    """Outside daemon/service/<room>/, code imports only the names its ``__init__`` offers, never a module behind them."""
    package = f"daemon.service.{room}"
    offered = set(dir(importlib.import_module(package)))
    crossings = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if _room_of(path) == room:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                crossings += [f"{path.relative_to(PACKAGE)} takes {a.name}" for a in node.names if a.name not in offered]
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            crossings += [f"{path.relative_to(PACKAGE)} imports {n}" for n in names if n.startswith(package + ".")]
    assert crossings == []


@pytest.mark.parametrize("room", (*ROOMS, "evaluation"))
def test_a_face_offers_what_its_modules_define_and_no_name_of_a_module(room):
    """Every offered name resolves; none is also a module of the room (an imported module would shadow the name)."""
    package = "daemon.evaluation" if room == "evaluation" else f"daemon.service.{room}"
    face = importlib.import_module(package)
    modules = {p.stem for p in (PACKAGE / package.split(".", 1)[1].replace(".", "/")).glob("*.py")}
    assert [n for n in dir(face) if n in modules] == []
    assert all(getattr(face, n) is not None for n in dir(face))
