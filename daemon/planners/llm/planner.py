"""The LLM planner: the whole store, or candidate groups -> redacted, packed prompts -> checked Drafts.

A store that changed (or has a note falling due) and fits one call is sent whole, in one
call: the model sees what a person would, topical merges with no shared words included.
A store too big for that is cut into candidate groups around what changed (``candidates``).

Pure apart from the ModelClient and reading the two template files: the service gives it
the store view, ``now``, which notes changed since the last LLM pass, which fell due, and
the exclusion predicate. It returns Drafts that then go through the same build and
validation as every detector's, plus refusals and a record of every call.

Failure handling, call by call:
- invalid JSON or a reply off the schema: one repair turn (the bad reply and the parse error
  as ``extra_messages``, same request key); still invalid -> the call is ``failed`` and its
  groups yield nothing;
- ``finish_reason == "length"``, a provider refusal or a content filter: ``failed`` at once -
  nothing half-parsed becomes a proposal, and repeating the request would not help;
- a failed call leaves the run incomplete (``LLMPlan.failed``): its notes were not planned,
  so the service sends them again at the next pass;
- ``ModelTransientError`` / ``ModelRequestError`` propagate and end the pass. Partial
  results travel on the exception: ``exc.calls`` (every CallRecord so far, the failed one
  last) and ``exc.partial`` (the LLMPlan up to that point), so the service can record the
  calls made and the money spent before the pass is marked failed.
Budgets: before each request the estimated prompt plus ``max_output_tokens`` must fit the
pass's remaining tokens (and, at the cost seen so far per token, its remaining money);
actual usage is added after. A run that stops says where in ``LLMPlan.stopped``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from daemon.core.errors import BudgetExceededError, ModelBadOutputError, ModelRequestError, ModelTransientError, PlannerError
from daemon.core.proposals import Draft
from daemon.core.view import StoreView, utc
from daemon.llm.base import ModelClient, ModelRequest, ModelResponse, ModelSettings
from daemon.planners.llm.candidates import select, sendable
from daemon.planners.llm.packing import Batch, pack
from daemon.planners.llm.whole import WHOLE, pack_whole, whole_store
from daemon.planners.llm.checks import Refusal, Sent, check
from daemon.planners.llm.injection import flag
from daemon.planners.llm.prompts import PromptBatch, Templates, load_templates, prompt_batch
from daemon.planners.llm.records import FAILED, OK, REPAIRED, LLMPlan, Usage
from daemon.planners.llm.redact import redact
from daemon.planners.llm.schema import Reply, parse_reply, reply_json_schema

FLAGGED_CONFIDENCE = 0.3  # below any sensible auto-accept threshold
REPAIR = (
    "Your reply could not be used: {reason}. Reply again with exactly one JSON object of the required form "
    '({{"v": 1, "proposals": [...]}}), using only note ids and verbatim quotes, and nothing else.'
)


class LLMPlanner:
    """Plans one store pass with a model; see the module docstring for failure handling."""

    def __init__(self, client: ModelClient, settings: ModelSettings, count_tokens: Callable[[str], int], prompt_dir: str | Path | None = None) -> None:
        self.client = client
        self.settings = settings
        self.count_tokens = count_tokens
        self.prompt_dir = prompt_dir if prompt_dir is not None else settings.prompt_dir
        self.source = f"model:{settings.model}"
        self.schema = reply_json_schema()
        self._schema_tokens: int | None = None

    def plan(self, view: StoreView, now: dt.datetime, changed: set[str], due: set[str], excluded: Callable[[str], bool]) -> LLMPlan:
        """Drafts for the whole store in one call while it fits a call, else for the groups
        around ``changed`` and ``due`` notes; zero calls when both are empty. Raises ModelTransientError/ModelRequestError with ``.calls`` and
        ``.partial`` set; BudgetExceededError when not even the empty prompt fits a call."""
        now = utc(now)
        pool = sendable(view, excluded)
        anchors = {n.path for n in pool} & (set(changed) | set(due))
        plan = LLMPlan()
        if not anchors:
            return plan
        groups = select(view, changed, due, excluded)
        plan.groups_total = len(groups)
        templates = load_templates(self.prompt_dir)
        empty = templates.render(PromptBatch((), (), now.date().isoformat(), {}))
        fixed = self._estimate(empty.system, empty.user)
        room = self.settings.tokens_per_call - fixed
        if room <= 0:
            error = BudgetExceededError(f"tokens_per_call {self.settings.tokens_per_call} is below the prompt's own size ({fixed} tokens)")
            raise _attach(error, plan)
        texts: dict[str, str] = {}
        secrets: dict[str, int] = {}

        def read(paths: Iterable[str]) -> None:
            for path in paths:
                if path not in texts:
                    texts[path], secrets[path] = redact(view.notes[path].data.decode("utf-8", errors="replace"))

        packing = None
        whole = whole_store(pool, anchors, groups, self.count_tokens, room)
        if whole is not None:
            read(whole.paths)
            packing = pack_whole(whole, groups, texts, self.count_tokens, room)
        if packing is None:
            read(p for g in groups for p in g.paths)
            packing = pack(groups, texts, self.count_tokens, room)
        else:
            plan.whole_store = True
        plan.calls_planned = len(packing.batches)
        plan.skipped = list(packing.skipped)
        plan.truncated = sorted({p for b in packing.batches for g in b.groups for p in g.truncated})
        run = _Run(self, plan, templates, view, now, texts, secrets)
        try:
            for batch in packing.batches:
                if not run.call(batch):
                    break
        except (ModelTransientError, ModelRequestError) as exc:
            raise _attach(exc, plan) from None
        return plan

    def _estimate(self, system: str, user: str) -> int:
        """Prompt tokens of a request: both parts plus the schema sent as response_format."""
        if self._schema_tokens is None:
            self._schema_tokens = self.count_tokens(json.dumps(self.schema))
        return self.count_tokens(system) + self.count_tokens(user) + self._schema_tokens


def _attach(exc: PlannerError, plan: LLMPlan) -> PlannerError:
    """Partial results ride on the exception: ``.calls`` and ``.partial``."""
    exc.calls = list(plan.calls)  # type: ignore[attr-defined]
    exc.partial = plan  # type: ignore[attr-defined]
    return exc


class _Run:
    """State of one ``plan()``: budgets spent, notes claimed by earlier drafts, flags."""

    def __init__(self, planner: LLMPlanner, plan: LLMPlan, templates: Templates, view: StoreView, now: dt.datetime, texts: dict[str, str], secrets: dict[str, int]) -> None:
        self.p, self.plan, self.templates, self.view, self.now = planner, plan, templates, view, now
        self.texts, self.secrets = texts, secrets
        self.claimed: set[str] = set()
        self.flags: dict[str, str] = {}

    def call(self, batch: Batch) -> bool:
        """Make one logical call; False when a budget stops the run before it."""
        pb = prompt_batch(batch, self.texts, self.view, self.now)
        rendered = self.templates.render(pb)
        estimate = self.p._estimate(rendered.system, rendered.user)
        if not self._affordable(estimate):
            return False
        for path, reason in flag((p, self.texts[p]) for p in batch.paths):
            if path not in self.flags:
                self.flags[path] = reason
                self.plan.flagged.append((path, reason))
        request = ModelRequest(rendered.system, rendered.user, self.p.schema, key="|".join(sorted(batch.paths)))
        usage = Usage()
        template = (rendered.template_name, rendered.template_hash)

        def record(status: str, error: str | None, http_extra: int = 0) -> None:
            redactions = sum(self.secrets[p] for p in batch.paths)
            self.plan.calls.append(usage.record(self.p.settings.model, template, status, error, redactions, batch.paths, http_extra))

        reply, error, repairable = self._send(request, usage, record)
        status = OK
        if reply is None and repairable:
            assert error is not None
            if not self._affordable(estimate + self.p.count_tokens(usage.responses[-1].text), usage, stop=False):
                error += "; no repair attempted: the pass budget is spent"
            else:
                turn = ({"role": "assistant", "content": usage.responses[-1].text}, {"role": "user", "content": REPAIR.format(reason=error)})
                reply, error, _ = self._send(replace(request, extra_messages=turn), usage, record)
                status = REPAIRED
        record(status if reply is not None else FAILED, error)
        if reply is not None:
            related = tuple(frozenset(g.paths) for g in batch.groups if WHOLE not in g.reasons)
            self._accept(reply, Sent(pb.ids, {p: self.texts[p] for p in batch.paths}, self.view, related))
        return True

    def _send(self, request: ModelRequest, usage: Usage, record: Callable[..., None]) -> tuple[Reply | None, str | None, bool]:
        """One request: (reply, None, _) or (None, why, whether a repair may help)."""
        try:
            response = self.p.client.complete(request, self.p.settings)
        except (ModelTransientError, ModelRequestError) as exc:
            record(FAILED, exc.one_line(), int(getattr(exc, "http_calls", 1) or 0))
            raise
        except PlannerError as exc:  # e.g. a client that cannot read the provider's answer
            return None, exc.one_line(), False
        usage.responses.append(response)
        return _read(response)

    def _affordable(self, estimate: int, pending: Usage | None = None, stop: bool = True) -> bool:
        """Whether the next request fits the pass budgets, counting ``pending`` (responses
        of the call in progress); else set ``stopped`` when asked to."""
        s, made, planned = self.p.settings, len(self.plan.calls), self.plan.calls_planned
        need = estimate + s.max_output_tokens
        used = self.plan.tokens + (pending.tokens if pending else 0)
        if used + need > s.tokens_per_pass:
            if stop:
                self.plan.stopped = (
                    f"token budget reached after {made} of {planned} calls "
                    f"({used:,} of {s.tokens_per_pass:,} tokens used; the next call needs up to {need:,})"
                )
            return False
        spent = (self.plan.cost or 0.0) + ((pending.cost or 0.0) if pending else 0.0)
        per_token = spent / used if used else 0.0
        if s.cost_per_pass is not None and (spent >= s.cost_per_pass or spent + need * per_token > s.cost_per_pass):
            if stop:
                self.plan.stopped = f"cost budget reached after {made} of {planned} calls (${spent:.4f} of ${s.cost_per_pass:.4f} spent)"
            return False
        return True

    def _accept(self, reply: Reply, sent: Sent) -> None:
        for proposal in reply.proposals:
            result = check(proposal, sent, self.p.source)
            if isinstance(result, Draft):
                overlap = sorted(set(result.notes) & self.claimed)
                if overlap:
                    reason = f"overlaps an earlier model proposal of this pass on {overlap[0]}"
                    result = Refusal(result.kind, result.notes, result.rationale, reason, self.p.source, proposal.model_dump())
                else:
                    self.claimed.update(result.notes)
                    result = self._caution(result)
            (self.plan.drafts if isinstance(result, Draft) else self.plan.refusals).append(result)  # type: ignore[arg-type]

    def _caution(self, draft: Draft) -> Draft:
        """A draft touching or citing a flagged note keeps a low confidence and says why."""
        involved = [p for p in (*draft.notes, *(e.path for e in draft.evidence)) if p in self.flags]
        if not involved:
            return draft
        path = involved[0]
        note = f" Caution: {path} was flagged because its text {self.flags[path]}; review this by hand."
        return replace(draft, confidence=min(draft.confidence, FLAGGED_CONFIDENCE), rationale=draft.rationale + note)


def _read(response: ModelResponse) -> tuple[Reply | None, str | None, bool]:
    if response.refusal:
        return None, f"the model refused: {' '.join(response.refusal.split())[:160]}", False
    if response.finish_reason == "length":
        return None, "the reply was cut off at max_output_tokens (finish_reason length); none of it is used", False
    if response.finish_reason == "content_filter":
        return None, "the provider's content filter stopped the reply", False
    try:
        return parse_reply(response.text), None, False
    except ModelBadOutputError as exc:
        return None, str(exc), True
