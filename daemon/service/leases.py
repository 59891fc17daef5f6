"""One writer per store at a time: a lease row in the state database.

Apply, revert and crash recovery write into a store; two of them at once could both pass
compare-and-swap and the second would overwrite the first's index edit, or recovery could
"finish" an apply that is still running. The lease is reentrant for its holder (apply runs
recovery first) and a holder on this host whose process is gone counts as expired, so a
crash never locks a store until the lease times out.

A pass may wait on a model for a long time, so its lease is short and kept alive by a
heartbeat thread: a host that dies mid-pass frees the store within PASS_LEASE_TTL.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from daemon import logs
from daemon.core.errors import ApplyError
from daemon.db import repo
from daemon.service.context import App
from daemon.service.holders import holder_is_dead, this_holder

LEASE_TTL = dt.timedelta(minutes=2)  # apply, revert, recovery: seconds of work
PASS_LEASE_TTL = dt.timedelta(minutes=5)  # renewed by a heartbeat every third of it while the pass runs

log = logs.get_logger("dreamd.lease")


class StoreBusyError(ApplyError):
    code = "busy"


@contextmanager
def holding_store(app: App, store_id: int, store_name: str, ttl: dt.timedelta = LEASE_TTL, *, heartbeat: bool = False) -> Iterator[None]:
    """Hold the store's lease for the block; raise StoreBusyError when another holds it.

    With ``heartbeat`` a thread renews the lease every third of ``ttl`` until the block ends.
    """
    holder = this_holder()
    with app.engine().begin() as conn:
        taken, blocker = repo.acquire_lease(conn, store_id, holder, app.clock(), ttl, is_dead=holder_is_dead)
    if blocker is not None:
        raise StoreBusyError(f"store {store_name} is being written by {blocker}", hint="retry in a moment")
    done = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(app, store_id, holder, ttl, done), daemon=True) if taken and heartbeat else None
    if beat:
        beat.start()
    try:
        yield
    finally:
        done.set()
        if beat:
            beat.join()
        if taken:
            with app.engine().begin() as conn:
                repo.release_lease(conn, store_id, holder)


def _heartbeat(app: App, store_id: int, holder: str, ttl: dt.timedelta, done: threading.Event) -> None:
    """Renew the lease until ``done``; a failed renewal is logged and retried, never raised."""
    while not done.wait(ttl.total_seconds() / 3):
        try:
            with app.engine().begin() as conn:
                kept = repo.renew_lease(conn, store_id, holder, app.clock(), ttl)
        except Exception as exc:  # a database blip: the next beat tries again
            log.warning("lease.heartbeat_failed", store_id=store_id, error=exc.__class__.__name__)
            continue
        if not kept:
            log.error("lease.lost", store_id=store_id, holder=holder)
            return
