"""``dreamd eval``: score a planner against labeled stores, or count what it proposes over real ones.

``--json`` prints one object (stable keys)::

    v          1
    corpus     the folder given; planner: "rules" | "llm" | "oracle"; labeled: bool
    stores     [{store, preset, proposals (number), counts, score, llm, refused_correct}]; score
               is null when unlabeled, llm null for the rules planner, refused_correct null
               except for the oracle
    counts     over all stores: {kind: {state: number}} (states: pending, refused, suppressed, duplicate)
    overall    the summed score, null when unlabeled
    destructive  number of destructive false positives (0 when unlabeled)
    refused_correct  oracle only (else null): [{store, kind, notes, reason}], its correct
               proposals the pipeline refused, marked lossy or lost to a cut-off reply
    llm        null for the rules planner; else the model and its usage over all stores:
               {model, replay, record, recorded_model, calls, prompt_tokens, completion_tokens,
               cost, truncated, replay_misses, model_proposals, seconds, failed: [store],
               coverage (labeled): {merge|retire: {sent, expected}}}
    sample     [{store, kind, state, source, title, rationale, reason, notes, retired, lossy, diff_head}];
               source: the detector or model:<model>; reason: why refused (else null)

A store's ``llm`` is ``{calls, prompt_tokens, completion_tokens, cost, truncated, replay_misses,
model_proposals, stopped, passes, complete, seconds, error}``: ``passes`` is how many passes the eval
ran over the store, as a schedule would, until the model had been shown every note and every group
of related notes together (``complete``: whether it got there within 50); cost is null when the model has no price; ``truncated``
counts replies cut off at max_output_tokens (none of such a reply is used); ``stopped``
says where a token or cost budget ended the store's model calls; ``error`` is the one line of a
model failure (the store then counts as proposing nothing); ``replay_misses`` counts requests a
recording had no reply for (each yields no proposal); ``model_proposals`` the pending proposals
that came from the model (the rest of the llm planner's are the detectors'). On a labeled store it
also has ``coverage``: ``{merge: {sent, expected}, retire: {sent, expected}}``, the labeled merge
groups whose notes one model call held together, and the labeled retirements whose note was sent
at all (with its ``by`` note, for a supersede labeled so): the candidate recall, what the
candidate selection let the model see (a case never sent, no model can find).

A score is ``{kinds: {merge|supersede|soft-expire|retire|reindex: {tp, fp, fn, precision, recall, destructive}},
refused, lossy, destructive: [{kind, title, notes}], false_positives: [{kind, notes}],
missed: [{kind, notes}], survivor: {agree, labeled}, other_survivor: [{notes, kept, labeled}],
derived: {proposed, correct}, retire_kind: {agree, labeled}}``; ``retire`` counts a note the labels
retire as right whether it was superseded or soft-expired, and ``retire_kind`` how many of those
had the labeled kind; ``derived`` counts "right notes, botched quote": proposals (not
refused) whose model quote was not verbatim, so dreamd derived the evidence lines (at a lower
confidence), and how many of them the labels call correct;
precision and recall are null when undefined (nothing proposed or nothing expected).
Scoring rules: daemon/evaluation/evaluate.py.
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
    return {"store": store, "kind": p.kind, "state": p.state, "source": p.source, "title": p.title, "rationale": p.rationale, "reason": p.reason,
            "notes": list(p.notes), "retired": list(p.retired), "lossy": p.lossy, "diff_head": p.diff.splitlines()[:DIFF_LINES]}  # fmt: skip


def report_json(report: Any, sample: list[tuple[str, Any]]) -> dict[str, Any]:
    overall = report.overall
    everything = [p for s in report.stores for p in s.proposals]
    return {
        "v": 1, "corpus": str(report.corpus), "planner": report.planner, "labeled": report.labeled,
        "stores": [{"store": s.name, "preset": s.preset, "proposals": len(s.proposals), "counts": counts(s.proposals),
                    "score": s.score.as_dict() if s.score else None, "llm": s.llm, "refused_correct": s.refused_correct} for s in report.stores],
        "counts": counts(everything), "overall": overall.as_dict() if overall else None,
        "destructive": len(overall.destructive) if overall else 0, "llm": report.llm, "refused_correct": report.refused_correct,
        "sample": [_sample_json(store, p) for store, p in sample],
    }  # fmt: skip


def _pr(c: Any) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    return f"{fmt(c.precision)}/{fmt(c.recall)}"


def _labeled_text(report: Any) -> list[str]:
    width = max([len(s.name) for s in report.stores] + [7]) + 2
    head = f"{'store':<{width}}{'preset':<13}" + "".join(f"{k:<13}" for k in KINDS) + "kind   survivor  derived  refused  lossy  destructive"
    lines = ["precision/recall per kind ('-': nothing proposed / nothing expected); retire: the note retired, either kind;",
             "kind: right retirements of the labeled kind; survivor: merges that kept the note people kept;",
             "derived: right notes, botched quote (correct/proposed whose evidence dreamd derived: the model's quote was not verbatim)", head]
    for name, preset, score in [(s.name, s.preset, s.score) for s in report.stores] + [("overall", "", report.overall)]:
        cells = "".join(f"{_pr(score.kinds[k]):<13}" for k in KINDS)
        kind = f"{score.retire_kind.agree}/{score.retire_kind.labeled}" if score.retire_kind.labeled else "-"
        kept = f"{score.survivor.agree}/{score.survivor.labeled}" if score.survivor.labeled else "-"
        derived = f"{score.derived.correct}/{score.derived.proposed}" if score.derived.proposed else "-"
        lines.append(f"{name:<{width}}{preset:<13}{cells}{kind:<7}{kept:<10}{derived:<9}{score.refused:<9}{score.lossy:<7}{len(score.destructive)}")
    overall = report.overall
    lines += ["", "overall counts:"]
    harmful = overall.destructive_kinds()
    lines += [f"  {k:<12} tp {c.tp:<3} fp {c.fp:<3} fn {c.fn:<3} precision {_pr(c).split('/')[0]:<5} recall {_pr(c).split('/')[1]:<5} destructive {harmful[k]}"
              for k, c in overall.kinds.items()]  # fmt: skip
    lines += ["", "false positives, misses and destructive proposals:"]
    for store in report.stores:
        wrong = [("false positive", x) for x in store.score.false_positives] + [("missed", x) for x in store.score.missed]
        wrong += [("DESTRUCTIVE", {"kind": d["kind"], "notes": d["notes"]}) for d in store.score.destructive]
        lines += [f"  {store.name}: {what} {x['kind']}: {', '.join(x['notes'])}" for what, x in wrong]
        lines += [f"  {store.name}: merge kept {x['kept']}, people kept {x['labeled']}" for x in store.score.other_survivor]
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


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.4f}"


def model_line(report: Any) -> str:
    m = report.model
    if m["replay"]:
        made = f", recorded from {m['recorded_model']}" if m["recorded_model"] else ""
        return f"model: {m['model']}, replayed from {m['replay']}{made} (no network)"
    return f"model: {m['model']}" + (f"; replies recorded to {m['record']}" if m["record"] else "")


def _llm_text(report: Any) -> list[str]:
    """Model calls, tokens and cost per store and overall; failures and budget stops."""
    width = max([len(s.name) for s in report.stores] + [7]) + 2
    lines = ["", "model calls per store (cost '-': the model has no price; passes: until every note and group was shown;",
             "candidates: labeled cases one call showed whole)"]
    lines.append(f"{'store':<{width}}{'passes':<8}{'calls':<7}{'prompt':<10}{'completion':<12}{'cost':<10}{'model proposals':<17}{'truncated':<11}{'replay misses':<15}candidates")
    total = report.llm
    for name, u in [(s.name, s.llm or {}) for s in report.stores] + [("overall", total)]:
        cells = [_num(u.get("calls", 0)), _num(u.get("prompt_tokens", 0)), _num(u.get("completion_tokens", 0)), _num(u.get("cost"))]
        passes = f"{u.get('passes', 0)}" + ("" if u.get("complete", True) else "+")
        line = f"{name:<{width}}{passes:<8}{cells[0]:<7}{cells[1]:<10}{cells[2]:<12}{cells[3]:<10}{u.get('model_proposals', 0):<17}{u.get('truncated', 0):<11}{u.get('replay_misses', 0):<15}{_shown(u)}"
        lines.append(line.rstrip())
    if total.get("coverage"):
        c = total["coverage"]
        lines.append(f"candidate recall: merge groups {c['merge']['sent']}/{c['merge']['expected']} (all notes in one call), retirements {c['retire']['sent']}/{c['retire']['expected']} (with the newer note, for a supersede labeled 'by')")
    lines += [f"  {s.name}: budget: {s.llm['stopped']}" for s in report.stores if s.llm and s.llm.get("stopped")]
    lines += [f"  {s.name}: FAILED: {s.error}" for s in report.failed]
    return lines


def _shown(usage: dict[str, Any]) -> str:
    """Candidate recall as ``sent/expected`` over merge groups and retirements; '' unlabeled."""
    c = usage.get("coverage")
    return f"{c['merge']['sent'] + c['retire']['sent']}/{c['merge']['expected'] + c['retire']['expected']}" if c else ""


def _ceiling_text(report: Any) -> list[str]:
    """The oracle's correct proposals that the pipeline refused, marked lossy or cut off."""
    lost = report.refused_correct
    lines = ["", f"correct proposals the pipeline lost (the oracle's; target: none): {len(lost) or 'none'}"]
    return lines + [f"  {x['store']}: {x['kind']} {', '.join(x['notes'])}: {x['reason']}" for x in lost]


def _sample_text(sample: list[tuple[str, Any]]) -> list[str]:
    lines = ["", f"sample of {len(sample)} proposals:"] if sample else []
    for store, p in sample:
        lines += ["", f"[{store}] {p.kind} [{p.state}]{' LOSSY' if p.lossy else ''} {p.title}", f"  why: {p.rationale}"]
        lines += [f"  {p.state}: {p.reason}"] if p.reason and p.state != "pending" else []
        lines += [f"  | {line}" for line in p.diff.splitlines()[:DIFF_LINES]]
    return lines


@click.command("eval")
@click.argument("corpus", type=click.Path(file_okay=False))
@click.option("--planner", type=click.Choice(["rules", "llm", "oracle"]), default="rules", show_default=True,
              help="Which planner to score; oracle: the pass with a perfect model that answers from the labels.")  # fmt: skip
@click.option("--preset", metavar="NAME", help="Unlabeled corpus: the preset of stores not under a folder named after one.")
@click.option("--sample", type=click.IntRange(min=0), help="Proposals to show for reading [default: 5 unlabeled, 0 labeled].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys: see daemon/cli/evaluate.py).")
@click.option("--model", metavar="NAME", help="llm: a litellm model string, e.g. openai/gpt-4o-mini [default: the config's [llm] model].")
@click.option("--api-base", metavar="URL", help="llm: an OpenAI-compatible server, e.g. http://127.0.0.1:8770/v1.")
@click.option("--api-key-env", metavar="VAR", help="llm: the NAME of the environment variable holding the key.")
@click.option("--llm-option", "llm_options", metavar="KEY=VALUE", multiple=True, help="llm, oracle: any [llm] key, e.g. tokens_per_call=2500 (repeatable).")
@click.option("--replay", metavar="FILE", type=click.Path(dir_okay=False), help="llm: answer from a recording (no network), with the settings it was made with.")
@click.option("--record", metavar="FILE", type=click.Path(dir_okay=False), help="llm: save the model's replies (and the settings) to FILE, for --replay.")
@click.pass_context
def eval_command(ctx: click.Context, corpus: str, planner: str, preset: str | None, sample: int | None, as_json: bool, model: str | None,
                 api_base: str | None, api_key_env: str | None, llm_options: tuple[str, ...], replay: str | None, record: str | None) -> None:  # fmt: skip
    """Score a planner, in dry run, against labeled stores: an oracle for memory tidiness.

    CORPUS holds store folders. With a NAME.labels.toml beside a folder NAME/ (expected merges,
    retirements, must-keep notes; see examples/eval/README.md), each labeled store is scored:
    precision and recall per kind, refused proposals, lossy merges, and destructive false
    positives (a proposal that would retire or merge away a note labeled keep). Without labels
    (e.g. CORPUS/claude-code/STORE/), it counts proposals per kind and shows a sample.
    Nothing is written: no store file, no database.

    --planner oracle runs the same pass with a perfect model that answers every call from the
    labels: its precision and recall are the pipeline's ceiling (what candidate selection and
    the checks allow), and every correct proposal of it that the checks refuse is listed.

    --planner llm runs a pass with a model (the detectors' proposals and the model's) over
    every note of each store, in bounded groups, and reports model calls, tokens and cost per
    store. The model: --model/--api-base/--api-key-env/--llm-option, else the global [llm] of
    --config FILE; --replay FILE answers from a recording instead (no network); --record FILE
    saves a live model's replies for such replays. A model failure on one store is reported on
    that store, and the others still run.

    Exit codes: 0 done; 9 a labeled corpus got destructive false positives; 7 the model failed
    on a store (after the full report); 2 bad labels, model settings or usage.
    """
    from pathlib import Path

    from daemon.config import load_config
    from daemon.core.errors import ConfigError
    from daemon.evaluation import eval_model, oracle_model, parse_options, run_eval

    config = load_config(ctx.obj.config_path)
    given = [name for name, value in (("--model", model), ("--api-base", api_base), ("--api-key-env", api_key_env),
                                      ("--llm-option", llm_options), ("--replay", replay), ("--record", record)) if value]  # fmt: skip
    llm = None
    misplaced = [g for g in given if planner == "rules" or (planner == "oracle" and g != "--llm-option")]
    if misplaced:
        hint = "the oracle takes only --llm-option (budgets)" if planner == "oracle" else "add --planner llm, or leave it out"
        raise ConfigError(f"{misplaced[0]} is for --planner llm", hint=hint)
    if planner == "llm":
        options = parse_options(llm_options)
        chosen_model = eval_model(config, model=model, api_base=api_base, api_key_env=api_key_env, options=options, replay=replay, record=record)
        llm = chosen_model.planner(config)
    if planner == "oracle":
        chosen_model = oracle_model(config, corpus, parse_options(llm_options))
        llm = chosen_model.planner(config)
    completed = False
    try:
        report = run_eval(Path(corpus), planner=planner, config=config, preset=preset, llm=llm)
        completed = True
    finally:
        if llm is not None:
            chosen_model.finish(completed)
    chosen = pick_sample(report.stores, sample if sample is not None else (0 if report.labeled else 5))
    if as_json:
        emit_json(report_json(report, chosen))
    else:
        kind = "labeled" if report.labeled else "unlabeled"
        click.echo(f"eval of {corpus}: {planner} planner, {len(report.stores)} {kind} stores (dry run: nothing written)")
        click.echo((model_line(report) + "\n") if report.model else "")
        table = _labeled_text(report) if report.labeled else _unlabeled_text(report)
        table += _llm_text(report) if report.model else []
        table += _ceiling_text(report) if report.planner == "oracle" else []
        click.echo("\n".join(table + _sample_text(chosen)))
    for store in report.failed:
        click.echo(f"eval: {store.name}: {store.error}", err=True)
    if report.labeled and report.overall.destructive:
        ctx.exit(9)
    if report.failed:
        ctx.exit(7)


COMMANDS = [eval_command]
