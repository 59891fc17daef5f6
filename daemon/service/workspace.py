"""From a store's name or path to what the service works on: its config, a scan, a view."""

from __future__ import annotations

import shlex

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from daemon.config import StoreConfig, adhoc_store
from daemon.core.errors import ConfigError, StoreMovedError
from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.db import repo
from daemon.service.context import App
from daemon.service.naming import folder_of, resolve
from daemon.stores import port
from daemon.stores.paths import identity_text
from daemon.stores.scan import ScanResult, scan_store
from daemon.stores.statcache import Seen


def resolve_store(app: App, name: str | None = None, path: str | None = None, preset: str | None = None) -> StoreConfig:
    """The store a command means, with the global [llm] for stores not in the config."""
    return app.config.completed(_resolve(app, name, path, preset))


def _resolve(app: App, name: str | None, path: str | None, preset: str | None) -> StoreConfig:
    """The store a command means (service/naming.py), registered stores read from the database."""
    return resolve(app.config, name, path, preset, lambda **key: _registered(app, **key))


def store_name(app: App, given: str | None) -> str | None:
    """The registered name of the store ``--store`` names, by its name or any path to it."""
    return None if given is None else _resolve(app, given, None, None).name


def _registered(app: App, *, name: str | None = None, root: str | None = None) -> tuple[str, str, str] | None:
    """(name, root, preset) of a store an earlier command registered, by its name or folder.

    Looked up read-only: naming a store must not create or touch the database (a dry
    run by name writes nothing, and a mistyped name creates no database).
    """
    engine = app.read_only_engine()
    if engine is None:
        return None
    try:
        with engine.connect() as conn:
            row = repo.find_store(conn, name) if name is not None else repo.find_store_at(conn, str(root))
    finally:
        engine.dispose()
    return None if row is None else (row.name, row.root, row.preset)


def claim_store(app: App, conn: Connection, store: StoreConfig, now: dt.datetime, *, adopt: bool = False) -> int:
    """The store's id, registering it on its first pass; one folder stays one store.

    A configured store whose folder an earlier ``--store PATH`` registered (same preset)
    takes that history over under its configured name. A folder registered under another
    name, or with another preset, is refused with what to do. The folder is recorded by
    device and inode; another folder now at the same path is refused unless ``adopt``.
    """
    root = str(store.root)
    identity = identity_text(roots_of(store))
    other = repo.find_store_at(conn, root)
    if other is not None and other.name != store.name:
        if other.preset == store.preset and other.name == other.root and repo.find_store(conn, store.name) is None:
            repo.rename_store(conn, other.id, store.name)
            repo.add_event(conn, other.id, "store.renamed", app.actor, app.surface, now, {"from": other.name, "to": store.name})
        else:
            raise ConfigError(
                f"folder {root} is already the store {other.name!r} (preset {other.preset!r}); dreamd keeps one store per folder",
                hint=f"name it {other.name!r} with preset {other.preset!r}, or give it a database of its own (--db)",
            )
    row = repo.find_store(conn, store.name)
    if row is not None and row.preset != store.preset:
        raise ConfigError(
            f"store {store.name!r} was registered with preset {row.preset!r}, not {store.preset!r}; its proposals, index and archive follow that layout",
            hint=f"keep preset {row.preset!r}, or give the store another name or a database of its own (--db)",
        )
    if row is not None and not adopt:
        _same_folder(store.name, row, root, identity)
    elif row is not None and row.root_identity not in (None, identity):
        repo.add_event(conn, row.id, "store.adopted", app.actor, app.surface, now, {"root": root, "was": row.root_identity, "now": identity})
    return repo.ensure_store(conn, store.name, root, store.preset, now, identity)


def _same_folder(name: str, row: Any, root: str, identity: str) -> None:
    """Refuse a folder that replaced the registered one at its path (a re-created directory,
    or a symlink to another folder put there: the path now resolves to ``root``): its files
    are not the ones the store's proposals were made from. A store moved on purpose (its
    config names another path) is not refused."""
    if row.root_identity not in (None, identity) and root in (row.root, str(folder_of(row.root))):
        leads = "" if root == row.root else f" (a symlink there leads to {root})"
        raise StoreMovedError(
            f"store {name!r}: {row.root} is not the folder it was registered with{leads} (device:inode {row.root_identity}, now {identity}); nothing was read or written",
            hint=f"if the folder was restored or re-created on purpose: dreamd pass {shlex.quote(name)} --adopt-root",
        )


def store_kind(preset: str) -> str:
    """What a store of ``preset`` keeps: ``files`` (a folder of notes) or ``records`` (a
    database of records, named by key: Dexto's)."""
    from daemon.stores.presets import get_preset

    return "records" if get_preset(preset).records else "files"


def registered_roots(app: App, store_id: int, store: StoreConfig) -> port.Roots:
    """The store's roots for a write (apply, revert, recovery, resolve), refused when its
    folder is not the one registered."""
    roots = roots_of(store)
    with app.engine().connect() as conn:
        row = repo.store_by_id(conn, store_id)
    _same_folder(store.name, row, str(store.root), identity_text(roots))
    return roots


def all_stores(app: App) -> list[StoreConfig]:
    """Configured stores, plus stores named by path in earlier passes."""
    found = dict(app.config.stores)
    with app.engine().connect() as conn:
        for row in repo.all_stores(conn):
            if row.name not in found:
                found[row.name] = adhoc_store(row.root, row.preset, row.name)
    return [found[k] for k in sorted(found)]


def store_config_for_id(app: App, conn: Connection, store_id: int) -> StoreConfig:
    row = repo.store_by_id(conn, store_id)
    if row.name in app.config.stores:
        return app.config.stores[row.name]
    return adhoc_store(row.root, row.preset, row.name)


def roots_of(store: StoreConfig) -> port.Roots:
    """The store's notes root and archive root (or its database), resolved now (StoreError when unusable)."""
    return port.open_roots(store.root, store.settings)


@dataclass(frozen=True)
class Observed:
    """One reading of a store: the scan and the view planners get."""

    scan: ScanResult
    view: StoreView


def observe(store: StoreConfig, roots: port.Roots | None = None) -> Observed:
    """Scan the store (through ``roots`` when the caller checked them against its registration)."""
    scan = port.scan(roots or roots_of(store), store.settings)
    return Observed(scan, make_view(scan, store))


def glance(app: App, store_id: int, store: StoreConfig, roots: port.Roots) -> tuple[ScanResult, dict[str, Seen]]:
    """The store as far as telling "nothing changed" needs it, and the stat cache it was
    read with: a file unchanged since a pass read it is not read or hashed again (see
    stores/statcache.py). A record store is one database file, read whole."""
    if port.is_records(roots):
        return port.scan(roots, store.settings), {}
    with app.engine().connect() as conn:
        seen = {path: Seen._make(row) for path, row in repo.stat_cache(conn, store_id).items()}
    return scan_store(roots, store.settings, seen), seen


def read_whole(store: StoreConfig, roots: port.Roots, glanced: ScanResult) -> Observed:
    """The store as planning needs it, every file read from its bytes: the glance itself when
    it read every file (a first pass, a cold cache), else a new scan; planning takes no
    hash on the stat cache's word."""
    scan = glanced if glanced.vouched == 0 else port.scan(roots, store.settings)
    return Observed(scan, make_view(scan, store))


def remember_stats(conn: Connection, store_id: int, scan: ScanResult, seen: dict[str, Seen]) -> None:
    """Bring the stat cache to what ``scan`` saw, writing only rows that changed; in the
    transaction that stores the scan's blobs (or after a pass that found them all stored)."""
    if port.is_records(scan.roots):
        return
    rows, gone = scan.stat_changes(seen)
    if rows or gone:
        repo.save_stat_cache(conn, store_id, rows, gone)


def make_view(scan: ScanResult, store: StoreConfig) -> StoreView:
    settings = store.settings
    notes = {
        path: Note(path, entry.data, entry.hash, entry.mtime_ns, pinned_by_setting=settings.is_pinned(path))
        for path, entry in scan.notes.items()
    }
    others = {path: entry.hash for path, entry in scan.files.items() if path not in notes}
    return StoreView(
        notes=notes,
        other_files=others,
        archived=frozenset(scan.archived),
        index=settings.index,
        retire_mode=settings.retire_mode,
        archive_dir=scan.roots.archive_prefix,
        protected=settings.protected,
        reader=settings.reader,
        archive_notes={path: Note(path, entry.data, entry.hash, entry.mtime_ns) for path, entry in scan.archived.items() if path.endswith(".md")},
    )
