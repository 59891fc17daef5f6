"""Benchmark the LLM part of a pass: coverage, passes to full coverage, and tokens against the
dump-everything prompt (see bench/README.md).

    .venv/bin/python bench/bench_llm.py [--sizes 9,14,100,1000,10000] [--window 128000] [--reply 16384]
        [--tokens-per-pass N] [--counter litellm|chars] [--json out.json] [--profile]

For each store size, on a generated store (``generate.py``) with a fresh SQLite database in a
temp dir and ``generate.NOW`` as the clock, with a model that answers every request with an
empty proposal list (so the figures are about dreamd, not a network or a model) and declares
the limits of a 128k-window model (``--window``, ``--reply``), under the default budget (one
pass: 1,000,000 tokens; ``--tokens-per-pass`` to change it):

1. passes until the model has been shown every note and every group of related notes
   together: how many it took, how many the first pass announced, the notes shown of the
   notes due in each, and that every note was shown;
2. 1% of the notes get one line edited (a deterministic sample), then one pass: its tokens
   against the baseline;
3. a pass on the unchanged, covered store: it must make exactly 0 model calls.

Tokens are counted with one counter for everything (``litellm.token_counter`` for
``gpt-4o-mini`` by default): the planner's own estimates, the fake model's usage and the
baseline, which is our system prompt plus every note of the store in one prompt.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import functools
import html
import json
import os
import pstats
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import daemon.planners.llm.planner as planner_module  # noqa: E402
import daemon.service.passes.llm_pass as llm_pass  # noqa: E402
import daemon.service.passes.run as passes  # noqa: E402
from daemon.config import Config, adhoc_store  # noqa: E402
from daemon.db import repo  # noqa: E402
from daemon.llm.base import ModelRequest, ModelResponse, ModelSettings  # noqa: E402
from daemon.llm.limits import ModelLimits  # noqa: E402
from daemon.logs import configure  # noqa: E402
from daemon.planners.llm.candidates import sendable  # noqa: E402
from daemon.planners.llm.prompts import PromptBatch, PromptNote, escape_data, load_templates  # noqa: E402
from daemon.service.context import App  # noqa: E402
from daemon.db.ledger import ledger_rows  # noqa: E402
from daemon.service.passes.coverage import Ledger  # noqa: E402
from daemon.service.workspace import observe  # noqa: E402
from generate import NOW, generate_store  # noqa: E402

COUNTER_MODEL = "gpt-4o-mini"
REPLY = '{"v":1,"proposals":[]}'
INDEX = "MEMORY.md"
CHANGED_SHARE = 0.01
TARGET_SHARE = 0.05  # pass 2 tokens / baseline at the largest store
EDIT = " Checked again on 2026-05-30."


def make_counter(kind: str) -> tuple[Callable[[str], int], str, float]:
    """(count, description, seconds spent importing it)."""
    if kind == "chars":
        return (lambda text: len(text) // 4), "len(text) // 4", 0.0
    start = time.perf_counter()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list over the network
    import litellm

    litellm.suppress_debug_info = True
    count = functools.partial(litellm.token_counter, model=COUNTER_MODEL)
    count(text="warm the tokenizer")
    return (lambda text: int(count(text=text))), f"litellm.token_counter(model={COUNTER_MODEL!r})", time.perf_counter() - start


class EmptyReplies:
    """A ModelClient that answers ``{"v":1,"proposals":[]}`` to everything, reporting as prompt
    tokens what the request carries (system, user, extra turns, the JSON schema) with the
    benchmark's counter. Its own time is kept apart: it stands for the model, not dreamd."""

    def __init__(self, count: Callable[[str], int], known: ModelLimits) -> None:
        self.count = count
        self.known = known
        self.calls = 0
        self.seconds = 0.0
        self.counting = 0.0  # the planner's own token counting, through count_tokens
        self._schema: dict[int, int] = {}

    def limits(self, settings: ModelSettings) -> ModelLimits:
        return self.known

    def count_tokens(self, text: str, settings: ModelSettings) -> int:  # the planner's counter
        start = time.perf_counter()
        try:
            return self.count(text)
        finally:
            self.counting += time.perf_counter() - start

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        start = time.perf_counter()
        self.calls += 1
        if id(request.schema) not in self._schema:
            self._schema[id(request.schema)] = self.count(json.dumps(request.schema))
        extra = sum(self.count(m.get("content", "")) for m in request.extra_messages)
        prompt = self.count(request.system) + self.count(request.user) + extra + self._schema[id(request.schema)]
        response = ModelResponse(REPLY, "stop", prompt, self.count(REPLY), None, 0.0, settings.model, meta={"bench": True})
        self.seconds += time.perf_counter() - start
        return response


class Probe:
    """Wraps functions of the pass in place: wall time per label, and the last LLM outcome."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last_outcome: Any = None
        self.profiler: cProfile.Profile | None = None

    def wrap(self, owner: Any, attr: str, label: str, keep: bool = False) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start
            if keep:
                self.last_outcome = result
            return result

        setattr(owner, attr, timed)


def edit_sample(root: Path, notes: list[str], seed: int) -> list[str]:
    """Append a clause to one body line of 1% of the notes (at least one); same seed, same notes."""
    sample = sorted(random.Random(seed).sample(sorted(notes), max(1, round(len(notes) * CHANGED_SHARE))))
    for path in sample:
        lines = (root / path).read_text(encoding="utf-8").split("\n")
        body_start = lines.index("---", 1) + 1  # after the frontmatter
        row = max(i for i in range(body_start, len(lines)) if len(lines[i].split()) > 3)
        lines[row] += EDIT
        (root / path).write_text("\n".join(lines), encoding="utf-8")
    return sample


def baseline_tokens(root: Path, count: Callable[[str], int]) -> dict[str, Any]:
    """The dump-everything prompt: our system prompt, then every note of the store (the
    index left out) in our own note blocks, in one user message; no groups, no schema."""
    files = sorted(p for p in root.glob("*.md") if p.name != INDEX)
    notes = tuple(
        PromptNote(f"n{i}", html.escape(p.name, quote=True), escape_data(p.read_text(encoding="utf-8").rstrip("\n")), False)
        for i, p in enumerate(files, 1)
    )
    rendered = load_templates().render(PromptBatch(notes, (), NOW.date().isoformat(), {}))
    start = time.perf_counter()
    system, user = count(rendered.system), count(rendered.user)
    return {"notes": len(files), "system_tokens": system, "tokens": system + user, "chars": len(rendered.system) + len(rendered.user),
            "count_s": time.perf_counter() - start}  # fmt: skip


def one_pass(app: App, config: Any, client: EmptyReplies, probe: Probe) -> dict[str, Any]:
    probe.seconds.clear()
    probe.last_outcome = None
    calls_before, model_before, counting_before = client.calls, client.seconds, client.counting
    start = time.perf_counter()
    if probe.profiler:
        probe.profiler.enable()
    report = passes.run_pass(app, config)
    if probe.profiler:
        probe.profiler.disable()
    wall = time.perf_counter() - start
    llm = report.llm or {}
    plan = getattr(probe.last_outcome, "plan", None)
    coverage = llm.get("coverage") or {}
    return {
        "status": report.status, "wall_s": wall, "model_calls": client.calls - calls_before,
        "prompt_tokens": llm.get("prompt_tokens", 0), "completion_tokens": llm.get("completion_tokens", 0),
        "complete": llm.get("complete"), "stopped": llm.get("stopped"), "error": llm.get("error"),
        "due": coverage.get("due", 0), "shown": coverage.get("shown", 0), "left": coverage.get("left", 0),
        "groups": coverage.get("groups", 0), "groups_shown": coverage.get("groups_shown", 0), "groups_open": coverage.get("groups_open", 0),
        "passes_left": coverage.get("passes_left", 0), "budget": coverage.get("budget"),
        "sent": sorted({p for c in (plan.calls if plan else []) if c.status in ("ok", "repaired") for p in c.notes}),
        "whole_store": bool(llm.get("whole_store")), "largest_call": max((c.prompt_tokens for c in plan.calls), default=0) if plan else 0,
        "llm_s": probe.seconds.get("llm", 0.0), "select_s": probe.seconds.get("select", 0.0),
        "redact_s": probe.seconds.get("redact", 0.0), "count_s": client.counting - counting_before,
        "model_s": client.seconds - model_before,
    }  # fmt: skip


MAX_PASSES = 40


def run_size(n: int, seed: int, tmp: Path, count: Callable[[str], int], probe: Probe, profile: bool, known: ModelLimits, per_pass: int | None) -> dict[str, Any]:
    root, db = tmp / f"store-{n}", tmp / f"state-{n}.db"
    start = time.perf_counter()
    planted = generate_store(root, n, seed)
    out: dict[str, Any] = {"notes": n, "store_mb": planted.total_bytes / 1e6, "generate_s": time.perf_counter() - start}
    out["baseline"] = baseline_tokens(root, count)
    client = EmptyReplies(count, known)
    settings = ModelSettings(model="bench/empty-replies") if per_pass is None else ModelSettings(model="bench/empty-replies", tokens_per_pass=per_pass)
    config = adhoc_store(root, "deepcode")._replace(llm=settings)
    clock = [NOW]
    app = App(Config(), f"sqlite:///{db}", clock=lambda: clock[0], model_client=lambda _settings: client)
    app.engine()  # migrations are not part of any pass
    probe.profiler = cProfile.Profile() if profile else None
    out["covering"] = []
    while len(out["covering"]) < MAX_PASSES:
        done = one_pass(app, config, client, probe)
        if done["status"] == "skipped":
            break
        out["covering"].append(done)
        clock[0] += dt.timedelta(hours=1)
    out["shown"] = len(set().union(*(set(p["sent"]) for p in out["covering"]))) if out["covering"] else 0
    out["edited"] = len(edit_sample(root, planted.notes, seed))
    out["edit_pass"] = one_pass(app, config, client, probe)
    clock[0] += dt.timedelta(hours=1)
    out["rest"] = one_pass(app, config, client, probe)
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, config.name).id
        view = observe(config).view
        may_send = {note.path for note in sendable(view, lambda _path: False) if not note.pinned}
        out["due_after"] = sorted(Ledger.of(ledger_rows(conn, store_id)).due(view) & may_send)
    app.close()
    out["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # sizes run smallest first
    if probe.profiler:
        out["hotspots"] = hotspots(probe.profiler)
    return out


def hotspots(profiler: cProfile.Profile, limit: int = 15) -> list[str]:
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:limit]  # type: ignore[attr-defined]
    return [f"{tt:8.2f}s own {ct:8.2f}s cum  {Path(f).name}:{line} {name}" for (f, line, name), (_, _, tt, ct, _) in rows]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the LLM planner's coverage and tokens per pass against the dump-everything prompt.")
    parser.add_argument("--sizes", default="9,14,100,1000,10000", help="store sizes, comma-separated (default 9,14,100,1000,10000)")
    parser.add_argument("--window", type=int, default=128_000, help="the model's declared window (default 128000)")
    parser.add_argument("--reply", type=int, default=16_384, help="the model's declared longest reply (default 16384)")
    parser.add_argument("--tokens-per-pass", type=int, default=None, help="a pass's budget (default: dreamd's, 1,000,000)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--counter", choices=("litellm", "chars"), default="litellm", help="token counter for both sides (default litellm)")
    parser.add_argument("--profile", action="store_true", help="run the passes of the largest store under cProfile (slower)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every figure as JSON")
    args = parser.parse_args()
    configure()  # warnings only, on stderr
    sizes = [int(s) for s in args.sizes.split(",")]
    count, counter_name, import_s = make_counter(args.counter)
    known = ModelLimits(args.window, args.reply, f"declared by the benchmark ({args.window:,}-token window)")
    probe = Probe()
    probe.wrap(llm_pass, "plan_with_model", "llm", keep=True)  # passes imports it from there at call time
    probe.wrap(planner_module, "select", "select")
    probe.wrap(planner_module, "redact", "redact")
    out: dict[str, Any] = {"seed": args.seed, "counter": counter_name, "counter_import_s": import_s, "python": sys.version.split()[0], "window": args.window, "reply": args.reply, "sizes": []}
    print(f"token counter: {counter_name} (import {import_s:.1f} s, not in any figure)", flush=True)
    with tempfile.TemporaryDirectory(prefix="dreamd-bench-llm-") as tmp:
        for n in sizes:
            result = run_size(n, args.seed, Path(tmp), count, probe, args.profile and n == max(sizes), known, args.tokens_per_pass)
            out["sizes"].append(result)
            print(f"  {n} notes done: {len(result['covering'])} passes to full coverage, {sum(p['wall_s'] for p in result['covering']):.1f} s", flush=True)
    ok = report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str) + "\n")
    assert all(r["rest"]["model_calls"] == 0 for r in out["sizes"]), "an unchanged, covered store made model calls"
    sys.exit(0 if ok else 1)


def report(out: dict[str, Any]) -> bool:
    rows: list[tuple[str, str, str, str]] = []
    ok_all = True

    def add(label: str, value: str, target: str = "", ok: bool | None = None) -> None:
        nonlocal ok_all
        ok_all = ok_all and ok is not False
        rows.append((label, value, target, "" if ok is None else verdict(ok)))

    for r in out["sizes"]:
        n, base, covering = r["notes"], r["baseline"], r["covering"]
        add(f"{n} notes ({r['store_mb']:.2f} MB)", f"baseline prompt {base['tokens']:,} tokens ({base['notes']} notes + {base['system_tokens']:,} system)")
        add("  peak RSS of the process so far", f"{r['maxrss_mb']:.0f} MB")
        announced = 1 + covering[0]["passes_left"] if covering else 0
        add("  passes to full coverage (the first pass announced)", f"{len(covering)} ({announced})", "known in advance", len(covering) <= announced + 1)
        add("  notes shown, over those passes", f"{r['shown']:,} of {base['notes'] + 1:,} (the index with them)" if r["shown"] > base["notes"] else f"{r['shown']:,} of {base['notes']:,}",
            "every note", r["shown"] >= base["notes"])  # fmt: skip
        for number, p in enumerate(covering, 1):
            add(f"  pass {number}", f"{p['model_calls']:,} calls, {p['prompt_tokens'] + p['completion_tokens']:,} tokens; shown {p['shown']:,} of {p['due']:,} due"
                + (f", {p['groups_open']} groups open" if p["groups_open"] else "") + (" [whole store]" if p["whole_store"] else "")
                + f"; {p['wall_s']:.1f} s (selection {p['select_s']:.1f} s)")  # fmt: skip
        total = sum(p["prompt_tokens"] + p["completion_tokens"] for p in covering)
        add("  tokens to full coverage / baseline", f"{total:,} / {base['tokens']:,} = {total / base['tokens']:.2f}x")
        e = r["edit_pass"]
        share = (e["prompt_tokens"] + e["completion_tokens"]) / base["tokens"]
        r["edit_share"] = share
        add(f"  after {r['edited']} notes edited: one pass", f"{e['model_calls']} calls, {e['prompt_tokens'] + e['completion_tokens']:,} tokens = {share:.2%} of the baseline"
            + (" [whole store]" if e["whole_store"] else ""), "shows the due", e["shown"] == e["due"] >= r["edited"])  # fmt: skip
        add("  unchanged and covered: model calls", f"{r['rest']['model_calls']}", "exactly 0", r["rest"]["model_calls"] == 0)
        add("  notes still due afterwards", f"{len(r['due_after'])}", "0", not r["due_after"])
    width = max(len(x[0]) for x in rows)
    value_width = min(90, max(len(x[1]) for x in rows))
    for label, value, target, ok in rows:
        print(f"{label:<{width}}  {value:<{value_width}}  {target:<18} {ok}".rstrip())
    for r in out["sizes"]:
        for line in r.get("hotspots", []):
            print(line)
    return ok_all


if __name__ == "__main__":
    main()
