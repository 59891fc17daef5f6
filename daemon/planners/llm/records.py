"""What an LLM planning run leaves behind: drafts, refusals, one record per model call.

Kept apart from the planner so the service (and its history views) can import the record
types without the planning machinery. No note text is held here beyond paths and the
Draft/Refusal texts themselves, so a pass record never stores what the model read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon.core.proposals import Draft
from daemon.llm.base import ModelResponse
from daemon.planners.llm.checks import Refusal

OK = "ok"
REPAIRED = "repaired"
FAILED = "failed"


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
    status: str  # ok | repaired | failed
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
    """Everything one run of the LLM planner produced.

    ``stopped`` is None when every planned call was made, else a sentence saying where a
    budget stopped the run; ``failed`` lists the calls made whose reply was not usable. ``skipped`` and ``truncated`` say which groups or notes did not
    fit a single call; nothing is left out silently.
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
