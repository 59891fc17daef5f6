"""Which store a command means: ``--store PATH``, a configured name, or the only one.

The rules are ``resolve``'s alone; where stores registered by earlier commands are looked up
is the caller's (``Registered``): through the database layer for every command
(service/workspace.py), through the standard library's sqlite3 for the no-op lane
(service/passes/noop.py), so both find the same store.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from daemon.config import Config, StoreConfig, adhoc_store
from daemon.core.errors import ConfigError

# registered(name=NAME) or registered(root=FOLDER): (name, root, preset) of the store an
# earlier command registered so (the first one at a folder), or None
Registered = Callable[..., tuple[str, str, str] | None]


def resolve(config: Config, name: str | None, path: str | None, preset: str | None, registered: Registered) -> StoreConfig:
    """The store a command means.

    A path means the same folder however it is written (relative, ``./``, a symlink, a
    trailing slash): the configured store at that folder, else the store an earlier
    command registered there (with its preset), else a new store under its absolute path.
    A folder registered with another preset is refused: one folder, one store.
    """
    if path:
        root = folder_of(path)
        found = _configured_at(config, root) or _known(config, registered(root=str(root)))
        if found is not None:
            _same_preset(found, preset, path)
            return found
        return adhoc_store(root, preset or "generic")
    if name:
        if name in config.stores:
            return config.stores[name]
        root = folder_of(name)
        found = _configured_at(config, root) or _known(config, registered(name=name)) or _known(config, registered(root=str(root)))
        if found is not None:
            return found
        return config.store(name)  # raises the "no store named" error
    if len(config.stores) == 1:
        return next(iter(config.stores.values()))
    raise ConfigError("which store? name one, or give --store PATH --preset NAME")


def folder_of(path: str | Path) -> Path:
    """A folder's one absolute name, however the user wrote it (symlinks resolved)."""
    return Path(path).expanduser().resolve()


def _configured_at(config: Config, root: Path) -> StoreConfig | None:
    return next((s for s in config.stores.values() if s.root == root), None)


def _known(config: Config, row: tuple[str, str, str] | None) -> StoreConfig | None:
    """A registered store with its preset's defaults (a configured one with its config)."""
    if row is None:
        return None
    name, root, preset = row
    return config.stores.get(name) or adhoc_store(root, preset, name)


def _same_preset(store: StoreConfig, preset: str | None, path: str) -> None:
    if preset is not None and preset != store.preset:
        raise ConfigError(
            f"{path} is already the store {store.name!r}, with preset {store.preset!r}, not {preset!r}",
            hint=f"leave out --preset, or use --preset {store.preset}; one folder is one store, with one layout",
        )
