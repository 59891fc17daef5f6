"""Store presets (how each agent lays out its memory folder) and per-store settings.

A preset records what dreamd must respect so the folder stays usable by its agent:
where the index is and how it is written, which files are structure rather than notes,
and whether retired notes must leave the folder (agents that list every file as a
memory would otherwise keep reading them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from daemon.core.errors import ConfigError, UnsafePathError
from daemon.core.globs import matches
from daemon.core.index import FORMATS as INDEX_FORMATS
from daemon.core.view import DEFAULT_ARCHIVE_DIR, RETIRE_MODES
from daemon.stores.paths import safe_relpath

DEFAULT_MAX_FILE_BYTES = 1 << 20

CLINE_CORE_FILES = (
    "projectbrief.md",
    "productContext.md",
    "activeContext.md",
    "systemPatterns.md",
    "techContext.md",
    "progress.md",
)


@dataclass(frozen=True)
class Preset:
    """The layout of one agent's memory folder."""

    name: str
    default_path_hint: str
    index_path: str | None
    index_format: str | None
    flat: bool
    retire_mode: str
    index_scope: str | None = None
    archive_dir: str = DEFAULT_ARCHIVE_DIR
    protected: tuple[str, ...] = ()
    note_glob: str = "*.md"


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        # DeepCode's memory tool lists every top-level file: retired notes must leave it.
        Preset("deepcode", "<workspace>/.deepcode/memory", "MEMORY.md", "links", True, "archive"),
        Preset("claude-code", "~/.claude/projects/<project>/memory", "MEMORY.md", "links", True, "archive"),
        # Serena lists every .md file as a memory, nested ones too; a store may set memory-index.md.
        Preset("serena", "<project>/.serena/memories", None, None, False, "archive"),
        Preset(
            "cline",
            "<project>/memory-bank",
            "tasks/_index.md",
            "cline-tasks",
            False,
            "archive",
            index_scope="tasks/**/*.md",  # Cline files finished tasks in subfolders
            protected=CLINE_CORE_FILES,
        ),
        Preset("generic", "<any folder of markdown notes>", None, None, False, "in-place"),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ConfigError listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown store preset {name!r}", hint=f"valid presets: {', '.join(sorted(PRESETS))}"
        ) from None


@dataclass(frozen=True)
class StoreSettings:
    """A preset with one store's overrides applied: everything the store layer needs to know."""

    preset: Preset
    index_path: str | None
    index_format: str | None
    retire_mode: str
    archive_dir: str
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    exclude: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()

    @property
    def flat(self) -> bool:
        return self.preset.flat

    @property
    def note_glob(self) -> str:
        return self.preset.note_glob

    @property
    def index_scope(self) -> str | None:
        return self.preset.index_scope

    @property
    def protected(self) -> tuple[str, ...]:
        return self.preset.protected

    def is_note(self, path: str) -> bool:
        return matches(path, (self.note_glob,))

    def is_excluded(self, path: str) -> bool:
        return matches(path, self.exclude)

    def is_pinned(self, path: str) -> bool:
        return matches(path, self.pinned)


_SETTING_KEYS = (
    "index_path",
    "index_format",
    "retire_mode",
    "archive_dir",
    "max_file_bytes",
    "exclude",
    "pinned",
)


def resolve_settings(preset_name: str, overrides: Mapping[str, object] | None = None) -> StoreSettings:
    """Apply a store's config overrides to its preset; ConfigError naming any bad key."""
    preset = get_preset(preset_name)
    given = dict(overrides or {})
    for key in given:
        if key not in _SETTING_KEYS:
            raise ConfigError(
                f"unknown store setting {key!r}", hint=f"valid settings: {', '.join(_SETTING_KEYS)}"
            )
    index_path, index_format = _index(preset, given)
    return StoreSettings(
        preset=preset,
        index_path=index_path,
        index_format=index_format,
        retire_mode=_choice(given, "retire_mode", preset.retire_mode, RETIRE_MODES),
        archive_dir=_archive_dir(given.get("archive_dir", preset.archive_dir)),
        max_file_bytes=_positive_int(given, "max_file_bytes", DEFAULT_MAX_FILE_BYTES),
        exclude=_globs(given, "exclude"),
        pinned=_globs(given, "pinned"),
    )


def _index(preset: Preset, given: dict[str, object]) -> tuple[str | None, str | None]:
    """Index path and format; an empty index_path turns the index off."""
    raw = given.get("index_path", preset.index_path)
    if raw is not None and not isinstance(raw, str):
        raise ConfigError(f"store setting 'index_path' must be a string, got {type(raw).__name__}")
    path = _relpath("index_path", raw) if raw else None
    if path is None:
        if given.get("index_format") is not None:
            raise ConfigError("store setting 'index_format' needs an index_path")
        return None, None
    return path, _choice(given, "index_format", preset.index_format or "links", INDEX_FORMATS)


def _choice(given: dict[str, object], key: str, default: str, choices: tuple[str, ...]) -> str:
    value = given.get(key, default)
    if value not in choices:
        raise ConfigError(f"store setting {key!r} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _relpath(key: str, value: str) -> str:
    try:
        return safe_relpath(value)
    except UnsafePathError as exc:
        raise ConfigError(f"store setting {key!r}: {exc}") from None


def _archive_dir(value: object) -> str:
    """One folder at the store's top level, so flat stores can keep it out of their listing."""
    if not isinstance(value, str) or not value:
        raise ConfigError("store setting 'archive_dir' must be a folder name")
    clean = _relpath("archive_dir", value)
    if "/" in clean:
        raise ConfigError(f"store setting 'archive_dir' must be one top-level folder, got {value!r}")
    return clean


def _positive_int(given: dict[str, object], key: str, default: int) -> int:
    value = given.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"store setting {key!r} must be a positive integer, got {value!r}")
    return value


def _globs(given: dict[str, object], key: str) -> tuple[str, ...]:
    value = given.get(key, ())
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError(f"store setting {key!r} must be a list of globs, got {value!r}")
    if not all(isinstance(item, str) and item for item in value):
        raise ConfigError(f"store setting {key!r} must hold non-empty strings, got {value!r}")
    return tuple(value)
