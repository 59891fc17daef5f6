"""The oracle (``dreamd eval``): run a planner in dry-run over stores and score what it proposes.

Planners: ``rules`` (the detectors), ``llm`` (a pass with a model: live, recorded or replayed),
``oracle`` (the same pass with ``daemon.evaluation.oracle.OracleModel``, a perfect model answering
from the labels: the pipeline's ceiling, with every correct proposal it lost listed).

A labeled corpus holds, for each store folder ``<name>/``, a ``<name>.labels.toml`` beside it
(never inside: labels are not a note) with ``preset``, optional ``now`` (the pass's clock),
``description`` and ``reindex`` (bool), ``keep = [notes]``, ``[[merge]] notes = [...]`` (with
an optional ``survivor``, the note people kept), ``[[retire]] note = "..." kind = "supersede"
| "soft-expire"`` (a supersede's optional ``by``: the newer note) and ``[[workspace]]`` commits
(the repository the notes describe, built with git for the pass); see examples/eval/README.md.
A record store (preset dexto) is a database file ``<name>.db`` with ``<name>.db.labels.toml``
beside it, its notes named by key (``memory:item:<id>``).

Scoring (``score``); refused proposals are never predictions, they are counted apart:

- merge: a proposal matches a group only when its notes (survivor and retired) equal the group's:
  a true positive, each group once. Any other merge, a partial overlap included, is a false
  positive, and the group it failed to match a false negative.
- supersede, soft-expire: one unit per retired note; (note, kind) equal to a label is a true
  positive; an unlabeled retirement, or one of the other kind, a false positive (and the label a
  miss). ``retire`` counts the note alone: a note the labels retire is a true positive whether it
  is superseded or soft-expired (the note leaves what the agent reads either way), and
  ``retire_kind`` says how many of those had the labeled kind.
- reindex (only when labeled): one unit per store, proposed vs expected.
- survivor: of the matched merge groups that name a ``survivor``, how many kept that note
  (``other_survivor`` lists the others).
- lossy: merges marked lossy. destructive: proposals that would retire a ``keep`` note (for a
  merge, one it retires; a keep note may be the survivor).
- a proposal in state ``duplicate`` (the same change proposed twice in one pass, e.g. by a
  detector and by the model) is shown but not scored, as a pass would record it once.

Precision is tp / (tp + fp), recall tp / (tp + fn); None when the denominator is 0.

The LLM planner (``llm_planner``) is a pass with a model, in dry run: the detectors' proposals
and the model's, validated alike. The database does not exist, so every note counts as
changed and the whole store is offered to the model in bounded groups. For every store the
eval reports model calls, tokens and cost; a model failure is that store's one-line error and
the eval goes on. Two things make a recording replay exactly (``--record`` then ``--replay``):
reply keys are the sorted corpus-relative paths of the notes sent (``store/a.md|store/b.md``:
two stores never share a key), and packing counts ~4 characters a token whatever the client,
so the groups are the same with a live model and with its recording. The settings that shape
packing and budgets are written into the recording (``"settings"``) and used again on replay.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import tempfile
import time
import tomllib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from daemon.config import Config, StoreConfig, adhoc_store
from daemon.core.errors import ConfigError, PlannerError
from daemon.core.proposals import MERGE, PENDING, REFUSED
from daemon.llm.base import ModelRequest, ModelResponse, ModelSettings
from daemon.service.context import App, utcnow
from daemon.service.passes import llm_unfinished
from daemon.stores.presets import PRESETS, get_preset
from daemon.evaluation.scoring import (  # noqa: F401 - re-exported: the eval's public names
    Counts,
    DUPLICATE,
    EvalReport,
    Labels,
    NOT_PREDICTED,
    PlannedLike,
    PlannerResult,
    PlannerRun,
    Predicted,
    RETIRE,
    SCORED,
    SUFFIX,
    Score,
    StoreResult,
    USAGE,
    _check,
    coverage,
    load_labels,
    predicted,
    score,
    sum_usage,
)

def rules_planner(config: Config | None = None) -> PlannerRun:
    """The detectors via ``run_pass(dry_run=True)`` on a database that does not exist: reads only."""
    from daemon.service.passes import run_pass

    def run(store: StoreConfig, now: dt.datetime) -> list[PlannedLike]:
        absent = Path(tempfile.gettempdir()) / f"dreamd-eval-{uuid.uuid4().hex}" / "absent.db"
        app = App(config=config or Config(), db_url=f"sqlite:///{absent}", clock=lambda: now)
        try:
            return [replace(o.planned, state=o.state) for o in run_pass(app, store, dry_run=True).outcomes]
        finally:
            app.close()

    return run


class _StoreClient:
    """The model as one store's eval pass sees it: reply keys scoped by the store's name, usage
    metered, and no ``count_tokens`` (packing estimates ~4 characters a token, the same whether
    the answers come live or from a recording)."""

    def __init__(self, inner: Any, scope: str) -> None:
        self.inner, self.scope = inner, scope
        self.requests = self.prompt_tokens = self.completion_tokens = self.misses = self.truncated = 0
        self.costs: list[float | None] = []
        self.sent: list[frozenset[str]] = []

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        self.requests += 1
        self.sent += [frozenset(request.key.split("|"))] if request.key and not request.extra_messages else []
        key = "|".join(f"{self.scope}/{p}" for p in request.key.split("|")) if request.key else ""
        response = self.inner.complete(replace(request, key=key), settings)
        self.prompt_tokens += response.prompt_tokens
        self.completion_tokens += response.completion_tokens
        self.costs.append(response.cost)
        self.misses += response.meta.get("replay") == "miss"
        self.truncated += response.finish_reason == "length"  # cut at max_output_tokens: none of it is used
        return response

    def limits(self, settings: ModelSettings) -> Any:
        return getattr(self.inner, "limits", lambda _s: None)(settings)

    def usage(self) -> dict[str, Any]:
        cost = None if not self.costs or None in self.costs else round(sum(c for c in self.costs if c is not None), 6)
        return {"calls": self.requests, "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "cost": cost, "truncated": self.truncated}


class LLMRun:
    """The LLM planner as a PlannerRun: ``run_pass(dry_run=True)`` with ``store.llm`` set and the
    App's model client injected, on a database that does not exist (reads only)."""

    def __init__(self, config: Config, settings: ModelSettings, client: Any, describe: Mapping[str, Any] | None = None) -> None:
        self.config, self.settings, self.client = config, settings, client
        self.model = {"model": settings.model, "replay": None, "record": None, "recorded_model": None, **(describe or {})}

    def __call__(self, store: StoreConfig, now: dt.datetime) -> PlannerResult:
        """The store's passes, as a schedule would run them, until the model has been shown every
        note and every group of related notes together (at most ``MAX_PASSES``): one pass when its
        budget covers the store, more when not. The detectors' proposals are the first pass's (the
        later ones repeat them); the model's come from every pass."""
        from daemon.service.passes import run_pass

        meter = _StoreClient(self.client, store.name)
        absent = Path(tempfile.gettempdir()) / f"dreamd-eval-{uuid.uuid4().hex}" / "absent.db"
        app = App(config=self.config, db_url=f"sqlite:///{absent}", clock=lambda: now, model_client=lambda _settings: meter, ledgers={})
        started = time.monotonic()
        items: list[Any] = []
        stats: dict[str, Any] = {}
        passes = 0
        try:
            while passes < MAX_PASSES:
                passes += 1
                report = run_pass(app, store._replace(llm=self.settings), dry_run=True)
                made = [replace(o.planned, state=o.state) for o in report.outcomes]
                items += made if passes == 1 else [i for i in made if i.draft.source.startswith("model:")]
                stats = report.llm or {}
                if not (stats.get("calls") and llm_unfinished(stats)):
                    break
        except PlannerError as exc:
            usage = {**meter.usage(), "replay_misses": meter.misses, "model_proposals": 0, "stopped": None, "passes": passes}
            return PlannerResult([], {**usage, "seconds": round(time.monotonic() - started, 1), "error": exc.one_line()}, exc.one_line(), meter.sent)
        finally:
            app.close()
        items = _once(items)
        usage = meter.usage() | {"replay_misses": meter.misses, "passes": passes, "complete": not llm_unfinished(stats)}
        mine = sum(i.state == PENDING and i.draft.source.startswith("model:") for i in items)
        extra = {"model_proposals": mine, "stopped": stats.get("stopped"), "seconds": round(time.monotonic() - started, 1), "error": None}
        return PlannerResult(items, usage | extra, sent=meter.sent)


MAX_PASSES = 50  # an eval's passes over one store; a store needing more says it is not covered


def _once(items: list[Any]) -> list[Any]:
    """A change proposed twice in one pass (a detector and the model agreeing) counts once:
    the later ones become ``duplicate``, as a recorded pass would store them."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = getattr(item, "key", None)
        if item.state == PENDING and key:
            if key in seen:
                item = replace(item, state=DUPLICATE, reason="the same change is proposed earlier in this pass")
            seen.add(key)
        out.append(item)
    return out


def llm_planner(config: Config, *, settings: ModelSettings | None = None, client: Any = None, describe: Mapping[str, Any] | None = None) -> LLMRun:
    """The LLM planner over ``settings`` (default: the config's global ``[llm]``) through
    ``client`` (default: litellm); a one-line ConfigError when no model is configured."""
    settings = settings or config.llm
    if settings is None:
        raise ConfigError("--planner llm needs a model, and none is configured", hint=NO_MODEL_HINT)
    if client is None:
        from daemon.llm.litellm_client import LiteLLMClient

        client = LiteLLMClient()
    return LLMRun(config, settings, client, describe)


PLANNERS = ("rules", "llm", "oracle")
NO_MODEL_HINT = "give --model NAME (with --api-base URL for a local server), --replay FILE, or an [llm] table in the --config file"
# what shapes the groups, the packing and the budgets: a replay must use the recording's values
RECORDED = ("model", "api_base", "temperature", "timeout_s", "retries", "max_output_tokens", "tokens_per_call", "tokens_per_pass", "context_window", "cost_per_pass")


@dataclass
class EvalModel:
    """The model an eval runs with: its settings, the client, and what to say about it."""

    settings: ModelSettings
    client: Any
    replay: Path | None = None
    record: Path | None = None
    recorded_model: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"model": self.settings.model, "replay": _shown(self.replay), "record": _shown(self.record), "recorded_model": self.recorded_model}

    def planner(self, config: Config) -> LLMRun:
        return llm_planner(config, settings=self.settings, client=self.client, describe=self.describe())

    def finish(self, completed: bool = True) -> None:
        """After a recording run, finished or not: the file holds the settings its replay
        needs (and exists even when no call was needed, unless the run failed before any)."""
        if self.record is None or not (completed or self.record.exists()):
            return
        from daemon.llm.fakes import ReplayModel

        if not self.record.exists():
            ReplayModel(model=self.settings.model).save(self.record)
        data = json.loads(self.record.read_text(encoding="utf-8"))
        data["settings"] = {k: v for k, v in dataclasses.asdict(self.settings).items() if k in RECORDED and v is not None}
        tmp = self.record.with_name(self.record.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.record)


def _shown(path: Path | None) -> str | None:
    return None if path is None else str(path)


def parse_options(pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs of ``[llm]`` keys; VALUE is read as TOML (2500, 0.2, true), else as a string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        _check(bool(sep and key.strip()), f"--llm-option {pair!r}", "must be KEY=VALUE, e.g. tokens_per_call=2500")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = value.strip()
    return out


def eval_model(
    config: Config,
    *,
    model: str | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    options: Mapping[str, Any] | None = None,
    replay: str | Path | None = None,
    record: str | Path | None = None,
    client: Any = None,
) -> EvalModel:
    """Settings, first wins: the options given here, a replay file's recorded settings, the
    config's global ``[llm]``. ``replay``: answers from that file, no network; ``record``: a
    live client (``client``, default litellm) whose answers are saved to that file."""
    from daemon.config import _parse_llm
    from daemon.llm.fakes import RecordingClient, ReplayModel

    _check(not (replay and record), "eval", "--replay and --record exclude each other (a replay makes no call to record)")
    raw: dict[str, Any] = {k: v for k, v in dataclasses.asdict(config.llm).items() if v is not None} if config.llm else {}
    recorded_model = None
    if replay is not None:
        replay = Path(replay)
        replayed = ReplayModel.load(replay)
        recorded = json.loads(replay.read_text(encoding="utf-8")).get("settings")
        _check(recorded is None or isinstance(recorded, dict), f"replay file {replay}", "'settings' must be an object")
        raw |= {k: v for k, v in (recorded or {}).items() if k in RECORDED}
        recorded_model = replayed.model or str(raw.get("model") or "") or None
        raw.setdefault("model", recorded_model or "replay")
        client = replayed
    raw |= dict(options or {})
    raw |= {k: v for k, v in (("model", model), ("api_base", api_base), ("api_key_env", api_key_env)) if v is not None}
    if not raw.get("model"):
        raise ConfigError("--planner llm needs a model, and none is configured", hint=NO_MODEL_HINT)
    settings = _parse_llm(raw, "eval", Path.cwd())
    if replay is None:
        if client is None:
            from daemon.llm.litellm_client import LiteLLMClient

            client = LiteLLMClient()
        if record is not None:
            record = Path(record)
            _check(record.parent.is_dir(), f"--record {record}", "its folder does not exist")
            client = RecordingClient(client, record)
    return EvalModel(settings, client, replay, None if record is None else Path(record), recorded_model)


def oracle_model(config: Config, corpus: str | Path, options: Mapping[str, Any] | None = None) -> EvalModel:
    """The oracle as the eval's model (``daemon.evaluation.oracle``): the labels of ``corpus``
    answer. Budgets, first wins: ``options``, the config's global ``[llm]``, the defaults."""
    from daemon.config import _parse_llm
    from daemon.evaluation.oracle import MODEL, OracleModel

    corpus = Path(corpus)
    _check(corpus.is_dir(), f"eval corpus {corpus}", "not a folder")
    labels = [load_labels(p) for p in sorted(corpus.glob(f"*{SUFFIX}"))]
    _check(bool(labels), f"eval corpus {corpus}", "--planner oracle answers from labels, and it has no *.labels.toml")
    raw: dict[str, Any] = {k: v for k, v in dataclasses.asdict(config.llm).items() if v is not None} if config.llm else {}
    settings = _parse_llm(raw | dict(options or {}) | {"model": MODEL}, "eval", Path.cwd())
    return EvalModel(settings, OracleModel(labels))


def refused_correct(proposals: list[Predicted], cut: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The oracle's proposals the pipeline lost: refused, marked lossy, or in a reply cut off.
    Every oracle proposal is right by construction, so each of these is the pipeline's fault."""
    from daemon.evaluation.oracle import SOURCE

    mine = [p for p in proposals if p.source == SOURCE]
    out = [{"kind": p.kind, "notes": sorted(p.notes), "reason": p.reason or "refused"} for p in mine if p.state == REFUSED]
    out += [{"kind": MERGE, "notes": sorted(p.notes), "reason": "marked lossy"} for p in mine if p.kind == MERGE and p.lossy and p.state not in NOT_PREDICTED]
    return out + cut


def find_stores(corpus: Path, preset: str | None = None) -> list[tuple[Path, str]]:
    """Unlabeled stores: ``<corpus>/<preset>/<store>/`` (or a corpus named after a preset) take that
    preset, other folders ``preset`` or generic; no subfolder: one store. A given ``preset`` wins."""
    subdirs = lambda d: sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))  # noqa: E731
    databases = lambda d: sorted(p for p in d.iterdir() if p.is_file() and p.suffix == ".db")  # noqa: E731
    stores = lambda d, name: databases(d) if get_preset(name).records else subdirs(d)  # noqa: E731
    if preset is not None:
        get_preset(preset)
    if corpus.name in PRESETS:
        return [(d, preset or corpus.name) for d in stores(corpus, preset or corpus.name)] or [(corpus, preset or corpus.name)]
    found = [(s, preset or d.name) for d in subdirs(corpus) if d.name in PRESETS for s in stores(d, preset or d.name)]
    found += [(d, preset or "generic") for d in subdirs(corpus) if d.name not in PRESETS]
    return found or [(corpus, preset or "generic")]


def _run_store(run: PlannerRun, store: StoreConfig, at: dt.datetime, labels: Labels | None) -> list[PlannedLike] | PlannerResult:
    """One store's pass; a labeled workspace is built as a git repository for it, then removed."""
    if labels is None or not labels.workspace:
        return run(store, at)
    from daemon.evaluation.git_fixture import build_repo

    with tempfile.TemporaryDirectory(prefix="dreamd-eval-workspace-") as folder:
        return run(store._replace(workspace=build_repo(labels.workspace, Path(folder) / "repo")), at)


def run_eval(corpus: str | Path, *, planner: str = "rules", config: Config | None = None,
             llm: PlannerRun | None = None, preset: str | None = None, now: dt.datetime | None = None) -> EvalReport:  # fmt: skip
    """Run ``planner`` in dry-run over ``corpus``. If it holds ``*.labels.toml``, only those stores run,
    each at its labels' clock, and are scored; otherwise every store ``find_stores`` finds, at ``now``."""
    corpus = Path(corpus)
    _check(corpus.is_dir(), f"eval corpus {corpus}", "not a folder")
    _check(planner in PLANNERS, f"planner {planner!r}", "unknown (use rules, llm or oracle)")
    labels = [load_labels(p) for p in sorted(corpus.glob(f"*{SUFFIX}"))]
    if planner == "oracle":
        run = llm or oracle_model(config or Config(), corpus).planner(config or Config())
    else:
        run = rules_planner(config) if planner == "rules" else (llm or llm_planner(config or Config()))
    clock = now or utcnow()
    stores = [(lab.name, lab.store, lab.preset, lab.now or clock, lab) for lab in labels]
    stores += [(root.relative_to(corpus).as_posix() if root != corpus else root.name, root, name, clock, None) for root, name in ([] if labels else find_stores(corpus, preset))]
    results = []
    for name, root, preset_name, at, lab in stores:
        # named as in the report: the LLM planner scopes its reply keys by it
        done = _run_store(run, adhoc_store(root, preset_name)._replace(name=name), at, lab)
        done = done if isinstance(done, PlannerResult) else PlannerResult(list(done))
        got = [predicted(item) for item in done.items]
        llm_stats = done.llm if done.sent is None or lab is None else {**(done.llm or {}), "coverage": coverage(lab, done.sent)}
        lost = refused_correct(got, run.client.lost(name)) if planner == "oracle" else None
        results.append(StoreResult(name, preset_name, got, score(lab, got) if lab else None, llm_stats, done.error, lost))
    return EvalReport(corpus, planner, bool(labels), results, getattr(run, "model", None) if planner != "rules" else None)
