"""Every whole-process bench, paired against a baseline revision and b3sum, as one table.

    .venv/bin/python bench/run_all.py [--baseline REV] [--quick] [--work DIR] [--json OUT]

What it runs, each figure a whole process (as cron, a timer, a daemon worker or a person
starts one), this checkout and the baseline in turn:

- the no-op pass at 10,000 and 100,000 notes against b3sum (``bench_noop.py --baseline``),
  with the import time of its path;
- the cold first pass over the 10,001-note store of ``bench_pass.py`` (``pass_child.py`` of
  each tree, alternated; wall and CPU from ``wait4``, peak RSS), and this tree's split by phase;
  then the same pass as a person runs it (``python -m daemon pass --store``, alternated);
- the daemon over 200 and 1,000 stores of 100 notes, hourly-like (``bench_many_stores.py
  --steady``): CPU per skipped pass, and the daemon's RSS;
- the daemon's own RSS beside a 10,000-note store's pass (``bench_daemon.py``).

The baseline (default: the commit this stop began from) is unpacked with ``git archive``
into a temporary folder: no worktree is registered. The load average is printed and kept
before and after. ``--quick`` runs fewer pairs and only the 10,000-note and 200-store sizes
(about 10 minutes on 2 cores; the full run takes about 40, most of it the 100,000-note
first passes and the 1,000-store rounds: ``--work DIR`` keeps stores and databases for the next run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

HERE = Path(__file__).resolve().parent
THIS = HERE.parent
sys.path.insert(0, str(HERE))

from generate import generate_store  # noqa: E402
from machine import load  # noqa: E402

BASELINE = "e412a3f"


def unpack(rev: str, into: Path) -> Path:
    """The tree of ``rev`` in ``into`` (git archive: nothing registered in the repository)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(THIS), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def bench(script: str, *args: str, out: Path) -> dict[str, Any]:
    """Run one bench script of this checkout; its JSON."""
    print(f"\n$ {script} {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, str(HERE / script), *args, "--json", str(out)], check=True)
    return json.loads(out.read_text())


def whole(args: list[str], tree: Path) -> dict[str, float]:
    """Wall, CPU (user + system) and peak RSS of one process run in ``tree``; what it printed last."""
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")} | {"PYTHONPATH": str(tree)}
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, env=env, cwd=tree)
    printed = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024, "last": printed.strip().splitlines()[-1]}


def alternated(work: Path, trees: dict[str, Path], pairs: int, name: str, command: Callable[[Path, Path], list[str]]) -> dict[str, list[dict[str, Any]]]:
    """``pairs`` rounds of ``command(tree, db)`` in each tree in turn, each on a new database
    ``work/<name>-<label>.db``; every run's ``whole`` figures, by tree label."""
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for round_ in range(pairs):
        for label, tree in trees.items():
            for old in work.glob(f"{name}-{label}.db*"):
                old.unlink()
            got = whole(command(tree, work / f"{name}-{label}.db"), tree)
            runs[label].append(got)
            print(f"  {name} {label} #{round_ + 1}: {got['wall_s']:.2f} s wall, {got['cpu_s']:.2f} s CPU, {got['maxrss_mb']:.0f} MB", flush=True)
    return runs


def medians(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Each tree's median wall, CPU and peak RSS, and this tree's wall over the baseline's, pair by pair."""
    out: dict[str, Any] = {label: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "maxrss_mb")} for label, rs in runs.items()}
    if "base" in runs:
        out["ratio"] = statistics.median(a["wall_s"] / b["wall_s"] for a, b in zip(runs["this"], runs["base"], strict=True))
    return out


def first_passes(work: Path, trees: dict[str, Path], pairs: int) -> dict[str, Any]:
    """The cold first pass over bench_pass.py's store, each tree's pass_child.py in turn."""
    store = work / "first-store"
    if not store.exists():
        generate_store(store, 10_000, seed=42)
    runs = alternated(work, trees, pairs, "first", lambda tree, db: [sys.executable, str(tree / "bench" / "pass_child.py"), str(store), str(db)])
    out = medians(runs)
    for label, rs in runs.items():
        children = [json.loads(r["last"]) for r in rs]
        out[label]["in_process_s"] = statistics.median(c["wall_s"] for c in children)
        out[label]["proposals"] = children[0]["stats"].get("pending", 0)
        phases = {k for c in children for k in c["phases"]}
        out[label]["phases_s"] = {k: statistics.median(c["phases"].get(k, {"s": 0})["s"] for c in children) for k in sorted(phases)}
    return out


def command_passes(work: Path, trees: dict[str, Path], pairs: int) -> dict[str, Any]:
    """The same cold first pass as a person runs it, ``dreamd pass --store`` (``python -m
    daemon``: the entry, click, the config, the real clock), each tree in turn."""
    store = work / "first-store"
    runs = alternated(work, trees, pairs, "command", lambda tree, db: [sys.executable, "-m", "daemon", "--db", f"sqlite:///{db}", "pass", "--store", str(store), "--preset", "deepcode", "--summary"])
    out = medians(runs)
    for label, rs in runs.items():
        out[label]["said"] = rs[0]["last"]
    return out


def many_stores(work: Path, trees: dict[str, Path], sizes: list[int]) -> dict[str, Any]:
    """bench_many_stores.py --steady over each size, each tree in turn: CPU per skipped pass."""
    out: dict[str, Any] = {}
    for stores in sizes:
        every = max(90, stores // 4)  # longer than a first round on 2 cores
        for label, tree in trees.items():
            got = bench("bench_many_stores.py", "--steady", "--stores", str(stores), "--every", str(every), "--tree", str(tree), out=work / f"many-{label}-{stores}.json")
            out[f"{label}-{stores}"] = got
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"the revision to pair with (default {BASELINE})")
    parser.add_argument("--quick", action="store_true", help="fewer pairs, the 10,000-note and 200-store sizes only")
    parser.add_argument("--work", type=Path, help="keep stores and databases here (reused next time)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every figure as JSON")
    args = parser.parse_args()
    out: dict[str, Any] = {"baseline": args.baseline, "load_before": load("before")}
    with tempfile.TemporaryDirectory(prefix="dreamd-bench-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        base = unpack(args.baseline, Path(tmp) / "baseline")
        trees = {"this": THIS, "base": base}
        sizes = "10000" if args.quick else "10000,100000"
        out["noop"] = bench("bench_noop.py", "--sizes", sizes, "--pairs", "3" if args.quick else "7", "--baseline", str(base), "--work", str(work / "noop"), out=work / "noop.json")
        out["first"] = first_passes(work, trees, 2 if args.quick else 5)
        out["command"] = command_passes(work, trees, 2 if args.quick else 5)
        out["many"] = many_stores(work, trees, [200] if args.quick else [200, 1000])
        out["daemon"] = bench("bench_daemon.py", "--notes", "10000", out=work / "daemon.json")
    out["load_after"] = load("after")
    print(table(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


SPLIT = (("db_open", "database open + migrations"), ("scan", "scan + view"), ("reading", "reading the notes"), ("findings", "findings"), ("detectors", "detectors"),
         ("detector:near-duplicate", "of which near duplicates"), ("proposals", "building proposals"), ("layout", "their files written for git"), ("db_snapshot", "storing the snapshot"),
         ("db_stats", "the stat cache"), ("db_proposals", "storing proposals"))  # fmt: skip
TOP = ("db_open", "scan", "reading", "findings", "detectors", "proposals", "layout", "db_snapshot", "db_stats", "db_proposals")  # the pass's own time, disjoint


def split(first: dict[str, Any]) -> str:
    """The first pass's phases (pass_child.py), the git thread beside them, and the rest."""
    phases = first["phases_s"]
    parts = [f"{label} {phases.get(key, 0):.2f} s" for key, label in SPLIT]
    rest = first["in_process_s"] - sum(phases.get(key, 0) for key in TOP)
    parts.append(f"the rest (waiting for git's diffs, bookkeeping) {rest:.2f} s; git diffs on their thread {phases.get('unified_diffs', 0):.2f} s")
    return ", ".join(parts)


def table(out: dict[str, Any]) -> str:
    """The README's table: each figure, this checkout, the baseline, their ratio."""
    base = out["baseline"]
    rows = [f"| figure (whole process) | this | {base} | this / {base} |", "|---|---|---|---|"]
    for notes, f in out["noop"]["sizes"].items():
        rows.append(f"| no-op pass, {int(notes):,} notes (b3sum {f['b3sum_s']:.3f} s wall, {f['b3sum_cpu_s']:.3f} s CPU) "
                    f"| {f['pass_s']:.3f} s, **{f['ratio']:.2f}× b3sum**; CPU {f['pass_cpu_s']:.3f} s, {f['pass_cpu_s'] / f['b3sum_cpu_s']:.2f}× "
                    f"| {f['base_s']:.3f} s, {f['base_ratio']:.2f}× b3sum; CPU {f['base_cpu_s']:.3f} s, {f['base_cpu_s'] / f['b3sum_cpu_s']:.2f}× "
                    f"| {f['pass_s'] / f['base_s']:.2f} |")  # fmt: skip
        rows.append(f"| — its imports (`-X importtime`) | {f['imports_s']['total']:.3f} s | | |")
    first = out["first"]
    this, other = first["this"], first["base"]
    rows.append(f"| cold first pass, 10,001 notes, {this['proposals']} proposals | **{this['wall_s']:.2f} s** wall, {this['cpu_s']:.2f} s CPU "
                f"| {other['wall_s']:.2f} s, {other['cpu_s']:.2f} s CPU | {first['ratio']:.2f} |")  # fmt: skip
    rows.append(f"| — its peak RSS | {this['maxrss_mb']:.0f} MB | {other['maxrss_mb']:.0f} MB | |")
    rows.append(f"| — in process {this['in_process_s']:.2f} s, of which | {split(this)} | | |")
    command = out["command"]
    rows.append(f"| the same pass run as `dreamd pass --store` (real clock: {command['this']['said'].rsplit(': ', 1)[-1]}) | **{command['this']['wall_s']:.2f} s** wall, "
                f"{command['this']['cpu_s']:.2f} s CPU, {command['this']['maxrss_mb']:.0f} MB | {command['base']['wall_s']:.2f} s, {command['base']['cpu_s']:.2f} s CPU, "
                f"{command['base']['maxrss_mb']:.0f} MB | {command['ratio']:.2f} |")  # fmt: skip
    sizes = sorted({int(k.split("-")[1]) for k in out["many"]})
    for stores in sizes:
        mine, theirs = out["many"][f"this-{stores}"], out["many"].get(f"base-{stores}")
        them = f"{theirs['round2_cpu_per_store_ms']:.1f} ms" if theirs else ""
        ratio = f"{mine['round2_cpu_per_store_ms'] / theirs['round2_cpu_per_store_ms']:.2f}" if theirs else ""
        rows.append(f"| daemon, {stores:,} stores of 100 notes: CPU per skipped pass (daemon RSS peak {mine['peak_rss']:.0f} MB) "
                    f"| **{mine['round2_cpu_per_store_ms']:.1f} ms** | {them} | {ratio} |")  # fmt: skip
    d = out["daemon"]
    rows.append(f"| daemon RSS idle / peak beside a 10,000-note pass | {d['daemon_idle_rss_mb']} / {d['daemon_peak_rss_mb']} MB | | |")
    before, after = out["load_before"], out["load_after"]
    rows.append(f"\nload average (1, 5, 15 min; {os.cpu_count()} cores): before {before[0]} {before[1]} {before[2]}, after {after[0]} {after[1]} {after[2]}")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
