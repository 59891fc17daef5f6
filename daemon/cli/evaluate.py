"""``dreamd eval``: score a planner against labeled stores, or count what it proposes over real ones.

``--json`` prints one object (stable keys)::

    v          1
    corpus     the folder given; planner: "rules" | "llm"; labeled: bool
    stores     [{store, preset, proposals (number), counts, score}]; score is null when unlabeled
    counts     over all stores: {kind: {state: number}} (states: pending, refused, suppressed, duplicate)
    overall    the summed score, null when unlabeled
    destructive  number of destructive false positives (0 when unlabeled)
    sample     [{store, kind, state, title, rationale, notes, retired, lossy, diff_head}]

A score is ``{kinds: {merge|supersede|soft-expire|retire|reindex: {tp, fp, fn, precision, recall}},
refused, lossy, destructive: [{kind, title, notes}], false_positives: [{kind, notes}],
missed: [{kind, notes}]}``; precision and recall are null when undefined (nothing proposed or
nothing expected). Scoring rules: daemon/service/evaluate.py.
"""

from __future__ import annotations

from typing import Any

import click

from daemon.cli.render import emit_json

KINDS = ("merge", "supersede", "soft-expire", "retire", "reindex")
DIFF_LINES = 12


def counts(proposals: list[Any]) -> dict[str, dict[str, int]]:
    """kind -> state -> number of proposals."""
    out: dict[str, dict[str, int]] = {}
    for p in proposals:
        out.setdefault(p.kind, {})[p.state] = out.get(p.kind, {}).get(p.state, 0) + 1
    return out


def pick_sample(stores: list[Any], n: int) -> list[tuple[str, Any]]:
    """Up to ``n`` proposals for reading: the kinds taken in turn so each shows, refused ones last."""
    queues: dict[str, list[tuple[str, Any]]] = {}
    for store in stores:
        for p in store.proposals:
            queues.setdefault(p.kind, []).append((store.name, p))
    ordered = [sorted(q, key=lambda item: item[1].state == "refused") for _, q in sorted(queues.items())]
    picked: list[tuple[str, Any]] = []
    while len(picked) < n and any(ordered):
        picked += [q.pop(0) for q in ordered if q][: n - len(picked)]
    return picked


def _sample_json(store: str, p: Any) -> dict[str, Any]:
    return {"store": store, "kind": p.kind, "state": p.state, "title": p.title, "rationale": p.rationale,
            "notes": list(p.notes), "retired": list(p.retired), "lossy": p.lossy, "diff_head": p.diff.splitlines()[:DIFF_LINES]}  # fmt: skip


def report_json(report: Any, sample: list[tuple[str, Any]]) -> dict[str, Any]:
    overall = report.overall
    everything = [p for s in report.stores for p in s.proposals]
    return {
        "v": 1, "corpus": str(report.corpus), "planner": report.planner, "labeled": report.labeled,
        "stores": [{"store": s.name, "preset": s.preset, "proposals": len(s.proposals), "counts": counts(s.proposals),
                    "score": s.score.as_dict() if s.score else None} for s in report.stores],
        "counts": counts(everything), "overall": overall.as_dict() if overall else None,
        "destructive": len(overall.destructive) if overall else 0,
        "sample": [_sample_json(store, p) for store, p in sample],
    }  # fmt: skip


def _pr(c: Any) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    return f"{fmt(c.precision)}/{fmt(c.recall)}"


def _labeled_text(report: Any) -> list[str]:
    width = max([len(s.name) for s in report.stores] + [7]) + 2
    head = f"{'store':<{width}}{'preset':<13}" + "".join(f"{k:<13}" for k in KINDS) + "refused  lossy  destructive"
    lines = ["precision/recall per kind ('-': nothing proposed / nothing expected)", head]
    for name, preset, score in [(s.name, s.preset, s.score) for s in report.stores] + [("overall", "", report.overall)]:
        cells = "".join(f"{_pr(score.kinds[k]):<13}" for k in KINDS)
        lines.append(f"{name:<{width}}{preset:<13}{cells}{score.refused:<9}{score.lossy:<7}{len(score.destructive)}")
    overall = report.overall
    lines += ["", "overall counts:"]
    lines += [f"  {k:<12} tp {c.tp:<3} fp {c.fp:<3} fn {c.fn:<3} precision {_pr(c).split('/')[0]:<5} recall {_pr(c).split('/')[1]}" for k, c in overall.kinds.items()]
    lines += ["", "false positives, misses and destructive proposals:"]
    for store in report.stores:
        wrong = [("false positive", x) for x in store.score.false_positives] + [("missed", x) for x in store.score.missed]
        wrong += [("DESTRUCTIVE", {"kind": d["kind"], "notes": d["notes"]}) for d in store.score.destructive]
        lines += [f"  {store.name}: {what} {x['kind']}: {', '.join(x['notes'])}" for what, x in wrong]
    lines.append(f"destructive false positives: {len(overall.destructive)}")
    return lines


def _unlabeled_text(report: Any) -> list[str]:
    width = max([len(s.name) for s in report.stores] + [7]) + 2
    shown = ("merge", "supersede", "soft-expire", "reindex")
    lines = ["proposals per kind (not refused), and refused ones", f"{'store':<{width}}{'preset':<13}" + "".join(f"{k:<13}" for k in shown) + "refused"]
    rows = [(s.name, s.preset, s.proposals) for s in report.stores]
    for name, preset, proposals in rows + [("overall", "", [p for s in report.stores for p in s.proposals])]:
        live = counts([p for p in proposals if p.state != "refused"])
        cells = "".join(f"{sum(live.get(k, {}).values()):<13}" for k in shown)
        lines.append(f"{name:<{width}}{preset:<13}{cells}{sum(p.state == 'refused' for p in proposals)}")
    return lines


def _sample_text(sample: list[tuple[str, Any]]) -> list[str]:
    lines = ["", f"sample of {len(sample)} proposals:"] if sample else []
    for store, p in sample:
        lines += ["", f"[{store}] {p.kind} [{p.state}]{' LOSSY' if p.lossy else ''} {p.title}", f"  why: {p.rationale}"]
        lines += [f"  | {line}" for line in p.diff.splitlines()[:DIFF_LINES]]
    return lines


@click.command("eval")
@click.argument("corpus", type=click.Path(file_okay=False))
@click.option("--planner", type=click.Choice(["rules", "llm"]), default="rules", show_default=True, help="Which planner to score.")
@click.option("--preset", metavar="NAME", help="Unlabeled corpus: the preset of stores not under a folder named after one.")
@click.option("--sample", type=click.IntRange(min=0), help="Proposals to show for reading [default: 5 unlabeled, 0 labeled].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys: see daemon/cli/evaluate.py).")
@click.pass_context
def eval_command(ctx: click.Context, corpus: str, planner: str, preset: str | None, sample: int | None, as_json: bool) -> None:
    """Score a planner, in dry run, against labeled stores: an oracle for memory tidiness.

    CORPUS holds store folders. With a NAME.labels.toml beside a folder NAME/ (expected merges,
    retirements, must-keep notes; see examples/eval/README.md), each labeled store is scored:
    precision and recall per kind, refused proposals, lossy merges, and destructive false
    positives (a proposal that would retire or merge away a note labeled keep). Without labels
    (e.g. CORPUS/claude-code/STORE/), it counts proposals per kind and shows a sample.
    Nothing is written: no store file, no database.

    Exit codes: 0 done; 9 a labeled corpus got destructive false positives; 2 bad labels or
    usage; 7 the planner failed.
    """
    from pathlib import Path

    from daemon.config import load_config
    from daemon.service.evaluate import run_eval

    config = load_config(ctx.obj.config_path)
    report = run_eval(Path(corpus), planner=planner, config=config, preset=preset)
    chosen = pick_sample(report.stores, sample if sample is not None else (0 if report.labeled else 5))
    if as_json:
        emit_json(report_json(report, chosen))
    else:
        kind = "labeled" if report.labeled else "unlabeled"
        click.echo(f"eval of {corpus}: {planner} planner, {len(report.stores)} {kind} stores (dry run: nothing written)\n")
        table = _labeled_text(report) if report.labeled else _unlabeled_text(report)
        click.echo("\n".join(table + _sample_text(chosen)))
    if report.labeled and report.overall.destructive:
        ctx.exit(9)


COMMANDS = [eval_command]
