"""Telling a person that proposals wait: ``[notify] command`` after a pass, and what waits.

A proposal *waits* while a person still has something to do with it: ``pending`` (to
review) or ``accepted`` and not yet applied (to apply). After a pass (not a dry run, not one
skipped because another run held the store) that leaves at least one waiting, the configured
program runs with no shell: ``prog arg… STORE WAITING PASS_ID``, and on stdin
``{"v": 1, "store", "pass_id", "waiting", "proposals": [{"id", "kind", "title"}]}``.
It is a courtesy, never part of the pass: a program that fails, hangs past its timeout (it
is killed then) or cannot be started is logged and the pass stays as it was.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from daemon import logs
from daemon.config import StoreConfig
from daemon.core.proposals import OPEN
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.context import App

log = logs.get_logger("dreamd.notify")

WAITING_STATES = OPEN
NOTIFY_VERSION = 1
_ERROR_TAIL = 300  # characters of the program's stderr kept in the log line


@dataclass(frozen=True)
class Waiting:
    """One proposal that waits for a person."""

    id: int
    kind: str
    title: str
    state: str
    created_at: Any


def waiting_proposals(conn: Connection, store_id: int) -> list[Waiting]:
    """The store's pending and accepted proposals, oldest first (no diffs read)."""
    p = t.proposals
    query = select(p.c.id, p.c.kind, p.c.title, p.c.state, p.c.created_at).where(p.c.store_id == store_id, p.c.state.in_(WAITING_STATES)).order_by(p.c.id)
    return [Waiting(*row) for row in conn.execute(query)]


def notify_waiting(app: App, store: StoreConfig, status: str, pass_id: int | None) -> bool:
    """Run the notify command if the pass that just ended leaves proposals waiting; True if it ran."""
    command = app.config.notify.command
    if not command or pass_id is None or status in ("busy", "dry-run"):  # a pass that did not run
        return False
    with app.engine().connect() as conn:
        row = repo.find_store(conn, store.name)
        waiting = waiting_proposals(conn, row.id) if row is not None else []
    if not waiting:
        return False
    message = {"v": NOTIFY_VERSION, "store": store.name, "pass_id": pass_id, "waiting": len(waiting),
               "proposals": [{"id": w.id, "kind": w.kind, "title": w.title} for w in waiting]}  # fmt: skip
    _run(list(command) + [store.name, str(len(waiting)), str(pass_id)], message, app.config.notify.timeout_s)
    return True


def _run(argv: list[str], message: dict[str, Any], timeout: float) -> None:
    where = log.bind(store=message["store"], pass_id=message["pass_id"], command=argv[0])
    try:
        done = subprocess.run(argv, input=json.dumps(message).encode(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        where.warning("notify.failed", error=f"did not finish within {timeout:g}s; killed")
        return
    except OSError as exc:
        where.warning("notify.failed", error=f"cannot run: {exc.strerror or exc}")
        return
    if done.returncode != 0:
        stderr = done.stderr.decode("utf-8", "replace").strip()[-_ERROR_TAIL:]
        where.warning("notify.failed", error=f"exited with {done.returncode}", stderr=stderr)
        return
    where.info("notify.sent", waiting=message["waiting"])
