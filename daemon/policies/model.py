"""What a policy is, what it is told about a proposal, and what it answers. No I/O here.

A policy is an ordered list of rules; the first rule whose every condition holds decides
``accept``, ``reject`` or ``hold``. No match: hold. Conditions left out match anything.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from daemon.core.globs import matches as glob_matches

ACCEPT = "accept"
REJECT = "reject"
HOLD = "hold"
DECISIONS = (ACCEPT, REJECT, HOLD)
DEFAULT_DECISION = HOLD


@dataclass(frozen=True)
class Facts:
    """What the engine knows about one proposal.

    ``notes`` are the notes the proposal is about (surviving and retired, not archive copies
    or the index); ``paths`` rules match them. ``frontmatter`` and ``ages_days`` are keyed by
    note; a note missing from them is *unknown*, and a rule that asks about it does not match.
    """

    kind: str
    source: str
    confidence: float
    lossy: bool
    notes: tuple[str, ...] = ()
    retire: tuple[str, ...] = ()
    changed_lines: int = 0
    frontmatter: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ages_days: Mapping[str, float] = field(default_factory=dict)
    pinned: bool = False  # any note the proposal touches is pinned
    dangling: int = 0  # references the proposal leaves pointing at no live note
    holds: tuple[str, ...] = ()  # why the agent would read the store wrong after it: never auto-accepted


@dataclass(frozen=True)
class Counts:
    """Proposals this policy already accepted for the store: in this pass, and today."""

    this_pass: int = 0
    today: int = 0


@dataclass(frozen=True)
class Limits:
    max_per_pass: int | None = None
    max_per_day: int | None = None
    max_retire: int | None = None


@dataclass(frozen=True)
class Rule:
    """One rule: a decision and the conditions under which it applies (None: any)."""

    decide: str
    line: int = 0
    reason: str = ""
    kinds: tuple[str, ...] | None = None
    sources: tuple[str, ...] | None = None
    min_confidence: float | None = None
    max_confidence: float | None = None
    lossy: bool | None = None
    min_notes: int | None = None
    max_notes: int | None = None
    paths: tuple[str, ...] | None = None
    frontmatter: Mapping[str, tuple[Any, ...]] | None = None
    min_age_days: float | None = None
    max_age_days: float | None = None
    max_changed_lines: int | None = None
    dangling: bool | None = None

    def mismatch(self, facts: Facts) -> str | None:
        """Why this rule does not match ``facts`` (None: it matches)."""
        for check in _CHECKS:
            why = check(self, facts)
            if why:
                return why
        return None

    def describe(self) -> str:
        """The rule's conditions in one line, as a reader would say them."""
        parts = [f"{name}={value!r}" for name, value in self._conditions()]
        return " and ".join(parts) or "anything"

    def _conditions(self) -> list[tuple[str, Any]]:
        names = ("kinds", "sources", "min_confidence", "max_confidence", "lossy", "min_notes", "max_notes",
                 "paths", "frontmatter", "min_age_days", "max_age_days", "max_changed_lines", "dangling")  # fmt: skip
        found = []
        for name in names:
            value = getattr(self, name)
            if value is not None:
                found.append((name, list(value) if isinstance(value, tuple) else value))
        return found


@dataclass(frozen=True)
class Policy:
    name: str
    rules: tuple[Rule, ...] = ()
    limits: Limits = Limits()
    digest: str = ""  # first 12 hex of the BLAKE3 of the file's bytes

    @property
    def actor(self) -> str:
        return f"policy:{self.name}@{self.digest or 'unhashed'}"


@dataclass(frozen=True)
class Decision:
    decision: str
    rule_index: int | None  # 0-based; None: no rule matched, or an invariant or limit decided
    rule_line: int | None
    reason: str
    actor: str


def _kind(rule: Rule, f: Facts) -> str | None:
    if rule.kinds is not None and f.kind not in rule.kinds:
        return f"kind {f.kind} is not one of {', '.join(rule.kinds)}"
    return None


def _source(rule: Rule, f: Facts) -> str | None:
    if rule.sources is not None and not any(fnmatch.fnmatchcase(f.source, s) for s in rule.sources):
        return f"source {f.source} matches none of {', '.join(rule.sources)}"
    return None


def _confidence(rule: Rule, f: Facts) -> str | None:
    if rule.min_confidence is not None and f.confidence < rule.min_confidence:
        return f"confidence {f.confidence:.2f} < {rule.min_confidence}"
    if rule.max_confidence is not None and f.confidence > rule.max_confidence:
        return f"confidence {f.confidence:.2f} > {rule.max_confidence}"
    return None


def _lossy(rule: Rule, f: Facts) -> str | None:
    if rule.lossy is not None and f.lossy != rule.lossy:
        return f"lossy is {str(f.lossy).lower()}, the rule wants {str(rule.lossy).lower()}"
    return None


def _notes(rule: Rule, f: Facts) -> str | None:
    n = len(f.notes)
    if rule.min_notes is not None and n < rule.min_notes:
        return f"{n} notes < min_notes {rule.min_notes}"
    if rule.max_notes is not None and n > rule.max_notes:
        return f"{n} notes > max_notes {rule.max_notes}"
    return None


def _paths(rule: Rule, f: Facts) -> str | None:
    if rule.paths is None:
        return None
    outside = [p for p in f.notes if not glob_matches(p, rule.paths)]
    if outside or not f.notes:
        return f"{outside[0] if outside else 'no notes'} outside paths {', '.join(rule.paths)}"
    return None


def _allowed(value: Any, allowed: tuple[Any, ...]) -> bool:
    values = value if isinstance(value, list) else [value]
    return bool(values) and all(v in allowed or str(v) in allowed for v in values)


def _frontmatter(rule: Rule, f: Facts) -> str | None:
    if not rule.frontmatter:
        return None
    if not f.notes:
        return "no notes to read frontmatter from"
    for note in f.notes:
        meta = f.frontmatter.get(note)
        if meta is None:
            return f"frontmatter of {note} unknown"
        for key, allowed in rule.frontmatter.items():
            if key not in meta:
                return f"{note} has no {key}"
            if not _allowed(meta[key], allowed):
                return f"{note}: {key} = {meta[key]!r} not in {list(allowed)}"
    return None


def _age(rule: Rule, f: Facts) -> str | None:
    if rule.min_age_days is None and rule.max_age_days is None:
        return None
    if not f.notes:
        return "no notes to age"
    for note in f.notes:
        age = f.ages_days.get(note)
        if age is None:
            return f"age of {note} unknown"
        if rule.min_age_days is not None and age < rule.min_age_days:
            return f"{note} is {age:.0f} days old < min_age_days {rule.min_age_days}"
        if rule.max_age_days is not None and age > rule.max_age_days:
            return f"{note} is {age:.0f} days old > max_age_days {rule.max_age_days}"
    return None


def _size(rule: Rule, f: Facts) -> str | None:
    if rule.max_changed_lines is not None and f.changed_lines > rule.max_changed_lines:
        return f"{f.changed_lines} changed lines > max_changed_lines {rule.max_changed_lines}"
    return None


def _dangling(rule: Rule, f: Facts) -> str | None:
    if rule.dangling is not None and (f.dangling > 0) != rule.dangling:
        return f"it leaves {f.dangling} dangling references, the rule wants {'some' if rule.dangling else 'none'}"
    return None


_CHECKS = (_kind, _source, _confidence, _lossy, _notes, _paths, _frontmatter, _age, _size, _dangling)


def changed_lines(diff: str) -> int:
    """Lines added or removed in a unified diff (file headers not counted)."""
    return sum(
        1 for line in diff.splitlines()
        if line[:1] in "+-" and line and not line.startswith(("+++ ", "--- "))
    )  # fmt: skip
