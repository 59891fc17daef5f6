"""Where dreamd keeps its own files on this host; shared by the db layer and the daemon (which
imports no database code)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """Where dreamd keeps its state on this host (the SQLite file, the daemon's status).

    systemd's ``StateDirectory=`` wins (it may list several, colon-separated; the first is
    ours), then ``$XDG_STATE_HOME/dreamd`` (ignored when relative, as the spec says), then
    ``~/.local/state/dreamd``.
    """
    state_directory = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    xdg_state_home = os.environ.get("XDG_STATE_HOME", "")
    if state_directory:
        return Path(state_directory)
    if xdg_state_home and Path(xdg_state_home).is_absolute():
        return Path(xdg_state_home) / "dreamd"
    return Path.home() / ".local" / "state" / "dreamd"


def default_db_url() -> str:
    """The SQLite file used when no URL is configured: ``state.db`` in the state directory."""
    return f"sqlite:///{state_dir() / 'state.db'}"
