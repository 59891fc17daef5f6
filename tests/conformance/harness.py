"""Drive the real service over a store and judge every apply and revert with an oracle.

``Session`` runs passes, accepts, applies and reverts through ``daemon.service`` as the CLI
does, and after each write reads the folder again as the agent would (``oracles``). What
the agent reads must stay right (DESIGN.md invariant 8) and nothing outside the store's
two roots may change (invariant 5); a revert must give back the exact bytes (invariant 4).
Each check returns the problems it found as sentences, so a failing test says all of them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from daemon.config import Config, StoreConfig, parse_config
from daemon.service.apply.applying import apply, revert
from daemon.service.context import App
from daemon.service.passes.run import run_pass
from daemon.service.proposals import ProposalView, decide, list_proposals

from .oracles import Cline, IndexEntry, Loaded, Oracle, Ref, frontmatter, outside_roots, pinned, snapshot, store_bytes


@dataclass(frozen=True)
class Reading:
    """A folder as the agent reads it at one moment."""

    visible: frozenset[str]
    live: frozenset[str]
    retired_visible: frozenset[str]
    archived_visible: frozenset[str]
    entries: tuple[IndexEntry, ...]
    loaded: Loaded
    refs: tuple[Ref, ...]
    index_text: str | None
    replaced: frozenset[tuple[str, str]] = frozenset()  # (retired note, the note its superseded_by names)

    @property
    def dangling(self) -> frozenset[tuple[str, str, str]]:
        """References from visible live notes that land on no visible live note."""
        return frozenset((r.source, r.syntax, r.written) for r in self.refs if not r.resolves)

    @property
    def links_to_itself(self) -> frozenset[tuple[str, str, str]]:
        """References landing on their own note, but a Cline task file's own id (its heading names it)."""
        own_id = lambda r: r.syntax == "task-id" and r.source.rsplit("/", 1)[-1].startswith(f"{r.written}-")  # noqa: E731
        return frozenset((r.source, r.syntax, r.written) for r in self.refs if r.target == r.source and not own_id(r))

    @property
    def unresolved_entries(self) -> frozenset[str]:
        return frozenset(e.key for e in self.entries if not e.resolves)

    def resolving_from(self, skip: frozenset[tuple[str, str, str]] = frozenset()) -> Counter[str]:
        """Working references by source, but those in ``skip`` (source, syntax, written)."""
        return Counter(r.source for r in self.refs if r.resolves and (r.source, r.syntax, r.written) not in skip)


def read(oracle: Oracle, root: Path) -> Reading:
    index = root / oracle.index_path if oracle.index_path else None
    with pinned(root):
        return _reading(oracle, root, index)


def _reading(oracle: Oracle, root: Path, index: Path | None) -> Reading:
    return Reading(
        visible=frozenset(oracle.visible_notes(root)),
        live=frozenset(oracle.visible_live(root)),
        retired_visible=frozenset(oracle.retired_visible(root)),
        archived_visible=frozenset(oracle.archived_visible(root)),
        entries=tuple(oracle.index_entries(root)),
        loaded=oracle.loaded(root),
        refs=tuple(oracle.references(root)),
        index_text=index.read_text(encoding="utf-8") if index is not None and index.is_file() else None,
        replaced=successors(oracle, root),
    )


def successors(oracle: Oracle, root: Path) -> frozenset[tuple[str, str]]:
    """(retired note, the note that replaced it) for every archived or retired note whose
    frontmatter names one (``superseded_by``); an archived copy is named by its original path."""
    found = set()
    archive = oracle.archive_root(root)
    for rel, data in snapshot(archive).contents().items():
        named = frontmatter(data).get("superseded_by")
        if isinstance(named, str):
            found.add((re.sub(r"\.\d+\.md$", ".md", rel), named))
    for rel in oracle.retired_visible(root):
        named = frontmatter(_read_bytes(root, rel)).get("superseded_by")
        if isinstance(named, str):
            found.add((rel, named))
    return frozenset(found)


def _read_bytes(root: Path, rel: str) -> bytes:
    try:
        return (root / rel).read_bytes()
    except OSError:
        return b""


@dataclass(frozen=True)
class Figures:
    """The oracle's counts after one write: the first three should be 0."""

    visible_retired: int = 0  # retired notes the agent lists that it did not list before
    dangling_created: int = 0  # references that landed on a live note and no longer do, unannounced
    past_limit: int = 0  # index entries beyond what the agent loads
    dangling_declared: int = 0  # such references the proposal said it leaves (held: no policy accepts it)

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.visible_retired + other.visible_retired, self.dangling_created + other.dangling_created,
            self.past_limit + other.past_limit, self.dangling_declared + other.dangling_declared,
        )  # fmt: skip


def declared(reads: dict | None) -> frozenset[tuple[str, str, str]]:
    """The references a proposal says it leaves dangling (its ``reads``), as the oracle names them."""
    return frozenset((d["source"], d["syntax"], d["written"]) for d in (reads or {}).get("dangling", ()))


def judge(oracle: Oracle, before: Reading, after: Reading, *, kind: str, allowed_unresolved: frozenset[str], said: frozenset[tuple[str, str, str]] = frozenset()) -> tuple[list[str], Figures]:
    """What went wrong for the agent between two readings of the same store. References the
    proposal said it leaves dangling (``said``: a person accepted a held proposal) are counted
    apart, not wrong; any other one is."""
    problems: list[str] = []
    new_retired = after.retired_visible - before.retired_visible
    if new_retired:
        problems.append(f"{oracle.agent} lists retired notes it did not list before: {sorted(new_retired)}")
    if after.archived_visible:
        problems.append(f"{oracle.agent} lists files of the archive root: {sorted(after.archived_visible)}")
    if kind == "relocate" and not after.retired_visible < before.retired_visible:
        problems.append(f"a relocate left every retired note in sight: {sorted(after.retired_visible)}")
    unresolved = after.unresolved_entries - allowed_unresolved
    if unresolved:
        problems.append(f"index entries that do not resolve to a visible live note: {sorted(unresolved)}")
    if isinstance(oracle, Cline):
        wrong = {e.key for e in after.entries if not Cline.section_matches(e)} - {e.key for e in before.entries if not Cline.section_matches(e)}
        if wrong:
            problems.append(f"index entries in a section other than their task's **Status:**: {sorted(wrong)}")
        if after.index_text is not None and "README" in after.index_text and "README" not in (before.index_text or ""):
            problems.append("tasks/_index.md names tasks/README.md")
    created = after.dangling - before.dangling - said
    if created:
        problems.append(f"references that no longer land on a visible live note, unannounced: {sorted(created)}")
    announced = (after.dangling - before.dangling) & said
    # a note's reference to a note retired into it can only become its words: not a loss
    into_itself = {(new, old) for old, new in after.replaced if old not in after.live}
    still = {(r.source, r.syntax, r.written) for r in after.refs}
    words = frozenset(k for r in before.refs if (r.source, r.target) in into_itself and (k := (r.source, r.syntax, r.written)) not in still)
    working = after.resolving_from()
    fewer = {s: (n, working[s]) for s, n in before.resolving_from(words).items() if s in after.live and working[s] < n - sum(1 for d in announced if d[0] == s)}
    if fewer:
        problems.append(f"notes with fewer working references than before (before, after): {fewer}")
    to_itself = after.links_to_itself - before.links_to_itself
    if to_itself:
        problems.append(f"references that now link a note to itself: {sorted(to_itself)}")
    if before.loaded.within_limit and not after.loaded.within_limit:
        problems.append(f"{oracle.index_path} is no longer within what {oracle.agent} loads; unseen: {sorted(after.loaded.unseen)}")
    lost = {k for k in before.loaded.seen - after.loaded.seen if k in after.live}
    if lost:
        problems.append(f"entries of live notes the agent saw before and no longer sees: {sorted(lost)}")
    figures = Figures(len(new_retired | after.archived_visible), len(created), len(after.loaded.unseen - before.loaded.unseen), len(announced))
    return problems, figures


@dataclass
class Step:
    """One proposal taken through accept, apply and (in isolation) revert."""

    id: int
    kind: str
    title: str
    state: str  # what apply made of it
    problems: list[str] = field(default_factory=list)
    figures: Figures = field(default_factory=Figures)
    reverted: bool = False

    def said(self) -> list[str]:
        return [f"#{self.id} {self.kind} ({self.title}): {p}" for p in self.problems]


class Clock(Protocol):
    def advance(self, **delta: float) -> dt.datetime: ...


@dataclass
class Session:
    """One store driven through the service, with its agent's oracle watching."""

    app: App
    store: StoreConfig
    clock: Clock
    oracle: Oracle
    allowed_unresolved: frozenset[str] = frozenset()
    steps: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = self.store.root
        self.baseline = read(self.oracle, self.root)
        self.outside = outside_roots(self.oracle, self.root)

    # reading -------------------------------------------------------------------------

    def reading(self) -> Reading:
        return read(self.oracle, self.root)

    def outside_problems(self) -> list[str]:
        now = outside_roots(self.oracle, self.root)
        if now == self.outside:
            return []
        changed = sorted(set(now.files) ^ set(self.outside.files) | {p for p in now.files if p in self.outside.files and now.files[p] != self.outside.files[p]})
        dirs = sorted(now.dirs ^ self.outside.dirs)
        return [f"files outside the store's roots changed: {changed}, folders: {dirs}"]

    def archived_in_sight(self, bytes_before: dict[str, bytes]) -> list[str]:
        """Files the apply put into the archive whose exact bytes the agent still lists."""
        now = store_bytes(self.oracle, self.root)
        archive = self.oracle.archive_root(self.root)
        prefix = "archive/" if archive.parent != self.root else f"notes/{archive.name}/"
        put = {data for path, data in now.items() if path.startswith(prefix) and bytes_before.get(path) != data}
        listed = {p for p in self.oracle.visible_notes(self.root) if now.get(f"notes/{p}") in put}
        return [f"{self.oracle.agent} still lists the bytes of notes moved to the archive: {sorted(listed)}"] if listed else []

    # driving -------------------------------------------------------------------------

    def run_pass(self) -> None:
        self.clock.advance(minutes=1)
        run_pass(self.app, self.store)

    def pending(self) -> list[ProposalView]:
        return list_proposals(self.app, self.store.name, ["pending"])

    def pending_after_pass(self) -> list[ProposalView]:
        self.run_pass()
        return self.pending()

    def take(self, proposal: ProposalView, *, then_revert: bool) -> Step:
        """Accept and apply one proposal, judge it; with ``then_revert`` revert it and judge that."""
        before, bytes_before = self.reading(), store_bytes(self.oracle, self.root)
        decide(self.app, proposal.id, "accept")
        self.clock.advance(seconds=1)
        (result,) = apply(self.app, [proposal.id])
        step = Step(proposal.id, proposal.kind, proposal.title, result.state)
        if result.state != "applied":
            return step
        after = self.reading()
        step.problems, step.figures = judge(self.oracle, before, after, kind=proposal.kind, allowed_unresolved=self.allowed_unresolved, said=declared(proposal.reads))
        step.problems += self.outside_problems() + self.archived_in_sight(bytes_before)
        if then_revert:
            self.clock.advance(seconds=1)
            revert(self.app, proposal.id)
            step.reverted = True
            back = self.reading()
            if store_bytes(self.oracle, self.root) != bytes_before:
                now = store_bytes(self.oracle, self.root)
                differ = sorted(p for p in set(now) | set(bytes_before) if now.get(p) != bytes_before.get(p))
                step.problems.append(f"revert did not restore the exact bytes of: {differ}")
            if back != before:
                step.problems.append("after the revert the agent reads the store differently than before the apply")
            # a revert gives back the store as it was before the apply: judge it against that
            problems, figures = judge(self.oracle, before, back, kind="revert", allowed_unresolved=self.allowed_unresolved)
            step.problems += [f"after revert: {p}" for p in problems + self.outside_problems()]
            step.figures = step.figures + figures
        self.steps.append(step)
        return step

    def isolate(self, kind: str, rounds: int = 3) -> list[Step]:
        """Every proposal of ``kind`` the store yields now, one at a time: accept, apply,
        judge, revert, judge. After a revert the store is as before, so the pass's other
        proposals still apply; one that went stale anyway comes back from the next pass."""
        done: set[str] = set()
        for _ in range(rounds):
            self.run_pass()
            todo = [p for p in self.pending() if p.kind == kind and p.title not in done]
            if not todo:
                break
            for proposal in todo:
                if self.take(proposal, then_revert=True).state == "applied":
                    done.add(proposal.title)
        return [s for s in self.steps if s.kind == kind and s.reverted]

    def everything(self, rounds: int = 10) -> list[Step]:
        """Accept and apply every proposal, pass after pass, until a pass proposes nothing."""
        first = len(self.steps)
        for _ in range(rounds):
            self.run_pass()
            todo = self.pending()
            if not todo:
                return self.steps[first:]
            for proposal in todo:
                self.take(proposal, then_revert=False)
        raise AssertionError(f"passes kept proposing after {rounds} rounds")


def kinds(steps: list[Step]) -> Counter[str]:
    return Counter(s.kind for s in steps if s.state == "applied")


def problems(steps: list[Step]) -> list[str]:
    return [line for s in steps for line in s.said()]


def total(steps: list[Step]) -> Figures:
    found = Figures()
    for s in steps:
        found = found + s.figures
    return found


def config_of(name: str, root: Path, preset: str, settings: dict | None = None) -> Config:
    """A config with one store, parsed as a config file's [[stores]] entry would be."""
    entry = {"name": name, "path": str(root), "preset": preset}
    if settings:
        entry["settings"] = settings
    return parse_config({"stores": [entry]})


def assert_right(steps: list[Step]) -> None:
    """Fail with every problem of every step, one a line."""
    found = problems(steps)
    assert not found, "what the agent reads went wrong:\n" + "\n".join(found)


def assert_clean_end(s: Session, *, dangling: frozenset[tuple[str, str, str]] = frozenset()) -> None:
    """After everything was applied: no retired note in sight, no dangling reference but
    some of ``dangling`` (ones the store had before dreamd), every index entry resolving, the
    index loaded whole."""
    end = s.reading()
    assert end.retired_visible == frozenset()
    assert end.dangling <= dangling
    assert end.loaded.within_limit and not (end.unresolved_entries - s.allowed_unresolved)
