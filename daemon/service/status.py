"""What ``dreamd status`` shows: per configured store its schedule, the running daemon's
next run (from its state file on this host), the last pass and what waits for review."""

from __future__ import annotations

from typing import Any

from daemon.db import repo
from daemon.service.context import App
from daemon.service.daemon_state import read_state


def status(app: App) -> dict[str, Any]:
    """``{"daemon": {pid, started_at} | None, "stores": [...]}``, one database read for all."""
    daemon = read_state()
    scheduled = (daemon or {}).get("stores", {})
    recorded = _recorded(app, sorted(app.config.stores))
    stores = []
    for name, store in sorted(app.config.stores.items()):
        live = scheduled.get(name, {})
        stores.append({"store": name, "schedule": store.schedule.describe(), "next_run": live.get("next_run"), "running": bool(live.get("running")), **recorded[name]})
    return {"daemon": {"pid": daemon["pid"], "started_at": daemon["started_at"]} if daemon else None, "stores": stores}


def store_status(app: App, name: str) -> dict[str, Any]:
    """The newest pass (result, counts, model tokens and cost) and proposals by state."""
    return _recorded(app, [name])[name]


def _recorded(app: App, names: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {name: {"last_pass": None, "proposals": {}} for name in names}
    engine = app.read_only_engine()
    if engine is None:
        return found
    try:
        with engine.connect() as conn:
            for name in names:
                row = repo.find_store(conn, name)
                if row is not None:
                    last = repo.last_pass(conn, row.id)
                    found[name] = {"last_pass": _pass_view(last) if last else None, "proposals": repo.proposal_counts(conn, row.id)}
    finally:
        engine.dispose()
    return found


def _pass_view(row: Any) -> dict[str, Any]:
    stats = row.stats or {}
    llm = stats.get("llm") or {}
    view = {
        "id": row.id, "status": row.status, "started_at": _iso(row.started_at), "finished_at": _iso(row.finished_at),
        "by": row.actor, "new": stats.get("pending", 0), "refused": stats.get("refused", 0), "notes": stats.get("notes"),
        "tokens": (llm.get("prompt_tokens", 0) + llm.get("completion_tokens", 0)) if llm else 0, "cost": llm.get("cost") if llm else None,
    }  # fmt: skip
    if row.error:
        view["error"] = row.error
    return view


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None
