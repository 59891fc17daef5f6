"""The model-backed part of a pass: what to send, the planner call, and what it cost.

Only notes changed since the last complete LLM pass (and notes falling due) seed the
candidate groups, so an unchanged store costs zero model calls. A model call that fails
(a reply still unusable after its repair, a refusal, a cut-off reply) leaves the LLM part
incomplete, with the reason: its notes stay due for the next pass. Everything the model
proposes goes through the planner's own checks and then the same build, validation and
diff proof as a detector's draft. Nothing here writes a store.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

from daemon.config import StoreConfig
from daemon.core.globs import matches
from daemon.core.view import StoreView
from daemon.db import repo
from daemon.planners.detectors.ttl import due_notes
from daemon.service.context import App


@dataclass
class LLMOutcome:
    """What the model part of a pass produced, for the pass record."""

    plan: Any = None  # daemon.planners.llm.planner.LLMPlan
    changed: int = 0
    error: str | None = None
    calls: list[Any] = field(default_factory=list)

    @property
    def drafts(self) -> list[Any]:
        return list(self.plan.drafts) if self.plan is not None else []

    @property
    def refusals(self) -> list[Any]:
        return list(self.plan.refusals) if self.plan is not None else []

    @property
    def incomplete(self) -> str | None:
        """Why the model part did not plan every note it should have (None: it did)."""
        if self.error is not None:
            return self.error
        failed = [c for c in self.calls if c.status == _failed()]
        if failed:
            made = len(self.calls)
            return (
                f"{len(failed)} of {made} model call{'s' if made != 1 else ''} failed ({failed[0].error}); "
                "their notes are sent again at the next pass"
            )
        return getattr(self.plan, "stopped", None)

    @property
    def failed_calls(self) -> int:
        return sum(1 for c in self.calls if c.status == _failed())

    def stats(self) -> dict[str, Any]:
        calls = self.calls
        plan = self.plan
        return {
            "calls": len(calls),
            "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "cost": None if any(c.cost is None for c in calls) or not calls else round(sum(c.cost for c in calls), 6),
            "changed_notes": self.changed,
            "stopped": getattr(plan, "stopped", None),
            "complete": self.incomplete is None,
            "incomplete": self.incomplete,
            "failed_calls": self.failed_calls,
            "whole_store": bool(getattr(plan, "whole_store", False)),
            "flagged": [{"path": p, "reason": r} for p, r in getattr(plan, "flagged", [])],
            "error": self.error,
        }


def _failed() -> str:
    """The status of a failed call (the planner is imported only when a model is configured)."""
    from daemon.planners.llm.records import FAILED

    return FAILED


def changed_since_last_llm_pass(conn: Connection, store_id: int, view: StoreView) -> set[str]:
    """Notes the model has not yet seen as they are now.

    Changed since the last pass whose LLM part completed, minus notes already sent by a
    later, unfinished LLM part (budget stop, failure) in a call that succeeded, whose bytes
    have not changed since: a pass stopped at its budget goes on where it stopped instead of
    starting over, and the notes of a failed call are sent again.
    """
    baseline: dict[str, str] | None = None
    sent: dict[str, str | None] = {}  # path -> its hash when an unfinished pass sent it
    for row in repo.passes(conn, store_id, limit=200):
        llm = (row.stats or {}).get("llm")
        if row.status not in ("completed", "failed") or not llm or not row.root_hash:
            continue
        manifest_id = repo.manifest_id(conn, store_id, row.root_hash)
        seen = repo.manifest_entries(conn, store_id, manifest_id) if manifest_id else {}
        if row.status == "completed" and llm.get("complete"):
            baseline = seen
            break
        for call in repo.model_calls(conn, store_id, row.id):
            if call.status == _failed():
                continue  # its reply was not used: its notes are still to be planned
            for path in call.notes.get("paths", []):
                sent.setdefault(path, seen.get(path))
    return {
        path for path, note in view.notes.items()
        if (baseline or {}).get(path) != note.hash and sent.get(path) != note.hash
    }  # fmt: skip


def plan_with_model(app: App, store: StoreConfig, view: StoreView, now: dt.datetime, changed: set[str]) -> LLMOutcome:
    """Run the LLM planner on what changed; a model failure is recorded, not raised."""
    from daemon.core.errors import PlannerError
    from daemon.planners.llm.planner import LLMPlanner

    settings = store.llm
    assert settings is not None
    client = app.client_for(settings)
    counter = getattr(client, "count_tokens", None)
    count_tokens = (lambda text: counter(text, settings)) if counter else (lambda text: len(text) // 4)
    planner = LLMPlanner(client, settings, count_tokens, prompt_dir=settings.prompt_dir)
    outcome = LLMOutcome(changed=len(changed))
    excluded = lambda path: matches(path, store.llm_exclude)  # noqa: E731 - a one-line predicate
    try:
        outcome.plan = planner.plan(view, now, changed, set(due_notes(view, now, app.config.planner)), excluded)
        outcome.calls = list(outcome.plan.calls)
    except PlannerError as exc:
        outcome.error = exc.one_line()
        outcome.calls = list(getattr(exc, "calls", []))
    return outcome


def record_calls(conn: Connection, store_id: int, pass_id: int, calls: list[Any], now: dt.datetime) -> None:
    """One model_calls row per call: tokens, cost, latency, template hash; no note text."""
    rows = [
        {
            "store_id": store_id, "pass_id": pass_id, "at": now, "model": c.model, "template": c.template_name,
            "template_hash": c.template_hash, "status": c.status, "finish_reason": c.finish_reason,
            "prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens, "cost": c.cost,
            "latency_ms": int(round(c.latency_s * 1000)), "http_calls": c.http_calls, "redactions": c.redactions,
            "notes": {"v": 1, "paths": list(c.notes)}, "error": c.error,
        }  # fmt: skip
        for c in calls
    ]
    repo.add_model_calls(conn, rows)
