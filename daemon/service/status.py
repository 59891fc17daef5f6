"""What ``dreamd status`` shows per store, from the state database: the last pass and what
waits for review. The schedule and next run come from the running daemon (scheduler)."""

from __future__ import annotations

from typing import Any

from daemon.db import repo
from daemon.service.context import App


def store_status(app: App, name: str) -> dict[str, Any]:
    """The newest pass (result, counts, model tokens and cost) and proposals by state."""
    engine = app.read_only_engine()
    if engine is None:
        return {"last_pass": None, "proposals": {}}
    try:
        with engine.connect() as conn:
            row = repo.find_store(conn, name)
            if row is None:
                return {"last_pass": None, "proposals": {}}
            last = repo.last_pass(conn, row.id)
            counts = repo.proposal_counts(conn, row.id)
    finally:
        engine.dispose()
    return {"last_pass": _pass_view(last) if last else None, "proposals": counts}


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
