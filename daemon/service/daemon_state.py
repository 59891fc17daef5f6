"""The running daemon of a state database: one at a time, and its schedule for ``dreamd status``.

One daemon per state database on a host: a second one would pass over the same stores
again, run ``[notify]`` twice, and, exiting, remove the first one's state file. So the
daemon holds an exclusive ``flock`` on ``daemon-<key>.lock`` in the state directory for its
whole life, ``<key>`` naming the database (its file, or its URL without the password): the
kernel lets it go when the process ends, however it ends, so a crash leaves no stale lock.
A second daemon on that database is refused in one line naming the first (pid, host, since
when). Daemons of other hosts sharing a PostgreSQL database have state directories of their
own and are not refused: the store leases keep them from passing over one store at once.

Only the daemon knows when its next runs are (an interval counts from its start, and jitter
is drawn per run), so it writes them, atomically, to ``daemon-<key>.json`` beside the lock
whenever they change; ``status`` reads the file of the database it looks at. A file whose
pid is no longer alive is ignored.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from daemon.core.errors import DaemonRunningError
from daemon.locations import state_dir

_PASSWORD = re.compile(r"^([^:/]+://[^:@/]*):[^@/]*@")  # scheme://user:password@ -> scheme://user@


def database_key(db_url: str) -> str:
    """A short name of the database a URL opens: the resolved file of a SQLite URL, else the
    URL without its password or driver, so that ``postgresql://`` and ``postgresql+psycopg://``
    of one database are one key."""
    scheme, _, rest = db_url.partition("://")
    if scheme.split("+")[0] == "sqlite":
        path = rest[1:].split("?")[0] if rest.startswith("/") else rest.split("?")[0]
        named = str(Path(path).expanduser().resolve()) if path and path != ":memory:" else rest
        return hashlib.sha256(f"sqlite:{named}".encode()).hexdigest()[:16]
    plain = _PASSWORD.sub(r"\1@", f"{scheme.split('+')[0]}://{rest}")
    return hashlib.sha256(plain.encode()).hexdigest()[:16]


def state_file(db_url: str) -> Path:
    return state_dir() / f"daemon-{database_key(db_url)}.json"


def lock_file(db_url: str) -> Path:
    return state_dir() / f"daemon-{database_key(db_url)}.lock"


class DatabaseHold:
    """This process's hold on a state database as its one daemon (see the module)."""

    def __init__(self, db_url: str, started_at: dt.datetime) -> None:
        self.db_url = db_url
        self.started_at = started_at
        self._fd: int | None = None

    def __enter__(self) -> DatabaseHold:
        path = lock_file(self.db_url)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise DaemonRunningError(f"a daemon already runs on this state database: {holder}", hint="stop that one first; one daemon per state database") from None
        except BaseException:
            os.close(fd)
            raise
        me = {"pid": os.getpid(), "host": os.uname().nodename, "started_at": self.started_at.isoformat()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        """Let the database go (the lock file stays: removing it could let a third daemon lock
        a new file while a second waits on the old one)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    """The daemon holding a lock file, as its own record says: ``pid 123 on host alpha since …``."""
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return "one that is starting"
    return f"pid {data['pid']} on host {data.get('host', '?')}, since {str(data.get('started_at', '?'))[:19]}"


def write_state(db_url: str, data: dict[str, Any]) -> None:
    path = state_file(db_url)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".daemon-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def remove_state(db_url: str, pid: int) -> None:
    """Remove the file if it is still ours (a newer daemon may have replaced it)."""
    current = read_state(db_url, check_alive=False)
    if current is not None and current.get("pid") == pid:
        state_file(db_url).unlink(missing_ok=True)


def read_state(db_url: str, check_alive: bool = True) -> dict[str, Any] | None:
    try:
        data = json.loads(state_file(db_url).read_text(encoding="utf-8"))
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
