"""The config file found with no ``--config`` and no ``$DREAMD_CONFIG``: ``$XDG_CONFIG_HOME/dreamd/config.toml``, else ``~/.config/dreamd/config.toml``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _config(folder, store):
    """Write a config naming one store "found" at ``folder/dreamd/config.toml``."""
    (folder / "dreamd").mkdir(parents=True)
    (folder / "dreamd" / "config.toml").write_text(f'[[stores]]\nname = "found"\npath = "{store}"\npreset = "deepcode"\n')


def _dreamd(env, *args):
    return subprocess.run([sys.executable, "-m", "daemon", *args], capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The environment of a real dreamd process: its own HOME, no XDG_CONFIG_HOME, no DREAMD_CONFIG."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME")
    return dict(os.environ)


def test_the_config_under_xdg_config_home_is_read(tmp_path, example_store, env):
    """With $XDG_CONFIG_HOME set, dreamd reads $XDG_CONFIG_HOME/dreamd/config.toml: its store can be named."""
    _config(tmp_path / "xdg", example_store)
    done = _dreamd({**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}, "pass", "found", "--dry-run", "--summary")
    assert (done.returncode, done.stdout) == (0, "found: dry run (nothing written): 11 notes, 6 pending\n")


def test_the_config_under_home_is_read_when_xdg_config_home_is_unset(tmp_path, example_store, env):
    """With no $XDG_CONFIG_HOME, dreamd reads ~/.config/dreamd/config.toml."""
    _config(tmp_path / "home" / ".config", example_store)
    done = _dreamd(env, "status", "--json")
    assert done.returncode == 0, done.stderr
    assert '"store": "found"' in done.stdout


def test_a_relative_xdg_config_home_is_ignored(tmp_path, example_store, env):
    """A relative $XDG_CONFIG_HOME is ignored, as the XDG spec says: ~/.config is read instead."""
    _config(tmp_path / "home" / ".config", example_store)
    _config(tmp_path / "relative", example_store)
    done = subprocess.run([sys.executable, "-m", "daemon", "status", "--json"], capture_output=True, text=True, env={**env, "XDG_CONFIG_HOME": "relative"}, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and '"store": "found"' in done.stdout


def test_dreamd_config_wins_over_the_default_file(tmp_path, example_store, env):
    """$DREAMD_CONFIG names another file: the default one is not read."""
    _config(tmp_path / "home" / ".config", example_store)
    other = tmp_path / "other.toml"
    other.write_text(f'[[stores]]\nname = "chosen"\npath = "{example_store}"\npreset = "deepcode"\n')
    done = _dreamd({**env, "DREAMD_CONFIG": str(other)}, "status", "--json")
    assert '"store": "chosen"' in done.stdout and '"found"' not in done.stdout


def test_no_default_file_means_defaults(tmp_path, env):
    """With no file at the default place, nothing is read: a store name is unknown, exit 2, and the line says no config was loaded, naming ~/.config/dreamd/config.toml."""
    done = _dreamd(env, "pass", "found", "--dry-run")
    home = tmp_path / "home" / ".config" / "dreamd" / "config.toml"
    assert (done.returncode, done.stderr) == (2, f"error[config]: no store named 'found': no config was loaded (no --config, no DREAMD_CONFIG, and no {home}) (give --config FILE, or name the folder: --store PATH --preset NAME)\n")


def test_a_broken_default_file_is_an_error_not_ignored(tmp_path, env):
    """A default config that is not TOML is refused (exit 2) rather than silently skipped."""
    (tmp_path / "home" / ".config" / "dreamd").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "dreamd" / "config.toml").write_text("[[stores]\n")
    done = _dreamd(env, "status")
    assert done.returncode == 2 and done.stderr.startswith(f"error[config]: config file {tmp_path}/home/.config/dreamd/config.toml is not valid TOML")
