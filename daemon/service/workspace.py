"""From a store's name or path to what the service works on: its config, a scan, a view."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection

from daemon.config import StoreConfig, adhoc_store
from daemon.core.errors import ConfigError
from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.db import repo
from daemon.service.context import App
from daemon.stores.paths import StoreRoots, open_roots
from daemon.stores.scan import ScanResult, scan_store


def resolve_store(app: App, name: str | None = None, path: str | None = None, preset: str | None = None) -> StoreConfig:
    """The store a command means, with the global [llm] for stores not in the config."""
    store = _resolve(app, name, path, preset)
    if store.name not in app.config.stores and app.config.llm is not None and store.llm is None:
        store = dataclasses.replace(store, llm=app.config.llm, llm_exclude=app.config.llm_exclude)
    return store


def _resolve(app: App, name: str | None, path: str | None, preset: str | None) -> StoreConfig:
    """The store a command means: ``--store PATH``, a configured name, or the only one.

    A store first named by its path (``--store PATH``) is recorded under its absolute
    path; later commands may name it by any path to it, and it keeps its preset.
    """
    if path:
        if preset is None:
            known = known_store(app, str(Path(path).expanduser().resolve()))
            if known:
                return known
        return adhoc_store(path, preset or "generic")
    if name:
        if name in app.config.stores:
            return app.config.stores[name]
        known = known_store(app, name) or known_store(app, str(Path(name).expanduser().resolve()))
        if known:
            return known
        return app.config.store(name)  # raises the "no store named" error
    if len(app.config.stores) == 1:
        return next(iter(app.config.stores.values()))
    raise ConfigError("which store? name one, or give --store PATH --preset NAME")


def known_store(app: App, name: str) -> StoreConfig | None:
    """A store seen by an earlier pass (named by its path), with its preset's defaults.

    Looked up read-only: naming a store must not create or touch the database (a dry
    run by name writes nothing, and a mistyped name creates no database).
    """
    engine = app.read_only_engine()
    if engine is None:
        return None
    try:
        with engine.connect() as conn:
            row = repo.find_store(conn, name)
    finally:
        engine.dispose()
    return adhoc_store(row.root, row.preset) if row else None


def all_stores(app: App) -> list[StoreConfig]:
    """Configured stores, plus stores named by path in earlier passes."""
    found = dict(app.config.stores)
    with app.engine().connect() as conn:
        for row in repo.all_stores(conn):
            if row.name not in found:
                found[row.name] = adhoc_store(row.root, row.preset)
    return [found[k] for k in sorted(found)]


def store_config_for_id(app: App, conn: Connection, store_id: int) -> StoreConfig:
    row = repo.store_by_id(conn, store_id)
    if row.name in app.config.stores:
        return app.config.stores[row.name]
    return adhoc_store(row.root, row.preset)


def roots_of(store: StoreConfig) -> StoreRoots:
    """The store's notes root and archive root, resolved now (StoreError when unusable)."""
    return open_roots(store.root, store.settings.archive_root)


@dataclass(frozen=True)
class Observed:
    """One reading of a store: the scan and the view planners get."""

    scan: ScanResult
    view: StoreView


def observe(store: StoreConfig) -> Observed:
    scan = scan_store(roots_of(store), store.settings)
    return Observed(scan, make_view(scan, store))


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
