"""The store port: what the service calls to open, scan and clean a store, for both kinds.

A store is a folder of notes (``stores.scan``, ``stores.files``) or a database of records
(``stores.records.database``); the service calls these functions the same way for both, and
``service.journal`` sends each compare-and-swap write to the adapter its roots belong to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from daemon.core.errors import ConfigError
from daemon.stores import files
from daemon.stores.paths import StoreRoots
from daemon.stores.paths import open_roots as open_folder
from daemon.stores.presets import StoreSettings
from daemon.stores.records import database
from daemon.stores.records.database import RecordRoots
from daemon.stores.scan import ScanResult, scan_store

Roots = StoreRoots | RecordRoots


def open_roots(root: Path, settings: StoreSettings) -> Roots:
    """The store's roots, resolved now; a database given with a folder preset is refused
    (ConfigError); any other file gets the folder adapter's own StoreError."""
    if settings.preset.records:
        return database.open_roots(root)
    if root.is_file() and _is_database(root):
        raise ConfigError(f"{root} is a file, not a folder of notes; the {settings.preset.name} preset reads folders", hint="an agent's record database takes --preset dexto")
    return open_folder(root, settings.archive_root)


def _is_database(path: Path) -> bool:
    """A ``.db`` file, or any file with SQLite's header: an agent's record database."""
    try:
        with open(path, "rb") as file:
            return path.suffix == ".db" or file.read(16) == b"SQLite format 3\0"
    except OSError:
        return path.suffix == ".db"


def is_records(roots: object) -> bool:
    return isinstance(roots, RecordRoots)


def scan(roots: Roots, settings: StoreSettings) -> ScanResult:
    return database.scan(roots, settings.is_excluded) if isinstance(roots, RecordRoots) else scan_store(roots, settings)


def held_paths(roots: Roots, paths: Iterable[str]) -> list[str]:
    """The paths a write puts into the store itself: for a record store, not its archive
    (retired records live on in dreamd's blobs)."""
    if isinstance(roots, RecordRoots):
        return [p for p in paths if not roots.is_archived(p)]
    return list(paths)


def find_temp_files(roots: Roots) -> list[str]:
    """Temp files crashed writes left; a database write leaves none (it rolls back)."""
    return [] if isinstance(roots, RecordRoots) else files.find_temp_files(roots)


def cleanup_temp_files(roots: Roots, tags: tuple[str, ...], keep: files.Keep | None = None, found: list[str] | None = None, known: Mapping[str, bytes] | None = None) -> list[str]:
    return [] if isinstance(roots, RecordRoots) else files.cleanup_temp_files(roots, tags, keep, found, known)


def find_caught_files(roots: Roots, journal: int | None = None) -> list[str]:
    """Files holding bytes a person wrote while dreamd (that journal's writes) swapped a note (``stores.caught``)."""
    return [] if isinstance(roots, RecordRoots) else files.find_caught_files(roots, journal)
