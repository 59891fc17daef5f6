"""The LLM planner: due notes and the groups around them -> packed, redacted prompts -> checked Drafts.

A store whose sendable notes fit one call is sent whole, in one call, whenever one of its
notes is due (a pinned note never is by itself: no proposal may change it): the model sees what a person would, topical merges with no shared words
included. A store too big for that sends its due notes (changed or never shown as they are,
or falling due) with the candidate groups around them (``candidates``) and the groups an
earlier pass could not show together (``pending``), packed so that every due note is in a
call and related notes share one (``packing``). The call's room comes from the model's own
limits (``daemon.llm.limits``), capped by the settings.

Pure apart from the ModelClient and reading the two template files: the service gives it
the store view, ``now``, the due notes, the pending groups and the exclusion predicate. It
returns Drafts that then go through the same build and validation as every detector's,
plus refusals, a record of every call, and which notes and groups the model was shown
(``LLMPlan.shown``, ``LLMPlan.groups_shown``, ``LLMPlan.open_groups``): the ledger a pass
keeps, so that a store of any size is covered over passes and proves it.

Failure handling, call by call:
- invalid JSON or a reply off the schema: one repair turn (the bad reply and the parse error
  as ``extra_messages``, same request key); still invalid -> the call is ``failed`` and its
  notes stay due;
- ``finish_reason == "length"`` (a reply cut off at its room): one turn asking for the same
  answer in less room (merges as ``merged_body: null``, which dreamd builds losslessly);
  cut again -> the call is ``split`` and its notes are sent again in two smaller calls, down
  to a single group; nothing half-parsed becomes a proposal, and a cut reply is never taken
  for "no proposals";
- a provider refusal or a content filter: ``failed`` at once;
- ``ModelTransientError`` / ``ModelRequestError`` propagate and end the pass. Partial
  results travel on the exception: ``exc.calls`` (every CallRecord so far, the failed one
  last) and ``exc.partial`` (the LLMPlan up to that point), so the service can record the
  calls made and the money spent before the pass is marked failed.
Budgets: before each request the estimated prompt plus the reply's room must fit the pass's
remaining tokens (and, at the cost seen so far per token, its remaining money); actual usage
is added after. A run that stops says where in ``LLMPlan.stopped``; what it did not send
stays due.
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
from daemon.core.notes import Note
from daemon.llm.base import ModelClient, ModelRequest, ModelResponse, ModelSettings
from daemon.llm.limits import Budget, budget
from daemon.planners.llm.candidates import Group, dedupe, select, sendable
from daemon.planners.llm.packing import GROUP_OVERHEAD, NOTE_OVERHEAD, Batch, pack
from daemon.planners.llm.checks import Refusal, Sent, check
from daemon.planners.llm.injection import flag
from daemon.planners.llm.prompts import PromptBatch, Templates, load_templates, prompt_batch
from daemon.planners.llm.records import FAILED, OK, REPAIRED, SPLIT, LLMPlan, Usage
from daemon.planners.llm.redact import redact
from daemon.planners.llm.schema import MAX_PROPOSALS, Reply, ReplyTooLargeError, read_reply, reply_json_schema

FLAGGED_CONFIDENCE = 0.3  # below any sensible auto-accept threshold
REPAIR = (
    "Your reply could not be used: {reason}. Reply again with exactly one JSON object of the required form "
    '({{"v": 1, "proposals": [...]}}), using only note ids and verbatim quotes, and nothing else.'
)
COMPACT = (
    "Your reply was cut off at its limit of {room} tokens, so none of it could be used. Reply again with the "
    "same proposals in less room: set merged_body to null in every merge (dreamd then keeps every line of "
    "the merged notes), keep rationales to one sentence and quotes short."
)
MIN_SPLIT = 2  # notes: a cut call holding fewer is not split further


class LLMPlanner:
    """Plans one store pass with a model; see the module docstring for failure handling."""

    def __init__(self, client: ModelClient, settings: ModelSettings, count_tokens: Callable[[str], int], prompt_dir: str | Path | None = None, limits: Budget | None = None) -> None:
        self.client = client
        self.settings = settings
        self.count_tokens = count_tokens
        self.prompt_dir = prompt_dir if prompt_dir is not None else settings.prompt_dir
        self.budget = limits or budget(settings, getattr(client, "limits", lambda _s: None)(settings))
        self.source = f"model:{settings.model}"
        self.schema = reply_json_schema()
        self._schema_tokens: int | None = None

    def plan(self, view: StoreView, now: dt.datetime, changed: set[str], due: set[str], excluded: Callable[[str], bool], pending: Iterable[Group] = ()) -> LLMPlan:
        """Drafts for the whole store in one call while it fits a call, else for the due notes
        (``changed`` or ``due``) and the groups around them and in ``pending``; zero calls when
        nothing is due or pending. Raises ModelTransientError/ModelRequestError with ``.calls``
        and ``.partial`` set; BudgetExceededError when not even the empty prompt fits a call."""
        now = utc(now)
        pool = sendable(view, excluded)
        paths = {n.path for n in pool}
        # a pinned note is never changed, so it is never due itself: it goes as context
        anchors = {n.path for n in pool if not n.pinned} & (set(changed) | set(due))
        waiting = [g for g in pending if paths.issuperset(g.paths)]
        plan = LLMPlan(due=tuple(sorted(anchors)), budget=self.budget)
        if not anchors and not waiting:
            return plan
        groups = dedupe(select(view, anchors, due & anchors, excluded) + waiting) if anchors else waiting
        plan.groups_total = len(groups)
        templates = load_templates(self.prompt_dir)
        fixed = self.fixed_tokens(templates, now)
        room = self.budget.prompt - fixed
        if room <= 0:
            raise _attach(BudgetExceededError(self._too_small(fixed)), plan)
        texts: dict[str, str] = {}
        secrets: dict[str, int] = {}

        def read(names: Iterable[str]) -> None:
            for path in names:
                if path not in texts:
                    texts[path], secrets[path] = redact(view.notes[path].data.decode("utf-8", errors="replace"))

        line = GROUP_OVERHEAD + self.count_tokens(", ".join(f"n{i}" for i in range(1, len(pool) + 1)))  # the whole store's group line
        whole = _fits(pool, self.count_tokens, room - line - GROUP_OVERHEAD * len(groups))
        context = paths if whole else set()  # the whole store, in one call
        room -= line if whole else 0
        read(sorted(set(anchors) | {p for g in groups for p in g.paths} | context))
        packing = pack(anchors, groups, texts, self.count_tokens, room, context)
        plan.whole_store = whole and packing.whole and len(pool) > 1
        plan.calls_planned = len(packing.batches)
        plan.skipped = list(packing.skipped)
        plan.too_large = list(packing.too_large)
        plan.unfit = packing.unfit
        plan.truncated = sorted({p for b in packing.batches for g in b.groups for p in g.truncated})
        plan.groups = list(groups)
        run = _Run(self, plan, templates, view, now, texts, secrets)
        try:
            for number, batch in enumerate(packing.batches):
                if not run.call(batch):
                    plan.unsent = [b.tokens + fixed for b in packing.batches[number:]]
                    break
        except (ModelTransientError, ModelRequestError) as exc:
            raise _attach(exc, plan) from None
        return plan

    def fixed_tokens(self, templates: Templates | None = None, now: dt.datetime | None = None) -> int:
        """Tokens of a call's prompt with no notes: instructions, the schema, the reply's room said."""
        templates = templates or load_templates(self.prompt_dir)
        today = (now or dt.datetime(2026, 1, 1)).date().isoformat()
        empty = templates.render(PromptBatch((), (), today, {}, self.budget.reply))
        return self._estimate(empty.system, empty.user)

    def _too_small(self, fixed: int) -> str:
        b, s = self.budget, self.settings
        if b.prompt == b.per_pass - b.reply:
            return f"tokens_per_pass {s.tokens_per_pass} leaves no room for one call: its reply takes {b.reply} tokens and an empty prompt {fixed}"
        if s.tokens_per_call is not None and b.prompt == s.tokens_per_call:
            return f"tokens_per_call {s.tokens_per_call} is below the prompt's own size ({fixed} tokens)"
        return f"a call's prompt room ({b.prompt} tokens of a {b.window}-token window; {b.source}) is below the prompt's own size ({fixed} tokens)"

    def _estimate(self, system: str, user: str) -> int:
        """Prompt tokens of a request: both parts plus the schema sent as response_format."""
        if self._schema_tokens is None:
            self._schema_tokens = self.count_tokens(json.dumps(self.schema))
        return self.count_tokens(system) + self.count_tokens(user) + self._schema_tokens


def _fits(pool: list[Note], count_tokens: Callable[[str], int], room: int) -> bool:
    """Whether every sendable note fits one call (counting stops once past ``room``)."""
    used = 0
    for note in pool:
        used += count_tokens(note.data.decode("utf-8", errors="replace")) + count_tokens(note.path) + NOTE_OVERHEAD
        if used > room:
            return False
    return len(pool) > 0


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
        self.writes: set[str] = set()  # notes earlier drafts change, retire or create
        self.retired: set[str] = set()  # of those, the notes they retire
        self.relies: set[str] = set()  # notes earlier drafts point retired notes at
        self.flags: dict[str, str] = {}

    def call(self, batch: Batch, compact: bool = False) -> bool:
        """Make one logical call (and, when its reply is cut off, smaller ones in its place);
        False when a budget stops the run before it."""
        pb = prompt_batch(batch, self.texts, self.view, self.now, self.p.budget.reply, whole=self.plan.whole_store)
        rendered = self.templates.render(pb)
        estimate = self.p._estimate(rendered.system, rendered.user)
        if not self._affordable(estimate):
            return False
        for path, reason in flag((p, self.texts[p]) for p in batch.paths):
            if path not in self.flags:
                self.flags[path] = reason
                self.plan.flagged.append((path, reason))
        request = ModelRequest(rendered.system, rendered.user, self.p.schema, key="|".join(sorted(batch.paths)), max_output_tokens=self.p.budget.reply)
        if compact:
            request = replace(request, extra_messages=({"role": "user", "content": COMPACT.format(room=self.p.budget.reply)},))
        usage = Usage()
        template = (rendered.template_name, rendered.template_hash)

        def record(status: str, error: str | None, http_extra: int = 0) -> None:
            redactions = sum(self.secrets[p] for p in batch.paths)
            self.plan.calls.append(usage.record(self.p.settings.model, template, status, error, redactions, batch.paths, http_extra))

        reply, error, kind = self._send(request, usage, record)
        status = OK
        if reply is None and kind is not None:
            assert error is not None
            if not self._affordable(estimate + self.p.count_tokens(usage.responses[-1].text), usage, stop=False):
                error += "; no second turn attempted: the pass budget is spent"
            else:
                said = COMPACT.format(room=self.p.budget.reply) if kind == CUT else REPAIR.format(reason=error)
                turn = (*request.extra_messages, {"role": "assistant", "content": usage.responses[-1].text}, {"role": "user", "content": said})
                reply, error, again = self._send(replace(request, extra_messages=turn), usage, record)
                status = REPAIRED
                if reply is None and again == CUT and len(batch.paths) >= MIN_SPLIT:
                    record(SPLIT, f"{error}; its notes are sent again in two smaller calls")
                    return all(self.call(half, compact=True) for half in _halves(batch))
        record(status if reply is not None else FAILED, error)
        if reply is not None:
            self.plan.groups_shown += [g for g in batch.groups if len(g.paths) > 1]
            self._accept(reply, Sent(pb.ids, {p: self.texts[p] for p in batch.paths}, self.view, tuple(frozenset(g.paths) for g in batch.groups)))
        return True

    def _send(self, request: ModelRequest, usage: Usage, record: Callable[..., None]) -> tuple[Reply | None, str | None, str | None]:
        """One request: (reply, None, None) or (None, why, what may help: REPAIR_TURN, CUT or None)."""
        try:
            response = self.p.client.complete(request, self.p.settings)
        except (ModelTransientError, ModelRequestError) as exc:
            record(FAILED, exc.one_line(), int(getattr(exc, "http_calls", 1) or 0))
            raise
        except PlannerError as exc:  # e.g. a client that cannot read the provider's answer
            return None, exc.one_line(), None
        usage.responses.append(response)
        return _read(response)

    def _affordable(self, estimate: int, pending: Usage | None = None, stop: bool = True) -> bool:
        """Whether the next request fits the pass budgets, counting ``pending`` (responses
        of the call in progress); else set ``stopped`` when asked to."""
        s, made, planned = self.p.settings, len(self.plan.calls), self.plan.calls_planned
        need = estimate + self.p.budget.reply
        used = self.plan.tokens + (pending.tokens if pending else 0)
        if used + need > self.p.budget.per_pass:
            if stop:
                self.plan.stopped = (
                    f"token budget reached after {made} of {planned} calls "
                    f"({used:,} of {self.p.budget.per_pass:,} tokens used; the next call needs up to {need:,})"
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
                writes, relies = _footprint(result)
                gone = set(result.retire)
                overlap = sorted((writes & self.writes) | (relies & self.retired) | (gone & self.relies))
                if overlap:
                    reason = f"overlaps an earlier model proposal of this pass on {overlap[0]}"
                    result = Refusal(result.kind, result.notes, result.rationale, reason, self.p.source, proposal.model_dump())
                else:
                    self.writes |= writes
                    self.retired |= gone
                    self.relies |= relies
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


def _footprint(draft: Draft) -> tuple[set[str], set[str]]:
    """(notes the draft writes, notes it points retired notes at). Two drafts of one pass
    conflict when they write the same note, or one retires the note the other points at; a
    supersede whose newer note a merge rewrites (and keeps) does not: the newer note stays."""
    writes = set(draft.retire) | {path for path, _ in draft.create}
    if draft.survivor and draft.survivor_data is not None:
        writes.add(draft.survivor)
    relies = {draft.survivor} - writes if draft.survivor else set()
    return writes, relies


CUT = "cut"  # a reply cut off at its room: one in less room may do
REPAIR_TURN = "repair"  # a reply off the schema: a repair turn may do


def _read(response: ModelResponse) -> tuple[Reply | None, str | None, str | None]:
    """(reply, None, None), or (None, why, what may help: REPAIR_TURN, CUT or None)."""
    if response.refusal:
        return None, f"the model refused: {' '.join(response.refusal.split())[:160]}", None
    if response.finish_reason == "length":
        return None, "the reply was cut off at its room (finish_reason length); none of it is used", CUT
    if response.finish_reason == "content_filter":
        return None, "the provider's content filter stopped the reply", None
    try:
        reply, unread = read_reply(response.text)
    except ReplyTooLargeError as exc:
        return None, str(exc), None
    except ModelBadOutputError as exc:
        return None, str(exc), REPAIR_TURN
    if unread:  # read, not failed: the first proposals stand, and the call's record says what was not read
        return reply, f"{unread:,} proposals past the {MAX_PROPOSALS} a reply may hold were not read", None
    return reply, None, None


def _halves(batch: Batch) -> list[Batch]:
    """The call's notes in two calls, cut where the packing order is cut least: each half
    keeps the groups it holds whole (the packing order keeps related notes together)."""
    middle = len(batch.paths) // 2
    out = []
    for paths in (batch.paths[:middle], batch.paths[middle:]):
        inside = set(paths)
        groups = tuple(g for g in batch.groups if inside.issuperset(g.paths))
        out.append(Batch(groups, paths, batch.tokens // 2))
    return out
