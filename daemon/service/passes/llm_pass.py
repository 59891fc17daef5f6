"""The model-backed part of a pass: what to send, the planner call, what it cost and showed.

Only notes the model has not been shown as they are (the ledger, ``service/passes/coverage.py``),
notes falling due, and groups of related notes never shown together are sent, so an
unchanged, covered store costs zero model calls. The LLM part is complete only when every
due note was in a call whose reply was used; a call that fails (a reply still unusable
after its second turn, a refusal), or one a budget stopped, leaves its notes due for the
next pass, and the report says how many and after how many passes the store is covered.
Everything the model proposes goes through the planner's own checks and then the same
build, validation and diff proof as a detector's draft. Nothing here writes a store.
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
from daemon.service.passes.coverage import Ledger


@dataclass
class LLMOutcome:
    """What the model part of a pass produced, for the pass record."""

    plan: Any = None  # daemon.planners.llm.planner.LLMPlan
    changed: int = 0
    error: str | None = None
    calls: list[Any] = field(default_factory=list)
    pending: int = 0  # open groups of earlier passes offered to this one

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
        left = self.plan.left if self.plan is not None else []
        if left:  # a budget stop that left only groups of notes already shown is not incomplete
            stopped = getattr(self.plan, "stopped", None) or "not sent"
            return f"{len(left)} of {len(self.plan.due)} due notes not yet shown to the model ({stopped}); they are sent at the next pass"
        return None

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
            "coverage": plan.coverage() if plan is not None else None,
        }


def _failed() -> str:
    """The status of a failed call (the planner is imported only when a model is configured)."""
    from daemon.planners.llm.records import FAILED

    return FAILED


def plan_with_model(app: App, store: StoreConfig, view: StoreView, now: dt.datetime, changed: set[str], ledger: Ledger) -> LLMOutcome:
    """Run the LLM planner on what is due and open; a model failure is recorded, not raised."""
    from daemon.core.errors import PlannerError
    from daemon.planners.llm.candidates import Group
    from daemon.planners.llm.planner import LLMPlanner

    settings = store.llm
    assert settings is not None
    client = app.client_for(settings)
    counter = getattr(client, "count_tokens", None)
    count_tokens = (lambda text: counter(text, settings)) if counter else (lambda text: len(text) // 4)
    planner = LLMPlanner(client, settings, count_tokens, prompt_dir=settings.prompt_dir)
    pending = [Group(paths, reasons, ()) for paths, reasons in ledger.pending(view)]
    outcome = LLMOutcome(changed=len(changed), pending=len(pending))
    excluded = lambda path: matches(path, store.llm_exclude)  # noqa: E731 - a one-line predicate
    try:
        outcome.plan = planner.plan(view, now, changed, set(due_notes(view, now, app.config.planner)), excluded, pending)
        outcome.calls = list(outcome.plan.calls)
    except PlannerError as exc:
        outcome.error = exc.one_line()
        outcome.calls = list(getattr(exc, "calls", []))
        outcome.plan = getattr(exc, "partial", None)
    return outcome


def take_in(ledger: Ledger, view: StoreView, outcome: LLMOutcome) -> tuple[list[Any], list[str]]:
    """What the model was shown this pass, into ``ledger``: the rows to write and keys to drop."""
    plan = outcome.plan
    if plan is None:
        return [], []
    held = [g.paths for g in plan.groups_shown] + [tuple(g) for g in plan.unfit]  # too big for a call: closed, not open
    opened = [(g.paths, g.reasons) for g in plan.open_groups]
    return ledger.record(view, plan.shown, held, opened)


def record_ledger(conn: Connection, store_id: int, pass_id: int, ledger: Ledger, view: StoreView, outcome: LLMOutcome, now: dt.datetime) -> None:
    """Write what the model was shown this pass (failed passes too: what it read, it read)."""
    from daemon.db.ledger import save_ledger

    rows, gone = take_in(ledger, view, outcome)
    if rows or gone:
        save_ledger(conn, store_id, pass_id, now, rows, gone)


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
