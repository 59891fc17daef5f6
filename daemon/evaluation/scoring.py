"""Labels and scoring for the oracle (``dreamd eval``): pure, no I/O beyond reading labels.

See ``daemon.evaluation.evaluate`` for the labels format and the scoring rules.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from daemon.config import StoreConfig
from daemon.core.errors import ConfigError
from daemon.core.notes import as_utc
from daemon.core.proposals import MERGE, REFUSED, REINDEX, SOFT_EXPIRE, SUPERSEDE, Draft
from daemon.stores.presets import PRESETS, get_preset

RETIRE = "retire"
SCORED = (MERGE, SUPERSEDE, SOFT_EXPIRE, RETIRE, REINDEX)
SUFFIX = ".labels.toml"
_KEYS = {"": {"preset", "now", "description", "reindex", "keep", "merge", "retire", "workspace"}, "merge": {"notes", "survivor", "why"},
         "retire": {"note", "kind", "by", "why"}, "workspace": {"at", "message", "write", "delete"}}  # fmt: skip


class PlannedLike(Protocol):
    """What a planner gives the oracle: a Planned's draft and diff, and the state it would enter."""

    draft: Draft
    diff: str
    state: str


@dataclass
class PlannerResult:
    """What a planner made of one store, when it has more to say than its proposals."""

    items: list[PlannedLike]
    llm: dict[str, Any] | None = None  # model calls, tokens, cost (see LLMRun)
    error: str | None = None  # one line: the planner failed on this store
    sent: list[frozenset[str]] | None = None  # the notes of each model call (store paths)


PlannerRun = Callable[[StoreConfig, dt.datetime], "list[PlannedLike] | PlannerResult"]
DUPLICATE = "duplicate"
NOT_PREDICTED = (REFUSED, DUPLICATE)


@dataclass(frozen=True)
class Commit:
    """One commit of a labeled store's workspace: the files it writes and deletes, and when."""

    at: dt.datetime
    message: str
    write: tuple[tuple[str, str], ...]  # (repository path, text)
    delete: tuple[str, ...]


@dataclass(frozen=True)
class Labels:
    name: str
    store: Path
    preset: str
    now: dt.datetime | None
    merges: tuple[frozenset[str], ...]
    retire: dict[str, str]  # note -> supersede | soft-expire
    keep: frozenset[str]
    reindex: bool | None = None
    description: str = ""
    survivors: dict[frozenset[str], str] = field(default_factory=dict)  # merge group -> the note people kept
    by: dict[str, str] = field(default_factory=dict)  # superseded note -> the newer note that replaces it
    workspace: tuple[Commit, ...] = ()  # the repository the notes describe, built for the pass; () none

    def shown_with(self, note: str) -> frozenset[str]:
        """The notes one call must hold for a model to propose this retirement."""
        return frozenset((note, self.by[note])) if note in self.by else frozenset((note,))


def _check(ok: bool, where: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: {message}")


def _tables(where: str, raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = raw.get(key, [])
    _check(isinstance(value, list) and all(isinstance(e, dict) for e in value), where, f"'{key}' must be an array of tables ([[{key}]])")
    for n, entry in enumerate(value, 1):
        _known(f"{where}: {key} {n}", entry, key)
    return value


def _known(where: str, entry: dict[str, Any], key: str) -> None:
    unknown = sorted(set(entry) - _KEYS[key])
    _check(not unknown, where, f"unknown key {', '.join(map(repr, unknown))} (allowed: {', '.join(sorted(_KEYS[key]))})")


def _paths(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def load_labels(path: str | Path) -> Labels:
    """Read ``<store>.labels.toml``; a one-line ConfigError for anything wrong in it."""
    path = Path(path)
    where = f"labels {path}"
    _check(path.name.endswith(SUFFIX), where, f"a labels file is named <store>{SUFFIX}")
    store = path.with_name(path.name[: -len(SUFFIX)])
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where} cannot be read: {exc.__class__.__name__}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from None
    _known(where, raw, "")
    _check(isinstance(raw.get("preset"), str), where, f"'preset' is required ({', '.join(sorted(PRESETS))})")
    records = get_preset(raw["preset"]).records
    if records:
        _check(store.is_file(), where, f"no record database {store.name} beside it (a {raw['preset']} store is a file: <name>.db with <name>.db{SUFFIX})")
    else:
        _check(store.is_dir(), where, f"no store folder {store.name}/ beside it")
    given = raw.get("now")
    now = as_utc(given) if isinstance(given, (str, dt.datetime)) else None
    _check(given is None or now is not None, where, "'now' must be an ISO time, e.g. 2026-04-01T09:00:00Z")
    _check(raw.get("reindex") in (None, True, False), where, "'reindex' must be true or false")
    _check(_paths(raw.get("keep", [])), where, "'keep' must be a list of note paths")
    keep = frozenset(raw.get("keep", []))
    merges: list[frozenset[str]] = []
    survivors: dict[frozenset[str], str] = {}
    for n, entry in enumerate(_tables(where, raw, "merge"), 1):
        notes = entry.get("notes")
        _check(_paths(notes) and len(set(notes)) > 1, where, f"merge {n}: 'notes' must list 2 or more distinct note paths")
        _check(not any(set(notes) & g for g in merges), where, f"merge {n} shares a note with another group")
        _check(len(keep & set(notes)) < 2, where, f"merge {n} holds 2 'keep' notes: no merge could keep both")
        kept = entry.get("survivor")
        _check(kept is None or kept in notes, where, f"merge {n}: 'survivor' must be one of its notes")
        _check(kept is None or not (keep & set(notes)) or kept in keep, where, f"merge {n}: its 'keep' note must be the survivor")
        merges.append(frozenset(notes))
        if kept is not None:
            survivors[frozenset(notes)] = kept
    grouped = frozenset().union(*merges)
    retire: dict[str, str] = {}
    by: dict[str, str] = {}
    for n, entry in enumerate(_tables(where, raw, "retire"), 1):
        note, kind, newer = entry.get("note"), entry.get("kind"), entry.get("by")
        _check(isinstance(note, str) and kind in (SUPERSEDE, SOFT_EXPIRE), where, f"retire {n} needs 'note' and 'kind' = \"supersede\" or \"soft-expire\"")
        _check(note not in retire and note not in grouped and note not in keep, where, f"retire {n}: {note} is also labeled elsewhere (retire, merge or keep)")
        _check(newer is None or (kind == SUPERSEDE and isinstance(newer, str) and newer != note), where, f"retire {n}: 'by' names the newer note of a supersede, not the note itself")
        retire[note] = kind
        if newer is not None:
            by[note] = newer
    merged_away = {n for g in merges for n in g if survivors.get(g) != n}
    for note, newer in sorted(by.items()):
        _check(newer not in retire and newer not in merged_away, where, f"retire {note}: 'by' {newer} is itself retired or merged away")
    workspace = tuple(_commit(f"{where}: workspace {n}", entry) for n, entry in enumerate(_tables(where, raw, "workspace"), 1))
    named = sorted(keep | grouped | set(retire) | set(by.values()))
    if records:
        known = _record_keys(store)
        for note in named:
            _check(note in known, where, f"names {note!r}, which is not a record of {store.name} (records are named by key, memory:item:<id>)")
    root = store.resolve()
    for note in [] if records else named:
        plain = not {"", ".", ".."} & set(note.split("/")) and not (root / note).is_symlink()  # as the scan names notes
        _check(plain and (root / note).resolve().is_relative_to(root) and (root / note).is_file(), where, f"names {note!r}, which is not a file of {store.name}/")
    return Labels(store.name, store, raw["preset"], now, tuple(merges), retire, keep, raw.get("reindex"), str(raw.get("description", "")), survivors, by, workspace)


def _record_keys(database: Path) -> frozenset[str]:
    """The keys of the records a pass would read in ``database`` (a StoreError as any pass's)."""
    from daemon.stores.records.database import open_roots, scan

    return frozenset(scan(open_roots(database)).notes)


def _commit(where: str, entry: dict[str, Any]) -> Commit:
    at = as_utc(entry["at"]) if isinstance(entry.get("at"), (str, dt.datetime)) else None
    if at is None:
        raise ConfigError(f"{where}: 'at' must be an ISO time, e.g. 2026-01-05T10:00:00Z")
    write, delete = entry.get("write", {}), entry.get("delete", [])
    _check(isinstance(write, dict) and all(isinstance(t, str) for t in write.values()), where, "'write' must map file paths to their text")
    _check(_paths(delete), where, "'delete' must be a list of file paths")
    for path in [*write, *delete]:
        _check(bool(path) and not path.startswith("/") and not {"", ".", "..", ".git"} & set(path.split("/")), where, f"{path!r} is not a plain relative path")
    _check(bool(write or delete), where, "a commit writes or deletes at least one file")
    return Commit(at, str(entry.get("message") or "update"), tuple(sorted(write.items())), tuple(delete))


@dataclass(frozen=True)
class Predicted:
    """A proposal reduced to what scoring needs, and what a reader of the sample wants."""

    kind: str
    notes: tuple[str, ...]  # survivor first
    retired: tuple[str, ...]
    lossy: bool = False
    state: str = "pending"
    title: str = ""
    rationale: str = ""
    diff: str = ""
    source: str = ""  # a detector's name, or model:<model>
    reason: str | None = None  # why it was refused (or is a duplicate)
    derived: bool = False  # the model's quote was not in a note: dreamd chose the evidence lines


def predicted(item: PlannedLike) -> Predicted:
    d = item.draft
    retired = tuple(p for p in d.retire if p != d.survivor)
    derived = any(e.derived for e in d.evidence)
    return Predicted(d.kind, d.notes, retired, d.lossy, item.state, d.title, d.rationale, item.diff, d.source, getattr(item, "reason", None), derived)


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def as_dict(self) -> dict[str, Any]:
        p, r = self.precision, self.recall
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": p if p is None else round(p, 3), "recall": r if r is None else round(r, 3)}


@dataclass
class Agreement:
    """Of the labeled merges a planner found, in how many it kept the note people kept."""

    agree: int = 0
    labeled: int = 0

    def __add__(self, other: Agreement) -> Agreement:
        return Agreement(self.agree + other.agree, self.labeled + other.labeled)

    def as_dict(self) -> dict[str, int]:
        return {"agree": self.agree, "labeled": self.labeled}


@dataclass
class Derived:
    """Right notes, botched quote: proposals whose evidence dreamd derived because the model's
    quote was not verbatim, and how many of them the labels call correct (a salvaged proposal
    that would have been refused before)."""

    proposed: int = 0
    correct: int = 0

    def __add__(self, other: Derived) -> Derived:
        return Derived(self.proposed + other.proposed, self.correct + other.correct)

    def as_dict(self) -> dict[str, int]:
        return {"proposed": self.proposed, "correct": self.correct}


@dataclass
class Score:
    kinds: dict[str, Counts] = field(default_factory=lambda: {k: Counts() for k in SCORED})
    refused: int = 0
    lossy: int = 0
    destructive: list[dict[str, Any]] = field(default_factory=list)  # {kind, title, notes: the keep notes it retires}
    false_positives: list[dict[str, Any]] = field(default_factory=list)  # {kind, notes}
    missed: list[dict[str, Any]] = field(default_factory=list)  # {kind, notes}
    survivor: Agreement = field(default_factory=Agreement)
    other_survivor: list[dict[str, Any]] = field(default_factory=list)  # {notes, kept, labeled}
    derived: Derived = field(default_factory=Derived)
    retire_kind: Agreement = field(default_factory=Agreement)  # of the right retirements, those of the labeled kind

    def __add__(self, other: Score) -> Score:
        return Score({k: self.kinds[k] + other.kinds[k] for k in SCORED}, self.refused + other.refused, self.lossy + other.lossy,
                     self.destructive + other.destructive, self.false_positives + other.false_positives, self.missed + other.missed,
                     self.survivor + other.survivor, self.other_survivor + other.other_survivor, self.derived + other.derived,
                     self.retire_kind + other.retire_kind)  # fmt: skip

    def destructive_kinds(self) -> dict[str, int]:
        """Destructive false positives per scored kind (``retire``: both retiring kinds)."""
        out = {k: sum(d["kind"] == k for d in self.destructive) for k in SCORED}
        out[RETIRE] = out[SUPERSEDE] + out[SOFT_EXPIRE]
        return out

    def as_dict(self) -> dict[str, Any]:
        harmful = self.destructive_kinds()
        return {"kinds": {k: c.as_dict() | {"destructive": harmful[k]} for k, c in self.kinds.items()}, "refused": self.refused, "lossy": self.lossy,
                "destructive": self.destructive, "false_positives": self.false_positives, "missed": self.missed,
                "survivor": self.survivor.as_dict(), "other_survivor": self.other_survivor, "derived": self.derived.as_dict(),
                "retire_kind": self.retire_kind.as_dict()}  # fmt: skip


def score(labels: Labels, proposals: list[Predicted]) -> Score:
    """Score one store's proposals against its labels (rules in the module docstring)."""
    out = Score(refused=sum(p.state == REFUSED for p in proposals))
    live = [p for p in proposals if p.state not in NOT_PREDICTED]
    out.lossy = sum(p.kind == MERGE and p.lossy for p in live)
    out.destructive = [{"kind": p.kind, "title": p.title, "notes": sorted(set(p.retired) & labels.keep)} for p in live if set(p.retired) & labels.keep]
    unmatched = set(labels.merges)
    for p in (p for p in live if p.kind == MERGE):
        group = frozenset(p.notes)
        matched = group in unmatched
        unmatched.discard(group)
        if matched and group in labels.survivors:
            kept, wanted = p.notes[0], labels.survivors[group]
            out.survivor += Agreement(int(kept == wanted), 1)
            out.other_survivor += [] if kept == wanted else [{"notes": sorted(group), "kept": kept, "labeled": wanted}]
        out.kinds[MERGE].tp += matched
        out.kinds[MERGE].fp += not matched
        out.false_positives += [] if matched else [{"kind": MERGE, "notes": sorted(group)}]
    out.kinds[MERGE].fn = len(unmatched)
    out.missed += [{"kind": MERGE, "notes": sorted(g)} for g in sorted(unmatched, key=sorted)]
    made = {(note, p.kind) for p in live if p.kind in (SUPERSEDE, SOFT_EXPIRE) for note in p.retired}
    expected = set(labels.retire.items())
    for note, kind in sorted(made | expected):
        hit = (note, kind) in made and (note, kind) in expected
        counts = out.kinds[kind]
        counts.tp, counts.fp, counts.fn = counts.tp + hit, counts.fp + ((note, kind) not in expected), counts.fn + ((note, kind) not in made)
        if not hit:
            (out.false_positives if (note, kind) in made else out.missed).append({"kind": kind, "notes": [note]})
    retired = {note: kind for note, kind in made}
    hits = set(retired) & set(labels.retire)
    out.kinds[RETIRE] = Counts(len(hits), len(set(retired) - set(labels.retire)), len(set(labels.retire) - set(retired)))
    out.retire_kind = Agreement(sum(retired[n] == labels.retire[n] for n in hits), len(hits))
    salvaged = [p for p in live if p.derived]
    right = lambda p: frozenset(p.notes) in labels.merges if p.kind == MERGE else all(labels.retire.get(n) == p.kind for n in p.retired)  # noqa: E731
    out.derived = Derived(len(salvaged), sum(bool(p.retired) and right(p) for p in salvaged))
    if labels.reindex is not None:
        made_reindex = any(p.kind == REINDEX for p in live)
        out.kinds[REINDEX] = Counts(int(made_reindex and labels.reindex), int(made_reindex and not labels.reindex), int(labels.reindex and not made_reindex))
    return out


@dataclass
class StoreResult:
    name: str
    preset: str
    proposals: list[Predicted]
    score: Score | None = None  # None: the store has no labels
    llm: dict[str, Any] | None = None  # the model's calls, tokens, cost on this store
    error: str | None = None  # the planner failed here: scored as if it proposed nothing
    refused_correct: list[dict[str, Any]] | None = None  # oracle only: {kind, notes, reason} it proposed and lost


@dataclass
class EvalReport:
    corpus: Path
    planner: str
    labeled: bool
    stores: list[StoreResult]
    model: dict[str, Any] | None = None  # which model (or recording) answered: LLMRun.describe()

    @property
    def overall(self) -> Score | None:
        return sum((s.score for s in self.stores if s.score), Score()) if self.labeled else None

    @property
    def refused_correct(self) -> list[dict[str, Any]] | None:
        """The oracle's lost proposals over all stores, each with its store; None for other planners."""
        if self.planner != "oracle":
            return None
        return [{"store": s.name, **lost} for s in self.stores for lost in s.refused_correct or []]

    @property
    def failed(self) -> list[StoreResult]:
        return [s for s in self.stores if s.error]

    @property
    def llm(self) -> dict[str, Any] | None:
        """The model's usage summed over the stores, with which model it was; None for rules."""
        if self.model is None:
            return None
        return {**self.model, **sum_usage([s.llm for s in self.stores if s.llm]), "failed": [s.name for s in self.failed]}


USAGE = ("calls", "prompt_tokens", "completion_tokens")


def coverage(labels: Labels, sent: list[frozenset[str]]) -> dict[str, dict[str, int]]:
    """Candidate recall: how many labeled cases one model call showed whole. A merge group when
    one call held all its notes; a retirement when a call held the note, and for a supersede
    labeled ``by`` the newer note with it. What was never sent, no model can find: the
    candidate selection's share of the misses, whatever the model."""
    merges = sum(any(group <= call for call in sent) for group in labels.merges)
    retire = sum(any(labels.shown_with(note) <= call for call in sent) for note in labels.retire)
    return {"merge": {"sent": merges, "expected": len(labels.merges)}, "retire": {"sent": retire, "expected": len(labels.retire)}}


def sum_usage(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """calls and tokens summed; cost null when a call had no price (or no call was made)."""
    out: dict[str, Any] = {k: sum(p.get(k) or 0 for p in parts) for k in (*USAGE, "truncated", "replay_misses", "model_proposals", "passes")}
    out["complete"] = all(p.get("complete", True) for p in parts)
    priced = [p.get("cost") for p in parts if p.get("calls")]
    out["cost"] = round(sum(priced), 6) if priced and None not in priced else None
    out["seconds"] = round(sum(p.get("seconds") or 0.0 for p in parts), 1)
    shown = [p["coverage"] for p in parts if p.get("coverage")]
    if shown:
        out["coverage"] = {k: {n: sum(c[k][n] for c in shown) for n in ("sent", "expected")} for k in ("merge", "retire")}
    return out
