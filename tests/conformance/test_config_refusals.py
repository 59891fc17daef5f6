"""Settings under which an agent would read retired notes as live are refused at config load.

No agent of the four reads frontmatter status (oracles.py), so a note retired in place stays
a live note to it; Serena and Claude Code list every folder of their notes, hidden ones too,
so an archive inside their notes folder would be listed as well. And the archive each
preset uses by default must be out of its agent's sight, by the agent's own rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import Config, parse_config
from daemon.core.errors import ConfigError

from .oracles import ClaudeCode, Cline, DeepCode, Serena

ORACLES = {"deepcode": DeepCode, "claude-code": ClaudeCode, "serena": Serena, "cline": Cline}


def _config(root: Path, preset: str, settings: dict | None = None) -> Config:
    entry = {"name": "notes", "path": str(root), "preset": preset} | ({"settings": settings} if settings else {})
    return parse_config({"stores": [entry]})


@pytest.mark.parametrize("preset", sorted(ORACLES))
def test_retiring_in_place_is_refused(tmp_path, preset: str):
    """retire_mode = "in-place" is refused for every agent preset: the agent would go on reading the note as current."""
    with pytest.raises(ConfigError, match="in-place"):
        _config(tmp_path, preset, {"retire_mode": "in-place"})


@pytest.mark.parametrize("archive", [".dreamd-archive", "archive", ".old"])
@pytest.mark.parametrize("preset", ["serena", "claude-code"])
def test_an_archive_inside_a_folder_the_agent_lists_at_every_depth_is_refused(tmp_path, preset: str, archive: str):
    """An archive_root inside the notes folder is refused for Serena and Claude Code, whose listings read every folder."""
    with pytest.raises(ConfigError, match="inside the notes folder"):
        _config(tmp_path, preset, {"archive_root": archive})


@pytest.mark.parametrize("preset", sorted(ORACLES))
def test_the_default_archive_root_is_out_of_the_agents_sight(make_store, preset: str):
    """A note in the preset's default archive root is not listed by the agent's own rule (inside for DeepCode and Cline, beside for the others)."""
    root = make_store({"live.md": "x\n"}, name=f"{preset}/notes")
    store = _config(root, preset).store("notes")
    archive = store.settings.archive_root.replace("{notes}", root.name)
    (root / archive / "sub").mkdir(parents=True)
    (root / archive / "sub" / "retired.md").write_text("---\nstatus: superseded\n---\nold\n")
    oracle = ORACLES[preset]()
    assert oracle.archive_root(root).resolve() == (root / archive).resolve()
    assert oracle.visible_notes(root) == {"live.md"}


def test_serena_accepts_an_inside_archive_it_is_told_to_ignore(make_store):
    """Told through ignored_memory_patterns that Serena ignores the archive, an archive inside the memories folder is accepted, and Serena does not list it."""
    patterns = [r"\.dreamd-archive/.*"]
    root = make_store({"core.md": "x\n", ".dreamd-archive/old.md": "x\n"}, name="serena/memories")
    store = _config(root, "serena", {"archive_root": ".dreamd-archive", "ignored_memory_patterns": patterns}).store("notes")
    assert store.settings.archive_root == ".dreamd-archive"
    assert Serena(ignored=patterns).visible_notes(root) == {"core.md"}
