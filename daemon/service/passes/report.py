"""What a pass reports, and the fingerprint of what its planning depends on.

Apart from ``service/passes/run.py`` so that the no-op lane (``service/passes/noop.py``) can report a
skipped pass and tell whether planning would change without importing the pass itself.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, NamedTuple

from daemon.config import StoreConfig
from daemon.planners.versions import detectors_fingerprint

if TYPE_CHECKING:
    from daemon.policies.model import Decision
    from daemon.service.context import App
    from daemon.service.passes.proposing import Planned
    from daemon.stores.scan import Skipped

SUMMARY_STATES = ("pending", "accepted", "applied", "rejected", "stale", "refused", "suppressed", "duplicate")


class Outcome(NamedTuple):
    """What became of one planned proposal in this pass."""

    planned: Planned
    state: str  # pending | refused | suppressed | duplicate; after the store's policy: accepted, rejected, applied, stale
    id: int | None = None
    note: str | None = None


class PolicyOutcome:
    """What the store's policy decided in one pass, for the pass record (``PassReport.policy``)."""

    def __init__(self, actor: str) -> None:
        self.actor = actor
        self.decisions: dict[int, Decision] = {}
        self.applied: list[int] = []
        self.stale: list[int] = []

    def stats(self) -> dict[str, Any]:
        count = lambda d: sum(1 for x in self.decisions.values() if x.decision == d)  # noqa: E731
        return {"actor": self.actor, "accepted": count("accept"), "rejected": count("reject"), "held": count("hold"),
                "applied": len(self.applied), "stale": len(self.stale)}  # fmt: skip


class PassReport:
    """One pass as it ended. Plain classes here, as every class a pass that finds nothing to
    do builds (see service/passes/noop.py)."""

    def __init__(self, store: str, status: str, root_hash: str, pass_id: int | None = None, *, skipped_files: list[Skipped] | None = None,
                 notes: int = 0, at: dt.datetime | None = None, busy: str | None = None) -> None:  # fmt: skip
        self.store = store
        self.status = status  # completed | skipped | busy | dry-run
        self.root_hash = root_hash
        self.pass_id = pass_id
        self.outcomes: list[Outcome] = []
        self.skipped_files: list[Skipped] = [] if skipped_files is None else skipped_files
        self.external_changes: dict[str, list[str]] = {}
        self.stale: list[int] = []
        self.notes = notes
        self.at = at  # when the pass ran (its proposals' created_at)
        self.llm: dict[str, Any] | None = None  # model calls, tokens, cost, where a budget stopped it
        self.policy: dict[str, Any] | None = None  # what the store's policy accepted, rejected, held, applied
        self.busy = busy  # why the pass did not run: another process holds the store
        self.capped: str | None = None  # the stage at which the pass ran out of time (then status is partial)
        self.findings: list[dict[str, Any]] = []  # what no proposal fixes by itself (service/passes/findings.py)
        # the store's pending and waiting (pending or accepted, not applied) proposals once the
        # pass ended, when it counted them (the no-op lane)
        self.waiting_after: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"PassReport(store={self.store!r}, status={self.status!r}, pass_id={self.pass_id!r}, notes={self.notes})"

    def count(self, state: str) -> int:
        return sum(1 for o in self.outcomes if o.state == state)

    @property
    def new_waiting(self) -> int:
        """How many proposals this pass made that wait for a person: pending, or accepted by
        the policy and not applied."""
        return self.count("pending") + self.count("accepted")

    def summary(self, label: str) -> str:
        """The one line a pass ends with: how many notes, and what became of its proposals."""
        if self.status == "skipped":
            return f"{self.store}: unchanged since the last pass; nothing to do"
        if self.status == "busy":
            return f"{self.store}: skipped, {self.busy}"
        counts = ", ".join(f"{self.count(s)} {s}" for s in SUMMARY_STATES if self.count(s))
        partial = f" (partial: out of time while {self.capped}; the next pass goes on)" if self.capped else ""
        model = f" (LLM part incomplete: {self.model_failure})" if self.model_failure else ""
        left = coverage_left((self.llm or {}).get("coverage")) if not self.model_failure else None
        model += f" (model: {left})" if left else ""
        return f"{self.store}: {label}: {self.notes} notes, {counts or 'no proposals'}{partial}{model}"

    @property
    def model_failure(self) -> str | None:
        """Why the LLM part is incomplete when a model call failed (a budget stop is not a failure)."""
        llm = self.llm or {}
        return llm.get("incomplete") if llm.get("failed_calls") else None

    @property
    def stats(self) -> dict[str, Any]:
        states = ("pending", "refused", "suppressed", "duplicate")
        stats = {"v": 1, "notes": self.notes, "skipped_files": len(self.skipped_files), **{s: self.count(s) for s in states}, "stale": len(self.stale)}
        stats |= {"findings": len(self.findings)} if self.findings else {}
        extra = {k: v for k, v in (("llm", self.llm), ("policy", self.policy), ("capped", self.capped)) if v is not None}
        return {**stats, **extra}


def coverage_left(coverage: dict[str, Any] | None) -> str | None:
    """What the model is still to be shown, in words; None when nothing is (or no model ran)."""
    if not coverage:
        return None
    left, opened, passes = coverage.get("left", 0), coverage.get("groups_open", 0), coverage.get("passes_left", 0)
    if not left and not opened:
        return None
    parts = [f"{coverage.get('shown', 0)} of {coverage.get('due', 0)} due notes shown"]
    if opened:
        parts.append(f"{opened} group{'s' if opened != 1 else ''} of related notes not yet shown together")
    more = passes + (1 if opened and not left else 0)
    parts.append(f"the rest at the next pass{'es' if more > 1 else ''}" + (f" (about {more} more)" if more > 1 else ""))
    return "; ".join(parts)


def fingerprint_of(app: App, store: StoreConfig) -> str:
    """What the planning of a pass depends on besides the notes: detectors and their
    versions, the layout, the model, the policy (a change in any is worth a pass)."""
    settings = store.settings
    layout = f"{settings.retire_mode}|{settings.archive_root}|{settings.index}|{settings.pinned}|{settings.ignored_memory_patterns}"
    model = f";model={store.llm.model}|{store.llm.prompt_dir}|{store.llm_exclude}" if store.llm else ""
    model += f";policy={store.policy}|{store.apply}" if store.policy else ""
    if store.workspace is not None:  # a new commit there is worth a pass even over unchanged notes
        from daemon.service.passes.citations import workspace_mark

        model += workspace_mark(store)
    return f"{detectors_fingerprint(app.config.planner)};{layout}{model}"


def model_unfinished(store: StoreConfig, last_stats: dict[str, Any] | None) -> bool:
    """Whether the last pass left model work undone (due notes not shown, a budget stopped
    it, related notes never shown together): then an unchanged store is passed over again."""
    return store.llm is not None and llm_unfinished((last_stats or {}).get("llm"))


def llm_unfinished(llm: dict[str, Any] | None) -> bool:
    """Whether a pass's model part (its ``llm`` stats) left due notes or open groups."""
    if not llm:
        return False
    return not llm.get("complete", True) or bool((llm.get("coverage") or {}).get("groups_open"))
