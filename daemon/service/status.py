"""What ``dreamd status`` shows: every store (configured, or registered by path in an earlier
command) with its schedule, the running daemon's next run (from its state file on this host),
the last pass, and what waits for a person and since when."""

from __future__ import annotations

from typing import Any

from daemon.db import repo
from daemon.service.context import App
from daemon.service.daemon_state import read_state
from daemon.service.passes import waiting_proposals


def status(app: App) -> dict[str, Any]:
    """``{"database", "daemon": {pid, started_at} | None, "stores": [...]}``, one database read for all.

    A store registered by path has no schedule (``None``): the daemon passes over configured
    stores only."""
    daemon = read_state(app.db_url)
    scheduled = (daemon or {}).get("stores", {})
    recorded = _recorded(app, None)
    names = sorted(set(app.config.stores) | set(recorded))
    stores = []
    for name in names:
        live = scheduled.get(name, {})
        configured = app.config.stores.get(name)
        schedule = configured.schedule.describe() if configured else None
        stores.append({"store": name, "schedule": schedule, "next_run": live.get("next_run"), "running": bool(live.get("running")), **recorded.get(name, _NOTHING)})
    running = {"pid": daemon["pid"], "started_at": daemon["started_at"]} if daemon else None
    return {"database": database_location(app.db_url), "daemon": running, "stores": stores}


def database_location(db_url: str) -> str:
    """Where the state database lives: its file for SQLite, else its URL without the password."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    return url.database or ":memory:" if url.get_backend_name() == "sqlite" else url.render_as_string(hide_password=True)


_NOTHING: dict[str, Any] = {"last_pass": None, "proposals": {}, "waiting": 0, "waiting_since": None}


def store_status(app: App, name: str) -> dict[str, Any]:
    """The newest pass (result, counts, model tokens and cost), proposals by state, and what waits."""
    return _recorded(app, name).get(name, _NOTHING)


def _recorded(app: App, only: str | None) -> dict[str, dict[str, Any]]:
    """What the database holds for each registered store (or the one named ``only``)."""
    found: dict[str, dict[str, Any]] = {}
    engine = app.read_only_engine()
    if engine is None:
        return found
    try:
        with engine.connect() as conn:
            for row in repo.all_stores(conn):
                if only is not None and row.name != only:
                    continue
                last = repo.last_pass(conn, row.id)
                waiting = waiting_proposals(conn, row.id)
                found[row.name] = {
                    "last_pass": _pass_view(last) if last else None, "proposals": repo.proposal_counts(conn, row.id),
                    "waiting": len(waiting), "waiting_since": _iso(min(w.created_at for w in waiting)) if waiting else None,
                }  # fmt: skip
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
    coverage = llm.get("coverage") if llm else None
    if coverage:
        view["coverage"] = {k: coverage.get(k, 0) for k in ("due", "shown", "left", "groups", "groups_shown", "groups_open", "passes_left")}
    if row.error:
        view["error"] = row.error
    return view


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None
