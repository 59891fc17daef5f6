"""Review and apply on PostgreSQL, through the CLI: the whole cycle, and racing applies.

Skipped unless DREAMD_TEST_PG_URL is set (see tests/conftest.py).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, select

from daemon.core.hashing import hash_bytes
from daemon.db import repo
from daemon.db import schema as t

APPLIERS = 3


def _events(pg_url: str, store: Path) -> list[tuple[str, int | None]]:
    """(type, proposal id) of the store's events, in order."""
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            store_id = repo.find_store(conn, str(store)).id
            query = select(t.events.c.type, t.events.c.proposal_id).where(t.events.c.store_id == store_id).order_by(t.events.c.seq)
            return [tuple(row) for row in conn.execute(query)]
    finally:
        engine.dispose()


def _apply_steps(pg_url: str, store: Path, proposal_id: int) -> list[list[dict]]:
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            return repo.finished_steps(conn, repo.find_store(conn, str(store)).id, proposal_id, "apply")
    finally:
        engine.dispose()


def _pass_and_accept(cli, db: list[str], store: Path) -> list[int]:  # noqa: ANN001
    passed = cli(*db, "pass", "--store", str(store), "--preset", "deepcode", "--json")
    assert passed.code == 0, passed.err
    report = json.loads(passed.out)
    assert report["status"] == "completed"
    ids = [p["id"] for p in report["proposals"] if p["state"] == "pending"]
    assert len(ids) == 6
    accepted = cli(*db, "accept", *map(str, ids))
    assert accepted.code == 0, accepted.err
    return ids


def _said(ids: list[int], pid: int) -> str:
    """What apply says after "#N applied": the first proposal edits MEMORY.md as it saw it, the
    next two do not edit it, and the last three are placed on the index the ones before left."""
    return ": placed on MEMORY.md as earlier applies left it" if pid in ids[3:] else ""


def test_pass_accept_apply_revert_cycle(pg_url, example_store, cli, read_tree):
    """Every proposal of the example store applied, then reverted newest first: the store is
    back to its bytes, and each step is an event in order."""
    db = ["--db", pg_url]
    store = ["--store", str(example_store), "--preset", "deepcode"]
    original = read_tree(example_store)
    ids = _pass_and_accept(cli, db, example_store)
    assert read_tree(example_store) == original

    applied = cli(*db, "apply")
    assert (applied.code, applied.out) == (0, "".join(f"#{i} applied{_said(ids, i)}\n" for i in ids)), applied.err
    after = read_tree(example_store)
    assert "build-commands-copy.md" not in after and ".dreamd-archive/build-commands-copy.md" in after
    assert after["MEMORY.md"] != original["MEMORY.md"]
    assert cli(*db, "verify", *store).out == f"{example_store}: clean\n"

    for pid in reversed(ids):
        reverted = cli(*db, "revert", str(pid))
        assert (reverted.code, reverted.out) == (0, f"#{pid} reverted\n"), reverted.err
    assert read_tree(example_store) == original
    verified = cli(*db, "verify", *store)
    assert (verified.code, verified.out) == (0, f"{example_store}: clean\n")
    states = {p["id"]: p["state"] for p in json.loads(cli(*db, "proposals", "--json").out)}
    assert states == {i: "reverted" for i in ids}

    events = _events(pg_url, example_store)
    assert [e for e in events if e[1] is None] == [("pass.completed", None)]
    for pid in ids:
        assert [kind for kind, of in events if of == pid] == [
            "proposal.pending", "proposal.accepted", "proposal.applied", "proposal.reverted",
        ]  # fmt: skip


def _as_after(before: dict[str, bytes], steps: list[dict]) -> dict[str, str | None]:
    """Hash of every file once ``steps`` are written over ``before`` (None: absent)."""
    expected: dict[str, str | None] = {path: hash_bytes(data) for path, data in before.items()}
    for step in steps:
        assert expected.get(step["path"]) == step["before"], step
        expected[step["path"]] = step["after"]
    return {path: digest for path, digest in expected.items() if digest is not None}


def test_racing_applies_of_one_proposal_apply_it_once(pg_url, example_store, cli, read_tree, tmp_path):
    """APPLIERS processes apply the same accepted proposal at once, for every proposal in
    turn: one applies it, the others are refused (already applied, or the store is busy),
    and the store is as after a single apply."""
    db = ["--db", pg_url]
    ids = _pass_and_accept(cli, db, example_store)
    host = socket.gethostname()
    for pid in ids:
        before = read_tree(example_store)
        argv = [sys.executable, "-m", "daemon", *db, "apply", str(pid)]
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path) for _ in range(APPLIERS)]
        results = [(proc.pid, *proc.communicate(timeout=120), proc.returncode) for proc in procs]
        winners = [r for r in results if r[3] == 0]
        assert len(winners) == 1, results
        assert winners[0][1] == f"#{pid} applied{_said(ids, pid)}\n"
        holders = "|".join(f"{re.escape(host)}:{r[0]}" for r in results)
        for _, out, err, code in (r for r in results if r[3] != 0):  # which refusal: a matter of timing
            already = (5, f"error[proposal]: proposal {pid} is applied; only accepted proposals are applied (it is applied already; dreamd revert {pid} undoes it)\n")
            busy = re.fullmatch(rf"error\[busy\]: store {re.escape(str(example_store))} is being written by ({holders}) \(retry in a moment\)\n", err)
            assert (code, err) == already or (code == 6 and busy), (code, err)
            assert out == ""

        (steps,) = _apply_steps(pg_url, example_store, pid)  # one apply journal, finished
        now = {path: hash_bytes(data) for path, data in read_tree(example_store).items()}
        assert now == _as_after(before, steps)
    assert [e for e in _events(pg_url, example_store) if e[0] == "proposal.applied"] == [("proposal.applied", i) for i in ids]
