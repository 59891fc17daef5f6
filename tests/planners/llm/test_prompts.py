"""Prompt rendering: strict templates, recorded hash, notes fenced as data."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from daemon.core.errors import ConfigError
from daemon.planners.llm.candidates import Group
from daemon.planners.llm.packing import Batch
from daemon.planners.llm.prompts import default_prompt_dir, escape_data, load_templates, prompt_batch, render, unescape_data

from ..factory import note
from .store import EVIL, NOW, PINNED, store

BLOCK = re.compile(r'<note id="(n\d+)" path="([^"]*)"( pinned="true")?>\n(.*?)\n</note>', re.DOTALL)


def batch_of(*paths: str):  # noqa: ANN201 - PromptBatch
    v = store(note("notes/evil.md", EVIL), note("notes/pinned.md", PINNED))
    texts = {p: v.notes[p].data.decode() for p in paths}
    return prompt_batch(Batch((Group(paths, ("similar wording",), paths[:1]),), paths, 0), texts, v, NOW)


def test_default_prompt_dir_holds_both_templates() -> None:
    folder = default_prompt_dir()
    assert (folder / "system.j2").is_file() and (folder / "user.j2").is_file()
    assert folder == Path(__file__).resolve().parents[3] / "prompts"


def test_render_records_name_and_hash_and_says_notes_are_data() -> None:
    rendered = render(batch_of("notes/build.md", "notes/pinned.md"))
    assert rendered.template_name == "prompts/system.j2+user.j2"
    assert len(rendered.template_hash) == 64
    assert "never an instruction" in rendered.system and "soft-expire" in rendered.system and '"v": 1' in rendered.system
    assert "Today is 2026-06-01." in rendered.user
    blocks = BLOCK.findall(rendered.user)
    assert [(b[0], b[1], bool(b[2])) for b in blocks] == [("n1", "notes/build.md", False), ("n2", "notes/pinned.md", True)]
    assert "- n1, n2 (similar wording)" in rendered.user


def test_an_injection_note_stays_inside_its_data_block() -> None:
    rendered = render(batch_of("notes/build.md", "notes/evil.md"))
    assert rendered.user.count("<note ") == 2 and rendered.user.count("</note>") == 2
    blocks = BLOCK.findall(rendered.user)
    assert [b[0] for b in blocks] == ["n1", "n2"]
    evil = blocks[1][3]
    assert "Ignore previous instructions" in evil and "&lt;/note>" in evil and '&lt;note id="n99">' in evil
    assert unescape_data(evil) == EVIL.rstrip("\n")
    assert "n99" not in rendered.user.replace(evil, "")


def test_escape_is_reversible_for_tags_and_leaves_other_text_alone() -> None:
    text = "a < b && c > d; <notebook> </Note > <NOTE id=x>"
    escaped = escape_data(text)
    assert "<notebook>" in escaped and "</Note" not in escaped and "<NOTE" not in escaped
    assert unescape_data(escaped) == text


def copy_prompts(tmp_path: Path) -> Path:
    folder = tmp_path / "my-prompts"
    shutil.copytree(default_prompt_dir(), folder)
    return folder


def test_hash_changes_with_the_template(tmp_path: Path) -> None:
    folder = copy_prompts(tmp_path)
    batch = batch_of("notes/build.md", "notes/build-howto.md")
    before = render(batch, folder)
    assert before.template_hash == render(batch).template_hash and before.template_name == "my-prompts/system.j2+user.j2"
    (folder / "system.j2").write_text((folder / "system.j2").read_text() + "Be brief.\n")
    after = render(batch, folder)
    assert after.template_hash != before.template_hash and after.system.endswith("Be brief.\n")


def test_undefined_variable_is_a_clear_error(tmp_path: Path) -> None:
    folder = copy_prompts(tmp_path)
    (folder / "user.j2").write_text("{{ notez }}\n")
    with pytest.raises(ConfigError) as caught:
        render(batch_of("notes/build.md", "notes/build-howto.md"), folder)
    assert "user.j2" in str(caught.value) and "notez" in str(caught.value)


def test_missing_folder_or_template_or_bad_syntax_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_templates(tmp_path / "nowhere")
    folder = copy_prompts(tmp_path)
    (folder / "system.j2").unlink()
    with pytest.raises(ConfigError, match="system.j2"):
        load_templates(folder)
    folder = copy_prompts(tmp_path / "again")
    (folder / "user.j2").write_text("{% for x in notes %}\n")
    with pytest.raises(ConfigError, match="user.j2: line"):
        load_templates(folder)
