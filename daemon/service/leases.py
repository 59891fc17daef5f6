"""One writer per store at a time: a lease row in the state database.

Apply, revert and crash recovery write into a store; two of them at once could both pass
compare-and-swap and the second would overwrite the first's index edit, or recovery could
"finish" an apply that is still running. The lease is reentrant for its holder (apply runs
recovery first) and a holder on this host whose process is gone counts as expired, so a
crash never locks a store until the lease times out.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from daemon.core.errors import ApplyError
from daemon.db import repo
from daemon.service.context import App

LEASE_TTL = dt.timedelta(minutes=2)  # apply, revert, recovery: seconds of work
PASS_LEASE_TTL = dt.timedelta(minutes=30)  # a pass may wait on a model; a dead local holder is freed at once


def this_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_is_dead(holder: str) -> bool:
    """A holder on this host whose process no longer exists."""
    host, _, pid = holder.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class StoreBusyError(ApplyError):
    code = "busy"


@contextmanager
def holding_store(app: App, store_id: int, store_name: str, ttl: dt.timedelta = LEASE_TTL) -> Iterator[None]:
    """Hold the store's lease for the block; raise StoreBusyError when another holds it."""
    holder = this_holder()
    with app.engine().begin() as conn:
        taken, blocker = repo.acquire_lease(conn, store_id, holder, app.clock(), ttl, is_dead=holder_is_dead)
    if blocker is not None:
        raise StoreBusyError(f"store {store_name} is being written by {blocker}", hint="retry in a moment")
    try:
        yield
    finally:
        if taken:
            with app.engine().begin() as conn:
                repo.release_lease(conn, store_id, holder)
