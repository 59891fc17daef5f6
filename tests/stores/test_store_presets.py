"""Store presets and per-store settings."""

from __future__ import annotations

import pytest

from daemon.core.errors import ConfigError
from daemon.stores.presets import PRESETS, get_preset, resolve_settings


def test_registry_has_every_agent() -> None:
    """The registry names one preset per supported agent layout."""
    assert set(PRESETS) == {"deepcode", "claude-code", "serena", "cline", "generic", "dexto"}
    assert all(name == preset.name for name, preset in PRESETS.items())


def test_deepcode_archives_into_a_subfolder() -> None:
    """DeepCode lists only the top-level files of its folder, so a subfolder inside it holds retired notes."""
    preset = get_preset("deepcode")
    index = preset.reader.index
    assert (index.path, index.format, preset.reader.listing.recursive) == ("MEMORY.md", "links", False)
    assert preset.retire_mode == "archive"
    assert preset.archive_root == ".dreamd-archive"


@pytest.mark.parametrize("name", ["claude-code", "serena"])
def test_agents_that_list_every_folder_archive_beside_their_notes(name: str) -> None:
    """Claude Code's recall and Serena's listing read every folder, hidden ones too: the archive sits beside the notes folder."""
    preset = get_preset(name)
    assert preset.reader.sees(".dreamd-archive/old.md")
    assert preset.archive_root == "../{notes}.dreamd-archive"


def test_cline_protects_its_core_files() -> None:
    """Cline's six core files are protected and its index lists tasks only."""
    settings = resolve_settings("cline", {})
    assert len(settings.protected) == 6 and "projectbrief.md" in settings.protected
    assert (settings.index_path, settings.index_format) == ("tasks/_index.md", "cline-tasks")
    assert settings.archive_root == ".dreamd-archive"  # Cline's list_files skips hidden folders


@pytest.mark.parametrize("name", ["deepcode", "claude-code", "serena", "cline"])
def test_retiring_in_place_is_refused_where_the_agent_reads_retired_notes(name: str) -> None:
    """No agent preset reads frontmatter status, so retire_mode = "in-place" is refused at config load, saying why."""
    with pytest.raises(ConfigError, match="in-place.*would still be read as current"):
        resolve_settings(name, {"retire_mode": "in-place"})


@pytest.mark.parametrize("name", ["claude-code", "serena"])
def test_an_archive_inside_a_recursively_listed_folder_is_refused(name: str) -> None:
    """An archive_root inside a folder the agent lists at every depth is refused, with the setting that works."""
    with pytest.raises(ConfigError, match="inside the notes folder") as info:
        resolve_settings(name, {"archive_root": ".dreamd-archive"})
    assert "../{notes}.dreamd-archive" in info.value.hint


def test_serena_ignored_memory_patterns_can_hide_an_inside_archive() -> None:
    """Told that Serena ignores the archive (its ignored_memory_patterns), dreamd accepts an archive inside the memories folder."""
    settings = resolve_settings("serena", {"archive_root": ".dreamd-archive", "ignored_memory_patterns": [r"\.dreamd-archive/.*"]})
    assert settings.archive_root == ".dreamd-archive"
    assert not settings.listing.sees(".dreamd-archive/old.md") and settings.listing.sees("old.md")


@pytest.mark.parametrize(
    ("preset", "overrides", "match"),
    [
        ("deepcode", {"ignored_memory_patterns": ["x"]}, "serena preset only"),
        ("serena", {"ignored_memory_patterns": ["("]}, "not a regular expression"),
        ("serena", {"archive_root": "../a/b"}, "one folder"),
        ("serena", {"archive_root": "../.."}, "archive_root"),
        ("serena", {"archive_root": "../../x"}, "archive_root"),
        ("cline", {"archive_root": "archive"}, "inside the notes folder"),
        ("serena", {"archive_root": "x", "archive_dir": "y"}, "same setting"),
    ],
)
def test_archive_and_reader_settings_are_checked(preset: str, overrides: dict[str, object], match: str) -> None:
    """Reader settings and archive roots that would escape their place or be seen by the agent are refused at config load."""
    with pytest.raises(ConfigError, match=match):
        resolve_settings(preset, overrides)


def test_unknown_preset_lists_valid_ones() -> None:
    """An unknown preset name is a ConfigError whose hint names every valid preset."""
    with pytest.raises(ConfigError, match="nope") as info:
        get_preset("nope")
    assert all(name in info.value.hint for name in PRESETS)


def test_settings_default_to_the_preset() -> None:
    """Without overrides a store gets its preset's values and a 1 MiB file limit."""
    settings = resolve_settings("serena", {})
    assert settings.index_path is None and settings.index_format is None
    assert settings.retire_mode == "archive" and settings.listing.recursive
    assert settings.max_file_bytes == 1 << 20


def test_overrides_apply() -> None:
    """Config overrides replace preset values."""
    settings = resolve_settings(
        "serena",
        {
            "index_path": "memory-index.md",
            "archive_root": "../old",
            "max_file_bytes": 10,
            "exclude": ["drafts/"],
            "pinned": ["rules.md"],
        },
    )
    assert (settings.index_path, settings.index_format) == ("memory-index.md", "links")
    assert (settings.retire_mode, settings.archive_root, settings.max_file_bytes) == ("archive", "../old", 10)
    assert settings.is_excluded("drafts") and settings.is_pinned("rules.md")


def test_empty_index_path_turns_the_index_off() -> None:
    """An empty index_path disables the preset's index."""
    settings = resolve_settings("claude-code", {"index_path": ""})
    assert (settings.index_path, settings.index_format) == (None, None)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"colour": "red"}, "colour"),
        ({"index_format": "yaml"}, "index_format"),
        ({"index_path": "../MEMORY.md"}, "index_path"),
        ({"index_path": 3}, "index_path"),
        ({"retire_mode": "delete"}, "retire_mode"),
        ({"archive_dir": "a/b"}, "archive_root"),
        ({"archive_dir": "/tmp"}, "archive_root"),
        ({"max_file_bytes": 0}, "max_file_bytes"),
        ({"max_file_bytes": True}, "max_file_bytes"),
        ({"exclude": "*.tmp"}, "exclude"),
        ({"pinned": [""]}, "pinned"),
    ],
)
def test_bad_setting_names_the_key(overrides: dict[str, object], key: str) -> None:
    """A bad or unknown setting is a ConfigError that names the key."""
    with pytest.raises(ConfigError, match=key):
        resolve_settings("generic", overrides)


def test_index_format_without_index_is_refused() -> None:
    """Setting an index format on a store without an index is a ConfigError."""
    with pytest.raises(ConfigError, match="index_format"):
        resolve_settings("generic", {"index_format": "links"})


def _view_of(preset: str):  # noqa: ANN202 - the view a pass builds from these settings
    from daemon.core.view import StoreView

    s = resolve_settings(preset, {})
    return StoreView(notes={}, index=s.index, protected=s.protected, reader=s.reader)


def _listed(view, path: str) -> bool:  # noqa: ANN001
    from daemon.core.notes import Note

    return view.should_list(Note(path, b"# x\n", "h"))


def test_cline_index_scope_and_protection() -> None:
    """Cline's index lists task notes at any depth, never itself or core files."""
    view = _view_of("cline")
    assert _listed(view, "tasks/TASK001-x.md")
    assert _listed(view, "tasks/COMPLETED/TASK002-y.md")
    assert not _listed(view, "tasks/_index.md")
    assert not _listed(view, "progress.md")
    assert view.is_protected("progress.md") and view.is_index("tasks/_index.md")  # structure, never retired
    assert not view.is_protected("tasks/TASK001-x.md")


def test_unscoped_index_lists_every_other_note() -> None:
    """With no index scope, every note but the index itself is listed; other files are not notes."""
    view = _view_of("claude-code")
    assert _listed(view, "feedback_tests.md")
    assert not _listed(view, "MEMORY.md")
    assert not resolve_settings("claude-code", {}).is_note("image.png")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_notes_among_takes_what_is_note_takes(preset: str) -> None:
    """``notes_among`` (one loop, for a scan) keeps, in order, exactly the paths ``is_note`` takes."""
    settings = resolve_settings(preset, {})
    paths = ["MEMORY.md", "a.md", "b.txt", "team/c.md", ".hidden/d.md", "tasks/_index.md", "tasks/TASK001-x.md",
             "memory-index.md", "memory:item:1", "memory:item:x.md", "x/y/z.md", ".e.md", "image.png", "a.md"]  # fmt: skip
    assert settings.notes_among(paths) == [path for path in paths if settings.is_note(path)]
