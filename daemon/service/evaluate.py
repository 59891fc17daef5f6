"""The oracle (``dreamd eval``): run a planner in dry-run over stores and score what it proposes.

A labeled corpus holds, for each store folder ``<name>/``, a ``<name>.labels.toml`` beside it
(never inside: labels are not a note) with ``preset``, optional ``now`` (the pass's clock),
``description`` and ``reindex`` (bool), ``keep = [notes]``, ``[[merge]] notes = [...]`` and
``[[retire]] note = "..." kind = "supersede" | "soft-expire"``; see examples/eval/README.md.

Scoring (``score``); refused proposals are never predictions, they are counted apart:

- merge: a proposal matches a group only when its notes (survivor and retired) equal the group's:
  a true positive, each group once. Any other merge, a partial overlap included, is a false
  positive, and the group it failed to match a false negative.
- supersede, soft-expire: one unit per retired note; (note, kind) equal to a label is a true
  positive; an unlabeled retirement, or one of the other kind, a false positive (and the label a
  miss). ``retire`` sums the two kinds.
- reindex (only when labeled): one unit per store, proposed vs expected.
- lossy: merges marked lossy. destructive: proposals that would retire a ``keep`` note (for a
  merge, one it retires; a keep note may be the survivor).

Precision is tp / (tp + fp), recall tp / (tp + fn); None when the denominator is 0.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from daemon.config import Config, StoreConfig, adhoc_store
from daemon.core.errors import ConfigError, PlannerError
from daemon.core.proposals import MERGE, REFUSED, REINDEX, SOFT_EXPIRE, SUPERSEDE, Draft
from daemon.service.context import App, utcnow
from daemon.stores.presets import PRESETS, get_preset

RETIRE = "retire"
SCORED = (MERGE, SUPERSEDE, SOFT_EXPIRE, RETIRE, REINDEX)
SUFFIX = ".labels.toml"
_KEYS = {"": {"preset", "now", "description", "reindex", "keep", "merge", "retire"}, "merge": {"notes", "why"}, "retire": {"note", "kind", "why"}}


class PlannedLike(Protocol):
    """What a planner gives the oracle: a Planned's draft and diff, and the state it would enter."""

    draft: Draft
    diff: str
    state: str


PlannerRun = Callable[[StoreConfig, dt.datetime], list[PlannedLike]]


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
    _check(store.is_dir(), where, f"no store folder {store.name}/ beside it")
    _check(isinstance(raw.get("preset"), str), where, f"'preset' is required ({', '.join(sorted(PRESETS))})")
    get_preset(raw["preset"])
    now = raw.get("now")
    try:
        now = dt.datetime.fromisoformat(now.replace("Z", "+00:00")) if isinstance(now, str) else now
    except ValueError:
        now = ""
    _check(now is None or isinstance(now, dt.datetime), where, "'now' must be an ISO time, e.g. 2026-04-01T09:00:00Z")
    now = now.replace(tzinfo=dt.timezone.utc) if now and now.tzinfo is None else now
    _check(raw.get("reindex") in (None, True, False), where, "'reindex' must be true or false")
    _check(_paths(raw.get("keep", [])), where, "'keep' must be a list of note paths")
    keep = frozenset(raw.get("keep", []))
    merges: list[frozenset[str]] = []
    for n, entry in enumerate(_tables(where, raw, "merge"), 1):
        notes = entry.get("notes")
        _check(_paths(notes) and len(set(notes)) > 1, where, f"merge {n}: 'notes' must list 2 or more distinct note paths")
        _check(not any(set(notes) & g for g in merges), where, f"merge {n} shares a note with another group")
        _check(len(keep & set(notes)) < 2, where, f"merge {n} holds 2 'keep' notes: no merge could keep both")
        merges.append(frozenset(notes))
    grouped = frozenset().union(*merges)
    retire: dict[str, str] = {}
    for n, entry in enumerate(_tables(where, raw, "retire"), 1):
        note, kind = entry.get("note"), entry.get("kind")
        _check(isinstance(note, str) and kind in (SUPERSEDE, SOFT_EXPIRE), where, f"retire {n} needs 'note' and 'kind' = \"supersede\" or \"soft-expire\"")
        _check(note not in retire and note not in grouped and note not in keep, where, f"retire {n}: {note} is also labeled elsewhere (retire, merge or keep)")
        retire[note] = kind
    root = store.resolve()
    for note in sorted(keep | grouped | set(retire)):
        plain = not {"", ".", ".."} & set(note.split("/")) and not (root / note).is_symlink()  # as the scan names notes
        _check(plain and (root / note).resolve().is_relative_to(root) and (root / note).is_file(), where, f"names {note!r}, which is not a file of {store.name}/")
    return Labels(store.name, store, raw["preset"], now, tuple(merges), retire, keep, raw.get("reindex"), str(raw.get("description", "")))


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


def predicted(item: PlannedLike) -> Predicted:
    d = item.draft
    return Predicted(d.kind, d.notes, tuple(p for p in d.retire if p != d.survivor), d.lossy, item.state, d.title, d.rationale, item.diff)


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
class Score:
    kinds: dict[str, Counts] = field(default_factory=lambda: {k: Counts() for k in SCORED})
    refused: int = 0
    lossy: int = 0
    destructive: list[dict[str, Any]] = field(default_factory=list)  # {kind, title, notes: the keep notes it retires}
    false_positives: list[dict[str, Any]] = field(default_factory=list)  # {kind, notes}
    missed: list[dict[str, Any]] = field(default_factory=list)  # {kind, notes}

    def __add__(self, other: Score) -> Score:
        return Score({k: self.kinds[k] + other.kinds[k] for k in SCORED}, self.refused + other.refused, self.lossy + other.lossy,
                     self.destructive + other.destructive, self.false_positives + other.false_positives, self.missed + other.missed)  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"kinds": {k: c.as_dict() for k, c in self.kinds.items()}, "refused": self.refused, "lossy": self.lossy,
                "destructive": self.destructive, "false_positives": self.false_positives, "missed": self.missed}  # fmt: skip


def score(labels: Labels, proposals: list[Predicted]) -> Score:
    """Score one store's proposals against its labels (rules in the module docstring)."""
    out = Score(refused=sum(p.state == REFUSED for p in proposals))
    live = [p for p in proposals if p.state != REFUSED]
    out.lossy = sum(p.kind == MERGE and p.lossy for p in live)
    out.destructive = [{"kind": p.kind, "title": p.title, "notes": sorted(set(p.retired) & labels.keep)} for p in live if set(p.retired) & labels.keep]
    unmatched = set(labels.merges)
    for group in (frozenset(p.notes) for p in live if p.kind == MERGE):
        matched = group in unmatched
        unmatched.discard(group)
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
    out.kinds[RETIRE] = out.kinds[SUPERSEDE] + out.kinds[SOFT_EXPIRE]
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


@dataclass
class EvalReport:
    corpus: Path
    planner: str
    labeled: bool
    stores: list[StoreResult]

    @property
    def overall(self) -> Score | None:
        return sum((s.score for s in self.stores if s.score), Score()) if self.labeled else None


def rules_planner(config: Config | None = None, app_factory: Callable[[dt.datetime], App] | None = None) -> PlannerRun:
    """The detectors via ``run_pass(dry_run=True)`` on a database that does not exist: reads only."""
    from daemon.service.passes import run_pass

    def run(store: StoreConfig, now: dt.datetime) -> list[PlannedLike]:
        absent = Path(tempfile.gettempdir()) / f"dreamd-eval-{uuid.uuid4().hex}" / "absent.db"
        app = app_factory(now) if app_factory else App(config=config or Config(), db_url=f"sqlite:///{absent}", clock=lambda: now)
        try:
            return [replace(o.planned, state=o.state) for o in run_pass(app, store, dry_run=True).outcomes]
        finally:
            app.close()

    return run


def llm_planner(config: Config) -> PlannerRun:
    """The LLM planner as a PlannerRun (a dry run, nothing written): the seam the LLM pass wires."""
    raise PlannerError("the LLM planner is not wired into eval yet", hint="use --planner rules, or give run_eval an llm= PlannerRun")


def find_stores(corpus: Path, preset: str | None = None) -> list[tuple[Path, str]]:
    """Unlabeled stores: ``<corpus>/<preset>/<store>/`` (or a corpus named after a preset) take that
    preset, other folders ``preset`` or generic; no subfolder: one store. A given ``preset`` wins."""
    subdirs = lambda d: sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))  # noqa: E731
    if preset is not None:
        get_preset(preset)
    if corpus.name in PRESETS:
        return [(d, preset or corpus.name) for d in subdirs(corpus)] or [(corpus, preset or corpus.name)]
    found = [(s, preset or d.name) for d in subdirs(corpus) if d.name in PRESETS for s in subdirs(d)]
    found += [(d, preset or "generic") for d in subdirs(corpus) if d.name not in PRESETS]
    return found or [(corpus, preset or "generic")]


def run_eval(corpus: str | Path, *, planner: str = "rules", config: Config | None = None, app_factory: Callable[[dt.datetime], App] | None = None,
             llm: PlannerRun | None = None, preset: str | None = None, now: dt.datetime | None = None) -> EvalReport:  # fmt: skip
    """Run ``planner`` in dry-run over ``corpus``. If it holds ``*.labels.toml``, only those stores run,
    each at its labels' clock, and are scored; otherwise every store ``find_stores`` finds, at ``now``."""
    corpus = Path(corpus)
    _check(corpus.is_dir(), f"eval corpus {corpus}", "not a folder")
    _check(planner in ("rules", "llm"), f"planner {planner!r}", "unknown (use rules or llm)")
    run = rules_planner(config, app_factory) if planner == "rules" else (llm or llm_planner(config or Config()))
    clock = now or utcnow()
    labels = [load_labels(p) for p in sorted(corpus.glob(f"*{SUFFIX}"))]
    results = []
    for lab in labels:
        got = [predicted(item) for item in run(adhoc_store(lab.store, lab.preset), lab.now or clock)]
        results.append(StoreResult(lab.name, lab.preset, got, score(lab, got)))
    for root, name in [] if labels else find_stores(corpus, preset):
        got = [predicted(item) for item in run(adhoc_store(root, name), clock)]
        results.append(StoreResult(root.relative_to(corpus).as_posix() if root != corpus else root.name, name, got))
    return EvalReport(corpus, planner, bool(labels), results)
