"""The running daemon's view of its schedule, for ``dreamd status`` on the same host.

Only the daemon knows when its next runs are (an interval counts from its start, and
jitter is drawn per run), so it writes them, atomically, to ``daemon.json`` in the state
directory whenever they change. A file whose pid is no longer alive is ignored.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from daemon.locations import state_dir

FILE_NAME = "daemon.json"


def state_file() -> Path:
    return state_dir() / FILE_NAME


def write_state(data: dict[str, Any]) -> None:
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".daemon-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def remove_state(pid: int) -> None:
    """Remove the file if it is still ours (a newer daemon may have replaced it)."""
    current = read_state(check_alive=False)
    if current is not None and current.get("pid") == pid:
        state_file().unlink(missing_ok=True)


def read_state(check_alive: bool = True) -> dict[str, Any] | None:
    try:
        data = json.loads(state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if check_alive and not _alive(data.get("pid")):
        return None
    return data


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
