"""Telling a person that proposals wait: ``[notify] command`` after a pass, and what waits.

A proposal *waits* while a person still has something to do with it: ``pending`` (to
review) or ``accepted`` and not yet applied (to apply); ``status`` and ``pass --all`` count
the same. After a pass (not a dry run, not one skipped because another run held the store)
that leaves at least one waiting, the configured program runs with no shell:
``prog arg… STORE WAITING PASS_ID NEW``, and on stdin ``{"v": 1, "store", "pass_id",
"waiting", "new", "proposals": [{"id", "kind", "title"}]}``; NEW is how many of those this
pass made. With ``only_new`` it runs only when NEW is not 0 (no reminder of older ones).
It is a courtesy, never part of the pass: a program that fails, hangs past its timeout or
cannot be started is logged and the pass stays as it was. It runs in a session (and process
group) of its own, and at the timeout the whole group is killed, so no child it started
outlives it; of its stderr only the last ``STDERR_TAIL`` bytes are kept, however much it
writes, for the log line.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
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
STDERR_TAIL = 4096  # bytes of the program's stderr kept for the log line: its last words
_CHUNK = 1 << 16
_POLL_S = 0.05  # how often an exit is looked for while a child of the program holds stderr open


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


def notify_waiting(app: App, store: StoreConfig, status: str, pass_id: int | None, new: int = 0) -> bool:
    """Run the notify command if the pass that just ended leaves proposals waiting (``new``:
    how many of them it made); True if it ran."""
    notify = app.config.notify
    if not notify.command or pass_id is None or status in ("busy", "dry-run"):  # a pass that did not run
        return False
    if notify.only_new and not new:
        return False
    with app.engine().connect() as conn:
        row = repo.find_store(conn, store.name)
        waiting = waiting_proposals(conn, row.id) if row is not None else []
    if not waiting:
        return False
    message = {"v": NOTIFY_VERSION, "store": store.name, "pass_id": pass_id, "waiting": len(waiting), "new": new,
               "proposals": [{"id": w.id, "kind": w.kind, "title": w.title} for w in waiting]}  # fmt: skip
    _run(list(notify.command) + [store.name, str(len(waiting)), str(pass_id), str(new)], message, notify.timeout_s)
    return True


def _run(argv: list[str], message: dict[str, Any], timeout: float) -> None:
    where = log.bind(store=message["store"], pass_id=message["pass_id"], command=argv[0])
    try:
        program = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        where.warning("notify.failed", error=f"cannot run: {exc.strerror or exc}")
        return
    with program:  # closes the pipes and reaps it
        finished = False
        try:
            finished, tail = _talk(program, json.dumps(message).encode(), time.monotonic() + timeout)
        finally:
            if not finished:
                _kill_group(program)
    stderr = tail.decode("utf-8", "replace").strip()
    if not finished:
        where.warning("notify.failed", error=f"did not finish within {timeout:g}s; killed", stderr=stderr)
    elif program.returncode != 0:
        where.warning("notify.failed", error=f"exited with {program.returncode}", stderr=stderr)
    else:
        where.info("notify.sent", waiting=message["waiting"])


def _talk(program: subprocess.Popen[bytes], data: bytes, deadline: float) -> tuple[bool, bytes]:
    """Write ``data`` to the program's stdin and keep the tail of its stderr until it exits;
    (whether it exited by ``deadline``, the last ``STDERR_TAIL`` bytes it wrote to stderr)."""
    stdin, stderr = program.stdin.fileno(), program.stderr.fileno()  # type: ignore[union-attr]
    tail, unsent = bytearray(), memoryview(data)
    for fd in (stdin, stderr):
        os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(stdin, selectors.EVENT_WRITE)
        selector.register(stderr, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if program.poll() is not None:  # a child it left may hold stderr open: no waiting for its end
                _read(stderr, tail, reads=16)
                return True, bytes(tail)
            if not selector.get_map():
                try:
                    program.wait(left)
                except subprocess.TimeoutExpired:
                    break
                return True, bytes(tail)
            for key, _ in selector.select(min(left, _POLL_S)):
                if key.fd == stderr and not _read(stderr, tail, reads=1):
                    selector.unregister(stderr)
                elif key.fd == stdin:
                    unsent = _write(stdin, unsent)
                    if not unsent:
                        selector.unregister(stdin)
                        program.stdin.close()  # type: ignore[union-attr]
    return False, bytes(tail)


def _read(fd: int, tail: bytearray, reads: int) -> bool:
    """Read up to ``reads`` chunks of what ``fd`` holds into ``tail``, keeping its last
    ``STDERR_TAIL`` bytes; False at the end of the stream."""
    for _ in range(reads):
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        tail += chunk
        del tail[:-STDERR_TAIL]
    return True


def _write(fd: int, unsent: memoryview) -> memoryview:
    """Write what the pipe takes of ``unsent``; what is left (nothing when the program closed its stdin)."""
    try:
        return unsent[os.write(fd, unsent[:_CHUNK]) :]
    except BlockingIOError:
        return unsent
    except BrokenPipeError:
        return unsent[:0]


def _kill_group(program: subprocess.Popen[bytes]) -> None:
    """SIGKILL the program's process group (its session's: every process it started that did
    not leave it), then reap the program."""
    try:
        os.killpg(program.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    program.wait()
