"""Passes whose process died: closed as failed, so history never shows a pass running forever.

A pass records which process runs it (``host:pid``). When that process is gone — killed,
out of memory, a worker of the daemon that crashed — the pass row would stay "running".
The next pass over the store, and the daemon right after a worker dies, close such rows.
Only local runners can be known dead; a pass from another host ends when its lease expires
and the next pass there closes it.
"""

from __future__ import annotations

from daemon import logs
from daemon.db import repo
from daemon.service.context import App
from daemon.service.holders import holder_is_dead

log = logs.get_logger("dreamd.pass")


def close_dead_passes(app: App, store_id: int | None = None, why: str = "the process running it died") -> list[int]:
    """Mark running passes whose local runner process is gone as failed; return their ids."""
    closed = []
    with app.engine().begin() as conn:
        for row in repo.running_passes(conn, store_id):
            if not row.runner or not holder_is_dead(row.runner):
                continue
            error = f"{why} ({row.runner})"
            repo.finish_pass(conn, row.store_id, row.id, status="failed", finished_at=app.clock(), error=error)
            repo.add_event(conn, row.store_id, "pass.failed", app.actor, app.surface, app.clock(), {"error": error}, pass_id=row.id)
            log.error("pass.died", store_id=row.store_id, pass_id=row.id, runner=row.runner)
            closed.append(row.id)
    return closed
