"""Configuration: one TOML file resolved once into a ``Config``; no config at all also works.

Sources, first wins: command-line options, environment (``DREAMD_CONFIG``, ``DREAMD_DB``),
the config file, built-in defaults. A store can also be named on the command line alone
(``--store PATH --preset NAME``), with no file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from daemon.core.errors import ConfigError
from daemon.core.spelling import did_you_mean
from daemon.planners.settings import DetectorSettings
from daemon.schedules import Schedule, parse_schedule
from daemon.stores.paths import archive_name
from daemon.stores.presets import StoreSettings, resolve_settings

if TYPE_CHECKING:  # a config with an [llm] table imports it (_parse_llm); one without never needs it
    from daemon.llm.base import ModelSettings

_TOP_KEYS = {"db", "stores", "planner", "llm", "limits", "notify"}
_STORE_KEYS = {"name", "path", "preset", "settings", "llm", "policy", "apply", "every", "cron", "jitter", "workspace"}
APPLY_MODES = ("never", "accepted")  # whether a pass applies what its policy accepted
# [llm] and [stores.llm]: how to reach a model. Keys never live here: api_key_env names
# the environment variable that holds one.
_LLM_KEYS = {
    "model": str, "api_base": str, "api_key_env": str, "temperature": float, "timeout_s": float,
    "retries": int, "max_output_tokens": int, "tokens_per_call": int, "tokens_per_pass": int,
    "context_window": int, "cost_per_pass": float, "prompt_dir": str, "exclude": list, "enabled": bool,
}  # fmt: skip


class StoreConfig(NamedTuple):
    """One store as the config names it. Named tuples here and in the records a pass that
    finds nothing to do imports, not dataclasses: building those classes and importing
    dataclasses was a fifth of such a process (see service/passes/noop.py)."""

    name: str
    root: Path
    preset: str
    settings: StoreSettings
    llm: ModelSettings | None = None  # None: the deterministic planner only
    llm_exclude: tuple[str, ...] = ()  # globs of notes never sent to a model
    policy: Path | None = None  # a policies/*.toml file; None: every proposal waits for a person
    apply: str = "never"  # "accepted": a pass applies what its policy accepted
    schedule: Schedule = Schedule()  # when ``dreamd run`` passes over it
    workspace: Path | None = None  # the git repository the notes describe: their citations are checked against it

    def watched_folders(self) -> tuple[Path, Path] | None:
        """The folders whose changes the daemon watches for: the notes root and the archive
        root (which need not exist yet); None for a store whose skips are never taken on a
        watch's word (a record database, or notes checked against a workspace's commits)."""
        if self.workspace is not None or self.settings.preset.records:
            return None
        notes = Path(os.path.realpath(self.root))
        archive_root = self.settings.archive_root
        name = archive_name(archive_root, notes.name)
        return notes, notes.parent / name if archive_root.startswith("../") else notes / name


class Limits(NamedTuple):
    """How long planning may take: a note whose reading takes longer is left out of the
    pass's planning (recorded, never changed), and a pass past its time stops planning,
    keeps what it found and is recorded ``partial``. Neither enters the planner fingerprint."""

    note_seconds: float = 10.0
    pass_seconds: float = 900.0


class Config:
    """The whole configuration, read once; nothing changes it afterwards."""

    __slots__ = ("stores", "db_url", "planner", "source", "llm", "llm_exclude", "notify", "limits")

    def __init__(self, stores: dict[str, StoreConfig] | None = None, db_url: str | None = None, planner: DetectorSettings | None = None,
                 source: Path | None = None, llm: ModelSettings | None = None, llm_exclude: tuple[str, ...] = (), notify: Notify | None = None,
                 limits: Limits | None = None) -> None:  # fmt: skip
        self.stores = {} if stores is None else stores
        self.db_url = db_url
        self.planner = DetectorSettings() if planner is None else planner
        self.source = source
        self.llm = llm  # the global [llm] table, for stores named on the command line
        self.llm_exclude = llm_exclude
        self.notify = Notify() if notify is None else notify  # run after a pass that leaves proposals waiting
        self.limits = Limits() if limits is None else limits

    def __repr__(self) -> str:
        return f"Config(source={self.source!r}, stores={sorted(self.stores)!r})"

    def store(self, name: str) -> StoreConfig:
        try:
            return self.stores[name]
        except KeyError:
            if self.source is None:
                raise ConfigError(f"no store named {name!r}: {no_config_loaded()}", hint="give --config FILE, or name the folder: --store PATH --preset NAME") from None
            known = ", ".join(sorted(self.stores)) or "none configured"
            raise ConfigError(f"no store named {name!r}{did_you_mean(name, self.stores)} (known: {known})", hint=f"use --store PATH --preset NAME, or add [[stores]] to {self.source}") from None

    def completed(self, store: StoreConfig) -> StoreConfig:
        """``store`` as a command uses it: one not in the config takes the global [llm]."""
        if store.name not in self.stores and self.llm is not None and store.llm is None:
            return store._replace(llm=self.llm, llm_exclude=self.llm_exclude)
        return store


def adhoc_store(path: str | Path, preset: str, name: str | None = None) -> StoreConfig:
    """A store named by its path on the command line (or by the ``name`` it was registered
    under: a symlink at that path resolves elsewhere), with its preset's defaults."""
    root = Path(path).expanduser().resolve()
    return StoreConfig(name=name or str(root), root=root, preset=preset, settings=resolve_settings(preset, {}))


def load_config(path: str | Path | None) -> Config:
    """Read the config file (see ``config_file``); none found means defaults."""
    file = config_file(path)
    if file is None:
        return Config()
    return config_from_text(read_config_text(file), file)


def config_file(path: str | Path | None) -> Path | None:
    """The config file a command reads: ``path`` (``--config``), else ``$DREAMD_CONFIG``,
    else ``$XDG_CONFIG_HOME/dreamd/config.toml`` (``~/.config/…`` when that variable is
    unset or relative, as the spec says) if it exists; None: no file, defaults."""
    chosen = path or os.environ.get("DREAMD_CONFIG")
    if chosen:
        return Path(chosen).expanduser()
    found = default_config_file()
    return found if found.exists() else None


def default_config_file() -> Path:
    """``$XDG_CONFIG_HOME/dreamd/config.toml`` (``~/.config/…`` when that variable is unset or
    relative): the file read when no other is given."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    home = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return home / "dreamd" / "config.toml"


def no_config_loaded() -> str:
    """What a message says when a command needed a config and none was read."""
    return f"no config was loaded (no --config, no DREAMD_CONFIG, and no {default_config_file()})"


def read_config_text(file: Path) -> str:
    """The config file's text; ConfigError for a missing, unreadable or non-regular file (a
    FIFO would block a plain read forever, at start or at a daemon's reload)."""
    from daemon.policies.load import NotRegularFileError, read_regular_file

    try:
        return read_regular_file(file).decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist") from None
    except NotRegularFileError as exc:
        raise ConfigError(f"config file {file} is {exc.kind}, not a regular file", hint="give --config the path of a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.__class__.__name__}") from None


def config_from_text(text: str, file: Path) -> Config:
    """A config from TOML text read earlier from ``file`` (relative paths resolve beside it)."""
    import tomllib  # here, not at the top: a command with no config file never parses TOML

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"config file {file} is not valid TOML for dreamd: its arrays or tables nest too deeply") from None
    return parse_config(raw, file)


def unknown_key(where: str, unknown: set[str], allowed: Iterable[str]) -> ConfigError:
    """A key the config does not know, with the one that was most likely meant and every one allowed."""
    key = sorted(unknown)[0]
    return ConfigError(f"{where}: unknown key {key!r}{did_you_mean(key, allowed)}", hint=f"allowed: {', '.join(sorted(allowed))}")


def parse_config(raw: dict[str, Any], source: Path | None = None) -> Config:
    where = f"config {source}" if source else "config"
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise unknown_key(where, unknown, _TOP_KEYS)
    stores: dict[str, StoreConfig] = {}
    entries = raw.get("stores", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: 'stores' must be an array of tables ([[stores]])")
    base = source.parent if source else Path.cwd()
    llm_raw = raw.get("llm", {})
    if not isinstance(llm_raw, dict):
        raise ConfigError(f"{where}: 'llm' must be a table")
    llm = _parse_llm(llm_raw, where, base) if llm_raw and llm_raw.get("enabled", True) else None
    for number, entry in enumerate(entries, 1):
        store = _parse_store(entry, number, where, base, llm_raw)
        if store.name in stores:
            raise ConfigError(f"{where}: store {store.name!r} is defined twice")
        stores[store.name] = store
    _check_disjoint(stores, where)
    db = raw.get("db")
    if db is not None and not isinstance(db, str):
        raise ConfigError(f"{where}: 'db' must be a database URL string")
    llm_exclude = tuple(llm_raw.get("exclude", ())) if llm else ()
    planner = _parse_planner(raw.get("planner", {}), where)
    return Config(stores=stores, db_url=db, planner=planner, source=source, llm=llm, llm_exclude=llm_exclude, limits=_parse_limits(raw.get("limits", {}), where), notify=_parse_notify(raw.get("notify", {}), where))


def _parse_store(entry: Any, number: int, where: str, base: Path, llm_raw: dict[str, Any]) -> StoreConfig:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: stores entry {number} must be a table")
    unknown = set(entry) - _STORE_KEYS
    if unknown:
        raise unknown_key(f"{where}: stores entry {number}", unknown, _STORE_KEYS)
    for key in ("name", "path", "preset"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ConfigError(f"{where}: stores entry {number} needs a '{key}' string")
    settings = entry.get("settings", {})
    if not isinstance(settings, dict):
        raise ConfigError(f"{where}: store {entry['name']!r}: 'settings' must be a table")
    try:
        resolved = resolve_settings(entry["preset"], settings)
    except ConfigError as exc:
        raise ConfigError(f"{where}: store {entry['name']!r}: {exc}", hint=exc.hint or None) from None
    root = (base / Path(entry["path"]).expanduser()).resolve()
    store_llm = entry.get("llm", {})
    if not isinstance(store_llm, dict):
        raise ConfigError(f"{where}: store {entry['name']!r}: 'llm' must be a table")
    merged = {**llm_raw, **store_llm}  # a store's [stores.llm] keys override the global [llm]
    llm = _parse_llm(merged, f"{where}: store {entry['name']!r}", base) if merged and merged.get("enabled", True) else None
    exclude = tuple(merged.get("exclude", ())) if llm else ()
    apply = entry.get("apply", "never")
    if apply not in APPLY_MODES:
        raise ConfigError(f"{where}: store {entry['name']!r}: apply must be one of {', '.join(APPLY_MODES)}")
    policy = _policy_path(entry.get("policy"), f"{where}: store {entry['name']!r}", base)
    if apply == "accepted" and policy is None:
        raise ConfigError(f"{where}: store {entry['name']!r}: apply = \"accepted\" needs a policy")
    schedule = parse_schedule(entry, f"{where}: store {entry['name']!r}")
    workspace = entry.get("workspace")
    if workspace is not None:
        if not isinstance(workspace, str) or not workspace.strip():
            raise ConfigError(f"{where}: store {entry['name']!r}: workspace must be the path of a git repository")
        workspace = (base / Path(workspace).expanduser()).resolve()  # checked by the pass that reads it, as the store's path is
    return StoreConfig(name=entry["name"], root=root, preset=entry["preset"], settings=resolved, llm=llm, llm_exclude=exclude, policy=policy, apply=apply, schedule=schedule, workspace=workspace)


def _check_disjoint(stores: dict[str, StoreConfig], where: str) -> None:
    """Refuse two stores whose folders (notes root or archive root) are one or nest: each
    store's scope is its own, and a folder is one store."""
    folders = sorted((path.parts, i, store.name, kind, path) for i, (store, (kind, path)) in enumerate((s, f) for s in stores.values() for f in _folders(s)))
    # in the order of their parts, the folders inside one come right after it: each is
    # compared with those only (a thousand stores are checked in a moment, not in minutes)
    for k, (parts, i, name, kind, path) in enumerate(folders):
        for other_parts, j, other, other_kind, other_path in folders[k + 1 :]:
            if other_parts[: len(parts)] != parts:
                break
            if other != name:
                (_, first, first_kind, first_path), (_, second, second_kind, second_path) = sorted([(i, name, kind, path), (j, other, other_kind, other_path)])
                raise ConfigError(
                    f"{where}: stores {first!r} and {second!r} overlap: the {first_kind} {first_path} and the {second_kind} {second_path}",
                    hint="one folder is one store: give each store a folder of its own",
                )


def _folders(store: StoreConfig) -> list[tuple[str, Path]]:
    archive = store.settings.archive_root
    name = archive_name(archive, store.root.name)
    beside = store.root.parent / name if archive.startswith("../") else None
    return [("notes folder", store.root)] + ([("archive root", beside)] if beside is not None else [])


def _policy_path(value: Any, where: str, base: Path) -> Path | None:
    """A shipped policy by name (default, strict, trusting) or a file; checked at load."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: policy must be a shipped policy name or a file path")
    from daemon.policies.load import load_policy, policy_file

    try:
        path = policy_file(value, base)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}", hint=exc.hint or None) from None
    load_policy(path)  # a bad policy is a bad config: refuse it now, with its line numbers
    return path


def _parse_llm(raw: dict[str, Any], where: str, base: Path) -> ModelSettings:
    """Model settings, checked key by key; an api_key in the file is refused outright."""
    if "api_key" in raw:
        raise ConfigError(f"{where}: llm: api_key must not be written in a config file", hint="set api_key_env to the NAME of an environment variable holding it")
    unknown = set(raw) - set(_LLM_KEYS)
    if unknown:
        raise unknown_key(f"{where}: llm", unknown, _LLM_KEYS)
    if not isinstance(raw.get("model"), str) or not raw["model"].strip():
        raise ConfigError(f"{where}: llm: 'model' must name a litellm model, e.g. \"openai/gpt-4o-mini\"")
    values: dict[str, Any] = {}
    for key, kind in _LLM_KEYS.items():
        if key not in raw or key in ("exclude", "enabled"):
            continue
        value = raw[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok or (kind in (int, float) and value < 0):
            raise ConfigError(f"{where}: llm.{key} must be a {'non-negative number' if kind in (int, float) else kind.__name__}")
        values[key] = float(value) if kind is float else value
    if "prompt_dir" in values:
        values["prompt_dir"] = str((base / Path(values["prompt_dir"]).expanduser()).resolve())
    if not isinstance(raw.get("exclude", []), list) or not all(isinstance(g, str) for g in raw.get("exclude", [])):
        raise ConfigError(f"{where}: llm.exclude must be a list of glob strings")
    from daemon.llm.base import ModelSettings

    return ModelSettings(**values)


def _parse_planner(raw: Any, where: str) -> DetectorSettings:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: 'planner' must be a table")
    defaults = DetectorSettings()
    allowed = {"near_threshold", "shingle_size", "min_words"}
    unknown = set(raw) - allowed
    if unknown:
        raise unknown_key(f"{where}: planner", unknown, allowed)
    threshold = raw.get("near_threshold", defaults.near_threshold)
    if not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise ConfigError(f"{where}: planner.near_threshold must be a number in (0, 1]")
    values: dict[str, Any] = {"near_threshold": float(threshold)}
    for key in ("shingle_size", "min_words"):
        value = raw.get(key, getattr(defaults, key))
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{where}: planner.{key} must be a positive integer")
        values[key] = value
    return defaults._replace(**values)


def _parse_limits(raw: Any, where: str) -> Limits:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: 'limits' must be a table")
    allowed = set(Limits._fields)
    unknown = set(raw) - allowed
    if unknown:
        raise unknown_key(f"{where}: limits", unknown, allowed)
    values = {}
    for key, value in raw.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 86_400:
            raise ConfigError(f"{where}: limits.{key} must be a number of seconds in (0, 86400]")
        values[key] = float(value)
    return Limits(**values)


class Notify(NamedTuple):
    """``[notify]``: a program run (argv, no shell) after a pass that leaves proposals
    waiting for a person; an empty command runs nothing."""

    command: tuple[str, ...] = ()
    timeout_s: float = 10.0
    only_new: bool = False  # run only after a pass that made new proposals waiting, not on every reminder


def _parse_notify(raw: Any, where: str) -> Notify:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: 'notify' must be a table")
    unknown = set(raw) - {"command", "timeout_s", "only_new"}
    if unknown:
        raise unknown_key(f"{where}: notify", unknown, {"command", "timeout_s", "only_new"})
    if not raw:
        return Notify()
    command = raw.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(a, str) and a for a in command):
        raise ConfigError(f"{where}: notify.command must be a non-empty list of strings (a program and its arguments; no shell)", hint='e.g. command = ["notify-send", "dreamd"]')
    timeout = raw.get("timeout_s", Notify._field_defaults["timeout_s"])
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
        raise ConfigError(f"{where}: notify.timeout_s must be a number of seconds in (0, 3600]")
    only_new = raw.get("only_new", False)
    if not isinstance(only_new, bool):
        raise ConfigError(f"{where}: notify.only_new must be true or false")
    return Notify(tuple(command), float(timeout), only_new)
