"""What happened to a store: passes, snapshots, events, and whether it is as dreamd left it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from daemon.config import StoreConfig
from daemon.core.hashing import manifest_changes
from daemon.db import repo
from daemon.service.context import App
from daemon.service.workspace import roots_of
from daemon.service.apply import recover, sweep_temp_files
from daemon.stores import port


def _store_id(app: App, store: StoreConfig) -> int | None:
    with app.engine().connect() as conn:
        row = repo.find_store(conn, store.name)
    return row.id if row else None


def history(app: App, store: StoreConfig, as_of: dt.datetime | None = None) -> dict[str, Any]:
    """Passes and snapshots of a store; with ``as_of``, the files it had at that time."""
    store_id = _store_id(app, store)
    out: dict[str, Any] = {"store": store.name, "passes": [], "snapshots": []}
    if store_id is None:
        return out
    with app.engine().connect() as conn:
        out["passes"] = [
            {"id": p.id, "status": p.status, "surface": p.surface, "actor": p.actor, "started_at": p.started_at.isoformat(),
             "finished_at": p.finished_at.isoformat() if p.finished_at else None, "root_hash": p.root_hash,
             "stats": p.stats, "error": p.error}
            for p in repo.passes(conn, store_id)
        ]  # fmt: skip
        calls_by_pass: dict[int, list[dict[str, Any]]] = {}
        for c in repo.model_calls(conn, store_id):
            calls_by_pass.setdefault(c.pass_id, []).append(
                {"model": c.model, "status": c.status, "template": c.template, "template_hash": c.template_hash,
                 "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "cost": c.cost,
                 "latency_ms": c.latency_ms, "http_calls": c.http_calls, "redactions": c.redactions, "error": c.error}
            )  # fmt: skip
        for entry in out["passes"]:
            entry["model_calls"] = calls_by_pass.get(entry["id"], [])
        out["snapshots"] = [
            {"id": s.id, "reason": s.reason, "recorded_at": s.recorded_at.isoformat(), "root_hash": s.root_hash,
             "files": s.file_count, "pass_id": s.pass_id, "proposal_id": s.proposal_id}
            for s in repo.snapshots(conn, store_id)
        ]  # fmt: skip
        if as_of is not None:
            snap = repo.latest_snapshot(conn, store_id, as_of)
            out["as_of"] = {
                "time": as_of.isoformat(),
                "snapshot": snap.id if snap else None,
                "files": repo.manifest_entries(conn, store_id, snap.manifest_id) if snap else {},
            }
    return out


def event_log(app: App, store: StoreConfig | None = None, limit: int = 100) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    with app.engine().connect() as conn:
        for row in repo.all_stores(conn):
            if store is not None and row.name != store.name:
                continue
            for e in repo.events(conn, row.id, limit):
                found.append(
                    {"store": row.name, "seq": e.seq, "at": e.at.isoformat(), "type": e.type, "actor": e.actor,
                     "surface": e.surface, "pass_id": e.pass_id, "proposal_id": e.proposal_id, "payload": e.payload}
                )  # fmt: skip
    return sorted(found, key=lambda e: (e["at"], e["store"], e["seq"]))[-limit:]


@dataclass
class Verification:
    store: str
    recorded_root: str | None
    current_root: str
    problems: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.problems


def verify(app: App, store: StoreConfig) -> Verification:
    """Is the store byte-for-byte what dreamd last recorded, and is its journal clean? A caught
    file (``stores.caught``) is named as such until the person has read and removed it."""
    recover(app, store)
    store_id = _store_id(app, store)
    left = sweep_temp_files(app, store, store_id) if store_id is not None else []  # first: the scan sees what it made
    roots = roots_of(store)
    scan = port.scan(roots, store.settings)
    result = Verification(store.name, None, scan.root_hash)
    if store_id is None:
        result.problems.append("no pass has been recorded for this store yet")
        return result
    caught = port.find_caught_files(roots)
    with app.engine().connect() as conn:
        snap = repo.latest_snapshot(conn, store_id)
        conflicts = repo.unfinished_journals(conn, store_id, ("writing", "conflict"))
        failed = repo.failed_journals(conn, store_id) if conflicts else {}
        recorded = repo.manifest_entries(conn, store_id, snap.manifest_id) if snap else {}
    result.recorded_root = snap.root_hash if snap else None
    for entry in conflicts:
        why = (f"its writes failed ({failed[entry.id]}) and were not rolled back; no apply or revert of the store runs until dreamd resolve {entry.id}"
               if entry.id in failed else "a file holds neither its old nor its new bytes")  # fmt: skip
        result.problems.append(f"journal {entry.id} ({entry.operation} of proposal {entry.proposal_id}) is {entry.state}: {why}")
    if snap and snap.root_hash != scan.root_hash:
        changes = manifest_changes(recorded, scan.manifest)
        for path, state in sorted((p, state) for state, paths in changes.items() for p in paths if p not in caught):
            result.problems.append(f"{path}: {state} since dreamd last recorded the store")
    result.problems += [f"{p}: caught file, what someone wrote to a note while dreamd swapped it (read it, then delete it)" for p in caught]
    result.problems += [f"{p}: leftover temporary file" for p in left]
    return result
