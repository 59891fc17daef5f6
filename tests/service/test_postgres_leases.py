"""One pass per store at a time, across processes sharing a PostgreSQL database.

Several real ``dreamd pass`` processes start at once against one store, round after
round. A trigger added to the test's schema logs every change of the lease row with the
server's clock, so the test sees exactly who held the store when; the passes table and
the event log must agree with it. Skipped unless DREAMD_TEST_PG_URL is set.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text

from daemon.db import schema as t
from daemon.db.engine import open_engine

ROUNDS = 4
RACERS = 4
NOTES = 250  # a pass over them takes a moment: long enough for the others to collide
BUSY = "store busy: store {store} is being written by "

LOG_LEASES = [
    "CREATE TABLE lease_log (id bigserial PRIMARY KEY, op text NOT NULL, holder text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
    """CREATE FUNCTION log_lease() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        INSERT INTO lease_log (op, holder) VALUES ('release', OLD.holder);
      ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO lease_log (op, holder) VALUES ('take', NEW.holder);
      ELSIF OLD.holder IS DISTINCT FROM NEW.holder THEN
        INSERT INTO lease_log (op, holder) VALUES ('release', OLD.holder), ('take', NEW.holder);
      END IF;
      RETURN NULL;
    END $$""",
    "CREATE TRIGGER log_lease AFTER INSERT OR UPDATE OR DELETE ON leases FOR EACH ROW EXECUTE FUNCTION log_lease()",
]


@dataclass(frozen=True)
class Racer:
    round: int
    holder: str
    code: int
    out: str
    err: str


@pytest.fixture
def logged_engine(pg_url: str) -> Iterator[Engine]:
    """The test's schema, migrated (so racers never race on migrations), leases logged."""
    engine = open_engine(pg_url)
    with engine.begin() as conn:
        for statement in LOG_LEASES:
            conn.exec_driver_sql(statement)
    yield engine
    engine.dispose()


def _write_store(root: Path) -> None:
    """NOTES notes of random words, a few of them exact duplicates (merge proposals)."""
    rng = random.Random(20260101)
    words = [f"word{i}" for i in range(2000)]
    root.mkdir()
    for i in range(NOTES):
        body = " ".join(rng.choice(words) for _ in range(250))
        (root / f"note-{i:04d}.md").write_text(f"# Note {i}\n\n{body}\n")
    for i in range(0, 20, 2):
        (root / f"copy-{i:04d}.md").write_bytes((root / f"note-{i:04d}.md").read_bytes())


def _pass(pg_url: str, store: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "daemon", "--db", pg_url, "pass", "--store", str(store), "--preset", "generic", "--json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=store.parent)


def _race(pg_url: str, store: Path) -> list[Racer]:
    host = socket.gethostname()
    racers = []
    for number in range(ROUNDS):
        with (store / "changes.md").open("a") as f:  # every round has new work to do
            f.write(f"round {number}\n")
        procs = [_pass(pg_url, store) for _ in range(RACERS)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            racers.append(Racer(number, f"{host}:{proc.pid}", proc.returncode, out, err))
    return racers


def _lease_windows(engine: Engine) -> dict[str, list[tuple[dt.datetime, dt.datetime]]]:
    """Holder -> (taken, released) per holding, after checking that holdings never overlap."""
    with engine.connect() as conn:
        log = conn.execute(text("SELECT op, holder, at FROM lease_log ORDER BY id")).all()
    windows: dict[str, list[tuple[dt.datetime, dt.datetime]]] = {}
    current: tuple[str, dt.datetime] | None = None
    for op, holder, at in log:
        if op == "take":
            assert current is None, f"{holder} took the lease while {current[0]} held it"
            current = (holder, at)
        else:
            assert current is not None and current[0] == holder, f"{holder} released a lease it did not hold ({current})"
            windows.setdefault(holder, []).append((current[1], at))
            current = None
    assert current is None, f"{current[0]} never released the lease"
    return windows


def _clock_offset(engine: Engine) -> dt.timedelta:
    """The server's clock minus ours (zero on one machine), to compare its times with ours."""
    before = dt.datetime.now(dt.timezone.utc)
    with engine.connect() as conn:
        server = conn.scalar(text("SELECT clock_timestamp()"))
    after = dt.datetime.now(dt.timezone.utc)
    return server - (before + (after - before) / 2)


def test_racing_passes_take_turns_and_the_others_skip_as_busy(pg_url, logged_engine, tmp_path):
    store = tmp_path / "memory"
    _write_store(store)
    first = _pass(pg_url, store)  # the store is registered before anyone races for it
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["status"] == "completed"

    racers = _race(pg_url, store)

    crashed = [r for r in racers if r.code not in (0, 12)]  # 12: skipped, another run holds the store
    assert not crashed, "\n".join(f"{r.holder} exited {r.code}: {r.err[-2000:]}" for r in crashed)

    # the lease: never two holders at once (checked by _lease_windows), each its own holder
    windows = _lease_windows(logged_engine)
    offset = _clock_offset(logged_engine)
    with logged_engine.connect() as conn:
        passes = {row.id: row for row in conn.execute(select(t.passes))}
        events = conn.execute(select(t.events).where(t.events.c.type.like("pass.%"))).all()
    events_of = {pass_id: [e for e in events if e.pass_id == pass_id] for pass_id in passes}
    busy_prefix = BUSY.format(store=store)
    worked_in: dict[int, list[str]] = {}
    busy = 0
    for racer in racers:
        report = json.loads(racer.out)
        assert racer.code == (12 if report["status"] == "busy" else 0), (racer.code, report["status"])
        row = passes[report["pass_id"]]
        (event,) = events_of[row.id]
        if report["status"] == "busy":
            busy += 1
            blocker = row.error.removeprefix(busy_prefix)
            assert (row.status, event.type, event.payload["reason"]) == ("skipped", "pass.skipped", row.error)
            assert row.error.startswith(busy_prefix), row.error
            same_round = [r.holder for r in racers if r.round == racer.round and r.holder != racer.holder]
            assert blocker in same_round and blocker in windows, f"{racer.holder} was told {blocker} holds the store"
            assert racer.holder not in windows, f"{racer.holder} reported busy but held the lease"
            continue
        # it did the work: it held the lease exactly once and its pass ran inside that holding,
        # so (holdings never overlapping) no two passes that did the work ever overlapped
        assert report["status"] in ("completed", "skipped"), report["status"]
        assert (row.status, event.type) == (report["status"], f"pass.{report['status']}")
        assert row.error is None
        (held,) = windows[racer.holder]
        taken, released = (moment - offset for moment in held)
        assert row.started_at <= taken + dt.timedelta(milliseconds=200), (row.started_at, taken)
        assert row.finished_at <= released + dt.timedelta(milliseconds=200), (row.finished_at, released)
        worked_in.setdefault(racer.round, []).append(report["status"])

    assert busy, "no pass ever found the store busy: nothing raced"
    for number in range(ROUNDS):
        statuses = sorted(worked_in.get(number, []))
        assert statuses[:1] == ["completed"] and set(statuses[1:]) <= {"skipped"}, f"round {number}: {statuses}"
    assert all(p.status in ("completed", "skipped") for p in passes.values())
