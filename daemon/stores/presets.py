"""Store presets (one per agent) and per-store settings, checked against the agent's reader.

A preset is an agent's reader model (``daemon.stores.readers``: what it lists, loads and
links) plus dreamd's defaults for that agent. Settings a store overrides are checked
against that model when the config is loaded: a retire mode or an archive the agent would
read as live notes is refused, with the reason, before any pass runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import NamedTuple

from daemon.core.errors import ConfigError, UnsafePathError
from daemon.core.spelling import did_you_mean
from daemon.core.globs import matches
from daemon.core.index_spec import FORMATS as INDEX_FORMATS
from daemon.core.index_spec import IndexSpec
from daemon.core.reader import ARCHIVE, IN_PLACE, RETIRE_MODES, Listing, ReaderModel
from daemon.stores import readers
from daemon.stores.records import dexto
from daemon.stores.paths import DEFAULT_ARCHIVE_PREFIX, safe_relpath

DEFAULT_MAX_FILE_BYTES = 1 << 20
BESIDE_ARCHIVE = "../{notes}.dreamd-archive"  # for agents that list every folder of their store
NOTE_SUFFIX = ".md"  # dreamd plans over markdown notes, whatever else an agent lists


class Preset(NamedTuple):
    """An agent's reader model and dreamd's defaults for its folders."""

    name: str
    default_path_hint: str
    reader: ReaderModel
    retire_mode: str = ARCHIVE
    records: bool = False  # a database of records (path = its file), not a folder of notes

    @property
    def archive_root(self) -> str:
        """Inside the notes root where the agent's listing cannot see it, else beside it."""
        return BESIDE_ARCHIVE if self.reader.sees(f"{DEFAULT_ARCHIVE_PREFIX}/note.md") else DEFAULT_ARCHIVE_PREFIX


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset("deepcode", "<workspace>/.deepcode/memory", readers.DEEPCODE),
        Preset("claude-code", "~/.claude/projects/<project>/memory", readers.CLAUDE_CODE),
        Preset("serena", "<project>/.serena/memories", readers.SERENA),
        Preset("cline", "<project>/memory-bank", readers.CLINE),
        Preset("generic", "<any folder of markdown notes>", readers.GENERIC, IN_PLACE),
        Preset("dexto", dexto.DEFAULT_PATH_HINT, dexto.READER, records=True),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; ConfigError listing the valid names otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown store preset {name!r}{did_you_mean(str(name), PRESETS)}", hint=f"valid presets: {', '.join(sorted(PRESETS))}"
        ) from None


class StoreSettings(NamedTuple):
    """A preset with one store's overrides applied: everything the store layer needs to know."""

    preset: Preset
    index: IndexSpec | None
    retire_mode: str
    archive_root: str  # a folder inside the notes root, or "../NAME" beside it
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    exclude: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()
    ignored_memory_patterns: tuple[str, ...] = ()  # Serena's own setting, as the agent is configured

    @property
    def reader(self) -> ReaderModel:
        """The preset's reader, with what this store tells about the agent's configuration."""
        if not self.ignored_memory_patterns:
            return self.preset.reader
        return _told(self.preset.reader, self.ignored_memory_patterns)

    @property
    def listing(self) -> Listing:
        return self.reader.listing

    @property
    def index_path(self) -> str | None:
        return self.index.path if self.index else None

    @property
    def index_format(self) -> str | None:
        return self.index.format if self.index else None

    @property
    def protected(self) -> tuple[str, ...]:
        return self.reader.required

    @property
    def archive_beside(self) -> bool:
        return self.archive_root.startswith("../")

    def is_note(self, path: str) -> bool:
        """A file dreamd plans over: a markdown file the agent lists as a note, or the index;
        in a record store, every memory record."""
        if self.preset.records:
            return path.startswith(dexto.KEY_PREFIX) and self.listing.sees(path)
        return path == self.index_path or (path.endswith(NOTE_SUFFIX) and self.listing.sees(path))

    def notes_among(self, paths: Iterable[str]) -> list[str]:
        """The paths ``is_note`` takes, in their order, its lookups made once rather than for
        each path (a scan asks this of every file of the store)."""
        if self.preset.records:
            return [path for path in paths if self.is_note(path)]
        index, sees = self.index_path, self.listing.sees
        return [path for path in paths if path == index or (path.endswith(NOTE_SUFFIX) and sees(path))]

    def is_excluded(self, path: str) -> bool:
        return matches(path, self.exclude)

    def is_pinned(self, path: str) -> bool:
        return matches(path, self.pinned)



@lru_cache(maxsize=64)
def _told(reader: ReaderModel, ignored: tuple[str, ...]) -> ReaderModel:
    """``reader`` whose listing also hides the notes ``ignored`` matches."""
    return reader._replace(listing=reader.listing._replace(ignored=ignored))


_SETTING_KEYS = (
    "index_path",
    "index_format",
    "retire_mode",
    "archive_root",
    "archive_dir",
    "max_file_bytes",
    "exclude",
    "pinned",
    "ignored_memory_patterns",
)

_RECORD_SETTING_KEYS = ("exclude", "pinned")  # globs on record keys; no index, no archive folder


def resolve_settings(preset_name: str, overrides: Mapping[str, object] | None = None) -> StoreSettings:
    """Apply a store's config overrides to its preset; ConfigError naming any bad key, or
    any setting under which the agent would read retired notes as live ones."""
    preset = get_preset(preset_name)
    given = dict(overrides or {})
    for key in given:
        if key not in _SETTING_KEYS:
            valid = [k for k in _SETTING_KEYS if k != "archive_dir"]
            raise ConfigError(f"unknown store setting {key!r}{did_you_mean(key, valid)}", hint=f"valid settings: {', '.join(valid)}")
    odd = [key for key in given if key not in _RECORD_SETTING_KEYS] if preset.records else []
    if odd:
        raise ConfigError(f"store setting {odd[0]!r} is for folders of notes; a {preset.name} store takes only {' and '.join(_RECORD_SETTING_KEYS)}")
    if "archive_dir" in given:  # the older name of archive_root
        if "archive_root" in given:
            raise ConfigError("store settings 'archive_dir' and 'archive_root' are the same setting: keep archive_root")
        given["archive_root"] = given.pop("archive_dir")
    settings = StoreSettings(
        preset=preset,
        index=_index(preset, given),
        retire_mode=_choice(given, "retire_mode", preset.retire_mode, RETIRE_MODES),
        archive_root=_archive_root(given.get("archive_root", preset.archive_root)),
        max_file_bytes=_positive_int(given, "max_file_bytes", DEFAULT_MAX_FILE_BYTES),
        exclude=_globs(given, "exclude"),
        pinned=_globs(given, "pinned"),
        ignored_memory_patterns=_patterns(preset, given),
    )
    _check_retired_hidden(settings)
    return settings


def _check_retired_hidden(settings: StoreSettings) -> None:
    """Refuse settings under which the agent's own listing would show retired notes."""
    reader, name = settings.reader, settings.preset.name
    if settings.retire_mode == IN_PLACE and not reader.reads_status:
        raise ConfigError(
            f"retire_mode 'in-place' is refused for the {name} preset: {reader.agent} lists notes whatever their "
            "frontmatter says, so a note retired in place would still be read as current",
            hint="use retire_mode = \"archive\"",
        )
    probe = f"{settings.archive_root}/note.md"
    if settings.retire_mode == ARCHIVE and not settings.archive_beside and reader.sees(probe):
        hint = f"archive_root = \"{BESIDE_ARCHIVE}\""
        if name == "serena":
            hint += f", or tell dreamd that Serena ignores it: ignored_memory_patterns = [\"{re.escape(settings.archive_root)}/.*\"]"
        raise ConfigError(
            f"archive_root {settings.archive_root!r} is inside the notes folder, where {reader.agent} would list retired notes as live ones",
            hint=f"use {hint}",
        )


def _index(preset: Preset, given: dict[str, object]) -> IndexSpec | None:
    """The index: the agent's own (with its load limit and sections), another file named by
    ``index_path`` (read whole, entries at the end), or none when ``index_path`` is empty."""
    own = preset.reader.index
    raw = given.get("index_path", own.path if own else None)
    if raw is not None and not isinstance(raw, str):
        raise ConfigError(f"store setting 'index_path' must be a string, got {type(raw).__name__}")
    path = _relpath("index_path", raw) if raw else None
    if path is None:
        if given.get("index_format") is not None:
            raise ConfigError("store setting 'index_format' needs an index_path")
        return None
    fmt = _choice(given, "index_format", own.format if own else "links", INDEX_FORMATS)
    if own is not None and path == own.path and fmt == own.format:
        return own
    return IndexSpec(path, fmt)


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


def _archive_root(value: object) -> str:
    """One folder: inside the notes root, or beside it (``../NAME``); never anywhere else."""
    if not isinstance(value, str) or not value:
        raise ConfigError("store setting 'archive_root' must be a folder name")
    beside = value.startswith("../")
    name = value.removeprefix("../")
    clean = _relpath("archive_root", name) if name else ""
    if not clean or "/" in clean or clean in (".", "..") or "{" in clean.replace("{notes}", ""):
        raise ConfigError(
            f"store setting 'archive_root' must be one folder inside the notes folder or beside it (\"../NAME\"), got {value!r}"
        )
    return f"../{clean}" if beside else clean


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


def _patterns(preset: Preset, given: dict[str, object]) -> tuple[str, ...]:
    """Serena's ``ignored_memory_patterns``, copied from its project.yml: regexes on names."""
    if "ignored_memory_patterns" not in given:
        return ()
    if preset.name != "serena":
        raise ConfigError("store setting 'ignored_memory_patterns' is Serena's: it applies to the serena preset only")
    patterns = _globs(given, "ignored_memory_patterns")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"store setting 'ignored_memory_patterns': {pattern!r} is not a regular expression ({exc})") from None
    return patterns
