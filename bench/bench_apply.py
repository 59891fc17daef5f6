"""Applying accepted proposals as users meet it: ``dreamd apply`` as a whole process.

    .venv/bin/python bench/bench_apply.py [--notes 10000] [--counts 100,1000] [--pairs 3]
        [--baseline DIR] [--work DIR] [--json out.json]

A generated ``deepcode`` store (``generate.py``, with enough planted duplicates for the
largest count) gets a first pass; the first N of its merge proposals are accepted. Each
timed run starts from a fresh copy of that store and database (copied, then passed over so
the stat cache knows the copy, both untimed) and runs ``dreamd apply`` once, a new process
timed from outside; it must apply all N (each merge also edits the store's index, so every
apply after the first rebases its index edit). Reported: medians of wall and CPU seconds,
milliseconds per proposal (the whole process's time divided by N: start-up included), and
the state database's growth.

``--baseline DIR`` names a checkout of another revision of dreamd (e.g. ``git worktree add
/tmp/base <commit>``), run with this interpreter as ``python -m daemon`` from that folder:
it prepares its own store and database the same way, and the two are timed in turn,
A B A B …, with the ratio taken pair by pair (the machine is shared; pairing keeps the
ratio honest). ``--work DIR`` keeps the prepared stores to reuse them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import generate_store  # noqa: E402
from machine import load  # noqa: E402


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")}
    return env | {"PYTHONPATH": str(tree)}


def dreamd(tree: Path, db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "daemon", "--db", f"sqlite:///{db}", *args]


def run(tree: Path, args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system) of one whole process, and what it printed."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, env=_env(tree), cwd=tree)
        assert proc.stdout is not None
        printed = proc.stdout.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 6):  # 6: some went stale (reported, not an error of the benchmark)
            err.seek(0)
            raise SystemExit(f"{' '.join(args[:6])}... failed ({code}): {err.read().decode('utf-8', 'replace').strip()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, printed


def prepare(tree: Path, work: Path, notes: int, count: int, label: str) -> tuple[Path, Path, dict[str, Any]]:
    """A store and its database after a first pass (nothing accepted yet), kept as the
    template each count copies; ``merges`` in the returned facts are the merge ids in order."""
    store, db = work / f"{label}-store", work / f"{label}-state.db"
    meta = work / f"{label}-meta.json"
    if meta.exists():
        return store, db, json.loads(meta.read_text())
    shutil.rmtree(store, ignore_errors=True)
    db.unlink(missing_ok=True)
    share = min(0.45, count / notes * 1.3)
    generate_store(store, notes, seed=42, exact_rate=share / 2, near_rate=share / 2)
    wall, cpu, out = run(tree, dreamd(tree, db, "pass", "--store", str(store), "--preset", "deepcode", "--json"))
    report = json.loads(out)
    merges = [p["id"] for p in report["proposals"] if p["state"] == "pending" and p["kind"] == "merge"]
    if len(merges) < count:
        raise SystemExit(f"{label}: only {len(merges)} merges proposed, {count} wanted")
    info = {"first_pass_s": wall, "first_pass_cpu_s": cpu, "proposals": len(report["proposals"]), "merges": merges}
    meta.write_text(json.dumps(info))
    return store, db, info


def fresh(store: Path, db: Path, into: Path) -> tuple[Path, Path]:
    """A copy of the template to apply in (mtimes kept: the stat cache sees what the pass saw)."""
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    shutil.copytree(store, into / "store", copy_function=shutil.copy2)
    shutil.copy2(db, into / "state.db")
    with sqlite3.connect(into / "state.db") as conn:  # the store is registered at its path: point it at the copy
        conn.execute("UPDATE stores SET name = ?, root = ?, root_identity = NULL", (str(into / "store"), str((into / "store").resolve())))
    return into / "store", into / "state.db"


def database_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


def one(tree: Path, template: tuple[Path, Path], into: Path, count: int) -> dict[str, float]:
    store, db = fresh(*template, into)
    # untimed: a pass over the copy, as the pass that found the proposals would have left the
    # stat cache (a copy has new inodes; a store that was not copied keeps them). It waits
    # first until the copy's files are older than the stat cache's racy window: a copy's
    # ctimes are now, and a store people apply proposals to was not all written a moment ago
    time.sleep(2.1)
    run(tree, dreamd(tree, db, "pass", "--store", str(store), "--preset", "deepcode", "--summary"))
    before = database_bytes(db)
    wall, cpu, out = run(tree, dreamd(tree, db, "apply", "--json"))
    applied = sum(r["state"] == "applied" for r in json.loads(out))
    if applied != count:
        raise SystemExit(f"{tree}: applied {applied} of {count}")
    return {"wall_s": wall, "cpu_s": cpu, "db_growth_bytes": database_bytes(db) - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--counts", default="100,1000", help="accepted proposals applied per run, comma-separated")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision, timed in turn with this one")
    parser.add_argument("--baseline-counts", default="100", help="the counts the baseline runs (it may be slow)")
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    base_counts = {int(c) for c in args.baseline_counts.split(",")} if args.baseline else set()
    this = HERE.parent
    out: dict[str, Any] = {"notes": args.notes, "counts": {}, "load_before": load("before")}
    with tempfile.TemporaryDirectory(prefix="dreamd-apply-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        top = max(counts)
        *template, info = prepare(this, work, args.notes, top, "this")
        out["first_pass"] = {k: v for k, v in info.items() if k != "merges"}
        base = prepare(args.baseline, work, args.notes, top, "base") if args.baseline else None
        for count in counts:
            this_t = _accepted_only(this, (template[0], template[1]), work / "t-this", info["merges"], count)
            base_t = _accepted_only(args.baseline, (base[0], base[1]), work / "t-base", base[2]["merges"], count) if base and count in base_counts else None
            rows: dict[str, list[dict[str, float]]] = {"this": [], "base": []}
            for _ in range(args.pairs):
                rows["this"].append(one(this, this_t, work / "run", count))
                if base_t:
                    rows["base"].append(one(args.baseline, base_t, work / "run", count))
            out["counts"][count] = _summary(rows, count)
            print(_line(count, out["counts"][count]), flush=True)
    out["load_after"] = load("after")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


def _accepted_only(tree: Path, template: tuple[Path, Path], into: Path, merges: list[int], count: int) -> tuple[Path, Path]:
    """A copy of the template with its first ``count`` merges accepted (by ``dreamd accept``)."""
    store, db = fresh(*template, into)
    for i in range(0, count, 500):
        run(tree, dreamd(tree, db, "accept", *map(str, merges[i : min(i + 500, count)])))
    return store, db


def _summary(rows: dict[str, list[dict[str, float]]], count: int) -> dict[str, Any]:
    med = lambda side, key: statistics.median(r[key] for r in rows[side])  # noqa: E731
    got: dict[str, Any] = {"this": {k: med("this", k) for k in ("wall_s", "cpu_s", "db_growth_bytes")}}
    got["this"]["ms_per_proposal"] = got["this"]["wall_s"] / count * 1000
    if rows["base"]:
        got["base"] = {k: med("base", k) for k in ("wall_s", "cpu_s", "db_growth_bytes")}
        got["base"]["ms_per_proposal"] = got["base"]["wall_s"] / count * 1000
        got["ratio"] = statistics.median(a["wall_s"] / b["wall_s"] for a, b in zip(rows["this"], rows["base"], strict=True))
    return got | {"runs": rows}


def _line(count: int, s: dict[str, Any]) -> str:
    t = s["this"]
    line = f"apply {count}: {t['wall_s']:.2f} s ({t['cpu_s']:.2f} CPU), {t['ms_per_proposal']:.1f} ms per proposal, database +{t['db_growth_bytes'] / 1e6:.2f} MB"
    if "base" in s:
        b = s["base"]
        line += f" | baseline {b['wall_s']:.2f} s ({b['cpu_s']:.2f} CPU), {b['ms_per_proposal']:.1f} ms per proposal, +{b['db_growth_bytes'] / 1e6:.2f} MB | ratio {s['ratio']:.3f}"
    return line


if __name__ == "__main__":
    main()
