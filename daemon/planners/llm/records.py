"""What an LLM planning run leaves behind: drafts, refusals, one record per model call.

Kept apart from the planner so the service (and its history views) can import the record
types without the planning machinery. No note text is held here beyond paths and the
Draft/Refusal texts themselves, so a pass record never stores what the model read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from daemon.core.proposals import Draft
from daemon.llm.base import ModelResponse
from daemon.llm.limits import Budget
from daemon.planners.llm.checks import Refusal

if TYPE_CHECKING:  # the record types stay importable without the candidate machinery
    from daemon.planners.llm.candidates import Group

OK = "ok"
REPAIRED = "repaired"
FAILED = "failed"
SPLIT = "split"  # cut off even in less room: its notes went on in two smaller calls
SHOWN = (OK, REPAIRED)  # the calls whose notes the model read and answered for


@dataclass(frozen=True)
class CallRecord:
    """One logical model call (a repair turn, when one was needed, is part of it)."""

    model: str
    template_name: str
    template_hash: str
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # USD; None when the model has no price
    latency_s: float
    http_calls: int
    finish_reason: str
    status: str  # ok | repaired | failed | split
    error: str | None
    redactions: int  # secrets replaced in the notes of this call
    notes: tuple[str, ...]  # paths sent


@dataclass
class Usage:
    """Responses of one logical call, summed."""

    responses: list[ModelResponse] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.responses)

    @property
    def cost(self) -> float | None:
        known = [r.cost for r in self.responses if r.cost is not None]
        return sum(known) if known else None

    def record(self, model: str, template: tuple[str, str], status: str, error: str | None, redactions: int, notes: tuple[str, ...], http_extra: int = 0) -> CallRecord:
        last = self.responses[-1] if self.responses else None
        return CallRecord(
            model=last.model if last and last.model else model,
            template_name=template[0],
            template_hash=template[1],
            prompt_tokens=sum(r.prompt_tokens for r in self.responses),
            completion_tokens=sum(r.completion_tokens for r in self.responses),
            cost=self.cost,
            latency_s=sum(r.latency_s for r in self.responses),
            http_calls=sum(r.http_calls for r in self.responses) + http_extra,
            finish_reason=last.finish_reason if last else "error",
            status=status,
            error=error,
            redactions=redactions,
            notes=notes,
        )


@dataclass
class LLMPlan:
    """Everything one run of the LLM planner produced, and what the model was shown.

    ``stopped`` is None when every planned call was made, else a sentence saying where a
    budget stopped the run; ``failed`` lists the calls made whose reply was not usable.
    ``skipped``, ``truncated`` and ``too_large`` say which groups or notes did not fit a
    single call; nothing is left out silently. ``due`` are the notes this run had to show;
    ``shown`` those it showed (in a call whose reply was used), ``left`` the rest, which stay
    due; ``open_groups`` the candidate groups whose notes were all shown, but never in one call.
    """

    drafts: list[Draft] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    flagged: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    stopped: str | None = None
    whole_store: bool = False  # the store fitted one call and was sent whole
    groups_total: int = 0
    calls_planned: int = 0
    skipped: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    due: tuple[str, ...] = ()
    budget: Budget | None = None
    too_large: list[str] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)  # every candidate group of the run
    groups_shown: list[Group] = field(default_factory=list)  # held whole by a call whose reply was used
    unsent: list[int] = field(default_factory=list)  # estimated prompt tokens of the calls a budget stopped
    unfit: frozenset[frozenset[str]] = frozenset()  # groups too big for one call: never held, never open

    @property
    def tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.calls)

    @property
    def cost(self) -> float | None:
        known = [c.cost for c in self.calls if c.cost is not None]
        return sum(known) if known else None

    @property
    def failed(self) -> list[CallRecord]:
        """Calls whose reply could not be used: their notes are still to be planned."""
        return [c for c in self.calls if c.status == FAILED]

    @property
    def shown(self) -> set[str]:
        return {p for c in self.calls if c.status in SHOWN for p in c.notes}

    @property
    def left(self) -> list[str]:
        """Due notes no used reply covered (too large ones apart: no call can hold them)."""
        shown, big = self.shown, set(self.too_large)
        return [p for p in self.due if p not in shown and p not in big]

    @property
    def open_groups(self) -> list[Group]:
        """Groups whose notes the model has all read now, but never together."""
        shown = self.shown
        held = {frozenset(g.paths) for g in self.groups_shown} | self.unfit
        return [g for g in self.groups if len(g.paths) > 1 and frozenset(g.paths) not in held and shown.issuperset(g.paths)]

    def coverage(self) -> dict[str, Any]:
        """What the model was shown of what it had to be: the figures a pass reports."""
        held = {frozenset(g.paths) for g in self.groups_shown}
        groups = [g for g in self.groups if len(g.paths) > 1]
        out: dict[str, Any] = {
            "due": len(self.due), "shown": len(self.due) - len(self.left) - len([p for p in self.due if p in set(self.too_large)]),
            "left": len(self.left), "too_large": len(self.too_large),
            "groups": len(groups), "groups_shown": sum(frozenset(g.paths) in held for g in groups),
            "groups_open": len(self.open_groups), "calls_left": len(self.unsent), "passes_left": self.passes_left(),
        }  # fmt: skip
        if self.budget is not None:
            out["budget"] = self.budget.describe()
        return out

    def passes_left(self) -> int:
        """Further passes, at this pass's budget, until the calls a budget stopped are made
        (0 when none were); the groups they leave open may add one more."""
        if not self.unsent or self.budget is None:
            return 0
        per_call = [t + self.budget.reply for t in self.unsent]
        return max(1, math.ceil(sum(per_call) / max(1, self.budget.per_pass)))
