"""The no-op pass as users meet it: ``dreamd pass`` as a whole process, paired with b3sum.

    .venv/bin/python bench/bench_noop.py [--sizes 1000,10000,100000] [--pairs 7] [--baseline DIR] [--work DIR] [--json out.json]

For each size, a generated ``deepcode`` store (``generate.py``, no planted duplicates: what a
pass would propose does not change what a pass that proposes nothing costs) gets a first
pass, and a second one two seconds later so that no file is still racily clean (see
daemon/stores/statcache.py), as for a store whose notes were last edited a while ago.
Then ``dreamd pass`` on the unchanged store and ``b3sum`` over the same files (``find
STORE -type f -print0 | xargs -0 b3sum``) run in turn, A B A B …, each a new process
timed from outside; the medians of each and the median of the per-pair ratios are
reported, and every pass must say it was skipped. On the 10,000-note store (when it is
among the sizes), 1% of the notes are then edited and one pass is timed, with the growth
of the state database (after a WAL checkpoint) and the manifest rows that pass wrote.

Each tree's modules are byte-compiled first (``compileall``), as installing a package does:
an editable install under ``PYTHONDONTWRITEBYTECODE`` would otherwise compile dreamd's
modules anew in every run (~0.07 s), a cost no user's install has.

``--baseline DIR`` names a checkout of another revision (``git worktree add DIR REV``): its
passes run over the same store with a database of its own, in turn with this one's and
b3sum's (this, baseline, b3sum, …), and its medians and ratio are reported beside them.

``--work DIR`` keeps the stores and databases there, so a second run skips generating
and first passes. Requires ``b3sum`` on PATH (Debian: ``apt-get install b3sum``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

THIS = HERE.parent
SKIPPED = "unchanged since the last pass"
CHANGED_AT = 10_000  # the store size the 1%-changed pass runs on, when it is among --sizes
_IMPORTED = re.compile(r"^import time:\s+-?\d+ \|\s+(\d+) \| ( *)(\S+)$", re.M)


def _env(tree: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")}
    return env | {"PYTHONPATH": str(tree)} if tree else env


def pass_args(store: Path, db: Path) -> list[str]:
    """``dreamd pass`` of the tree a run gets as its working folder (``python -m daemon``
    imports the ``daemon`` there, this checkout's or the baseline's)."""
    return [sys.executable, "-m", "daemon", "--db", f"sqlite:///{db}", "pass", "--store", str(store), "--preset", "deepcode", "--summary"]


def compile_tree(tree: Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "daemon")], check=True, stdout=subprocess.DEVNULL)


def b3sum_args(store: Path) -> list[str]:
    return ["sh", "-c", f"find '{store.resolve()}' -type f -print0 | xargs -0 b3sum > /dev/null"]


def timed(args: list[str], tree: Path | None = None) -> tuple[float, float, str]:
    """Wall and CPU seconds (user + system, its children included) of one whole process,
    run in ``tree`` (a dreamd checkout), and what it printed. CPU time is the steadier
    figure on a shared machine."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(tree), cwd=tree)
    assert proc.stdout is not None
    printed = proc.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {printed.strip()}")
    return wall, usage.ru_utime + usage.ru_stime, printed


def prepare(work: Path, notes: int, tree: Path, label: str = "") -> tuple[Path, Path]:
    """A store of ``notes`` notes and ``tree``'s database after two passes (reused when kept)."""
    store, db = work / f"store-{notes}", work / f"state{label}-{notes}.db"
    if not store.exists():
        generate_store(store, notes, seed=42, exact_rate=0, near_rate=0)
        for old in work.glob(f"state*-{notes}.db*"):
            old.unlink()
    if not db.exists():
        first, _, _ = timed(pass_args(store, db), tree)
        print(f"  first pass over {notes} notes{label and ' (' + label.strip('-') + ')'}: {first:.1f} s", flush=True)
        time.sleep(2.1)  # past statcache.RACY_NS: the next pass records every file as settled
    timed(pass_args(store, db), tree)
    return store, db


def paired(store: Path, runs_of: dict[str, tuple[Path, Path]], pairs: int) -> dict[str, Any]:
    """``pairs`` rounds of (no-op pass of each tree, b3sum), alternated after one warm-up of
    each; ``runs_of`` maps a label ("this", "base") to its (tree, database)."""
    for tree, db in runs_of.values():
        timed(pass_args(store, db), tree)
    timed(b3sum_args(store))
    runs: dict[str, list[float]] = {"b3sum_s": [], "b3sum_cpu_s": []}
    for _ in range(pairs):
        for label, (tree, db) in runs_of.items():
            wall, cpu, out = timed(pass_args(store, db), tree)
            if SKIPPED not in out:
                raise SystemExit(f"the pass over {store} ({label}) was not skipped: {out.strip()}")
            key = "pass" if label == "this" else label
            runs.setdefault(f"{key}_s", []).append(wall)
            runs.setdefault(f"{key}_cpu_s", []).append(cpu)
        wall, cpu, _ = timed(b3sum_args(store))
        runs["b3sum_s"].append(wall)
        runs["b3sum_cpu_s"].append(cpu)
    out: dict[str, Any] = {k: statistics.median(v) for k, v in runs.items()}
    for key in ("pass", *(label for label in runs_of if label != "this")):
        name = "ratio" if key == "pass" else f"{key}_ratio"
        out[name] = statistics.median(a / b for a, b in zip(runs[f"{key}_s"], runs["b3sum_s"], strict=True))
    return {**out, "runs": runs}


def imports(store: Path, db: Path) -> dict[str, float]:
    """Seconds of import in one no-op pass (``python -X importtime``): the total, and each
    third-party package by its cumulative time (it is imported once, wherever from)."""
    args = [sys.executable, "-X", "importtime", *pass_args(store, db)[1:]]
    done = subprocess.run(args, capture_output=True, text=True, env=_env(THIS), cwd=THIS, check=True)
    found = _IMPORTED.findall(done.stderr)
    packages = {module: int(cumulative) / 1e6 for cumulative, _, module in found if "." not in module and module not in sys.stdlib_module_names}
    total = sum(int(cumulative) for cumulative, indent, _ in found if not indent) / 1e6
    return {"total": total, **dict(sorted(packages.items(), key=lambda kv: -kv[1])[:6])}


def database_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]


def changed_pass(store: Path, db: Path, share: float) -> dict[str, Any]:
    """Edit ``share`` of the notes (a line appended to every 100th), then time one pass."""
    notes = sorted(p for p in store.iterdir() if p.name != "MEMORY.md")
    edited = notes[:: round(1 / share)]
    for path in edited:
        with path.open("a", encoding="utf-8") as f:
            f.write("\nEdited for the benchmark.\n")
    before = database_bytes(db)
    with sqlite3.connect(db) as conn:
        rows_before = conn.execute("SELECT count(*) FROM manifest_entries").fetchone()[0]
    seconds, cpu, out = timed(pass_args(store, db), THIS)
    growth = database_bytes(db) - before
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT count(*) FROM manifest_entries").fetchone()[0] - rows_before
    return {"edited": len(edited), "pass_s": seconds, "pass_cpu_s": cpu, "summary": out.strip(), "db_growth_bytes": growth,
            "growth_per_edited_note_bytes": growth / len(edited), "manifest_rows_added": rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="note counts, comma-separated")
    parser.add_argument("--pairs", type=int, default=7, help="alternated (pass, b3sum) pairs per size")
    parser.add_argument("--baseline", type=Path, help="a checkout of another revision, timed in turn with this one")
    parser.add_argument("--work", type=Path, help="keep stores and databases here (reused next time)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every figure as JSON")
    args = parser.parse_args()
    if not shutil.which("b3sum"):
        raise SystemExit("b3sum is not on PATH (Debian: apt-get install b3sum)")
    sizes = [int(s) for s in args.sizes.split(",")]
    out: dict[str, Any] = {"python": sys.version.split()[0], "sizes": {}, "load_before": load("before")}
    with tempfile.TemporaryDirectory(prefix="dreamd-noop-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        trees = {"this": THIS, **({"base": args.baseline.resolve()} if args.baseline else {})}
        for tree in trees.values():
            compile_tree(tree)
        for notes in sizes:
            print(f"{notes} notes:", flush=True)
            runs_of = {label: (tree, prepare(work, notes, tree, "" if label == "this" else f"-{label}")[1]) for label, tree in trees.items()}
            store = work / f"store-{notes}"
            figures = paired(store, runs_of, args.pairs)
            figures["imports_s"] = imports(store, runs_of["this"][1])
            out["sizes"][notes] = figures
            print(f"  no-op pass {figures['pass_s']:.3f} s, b3sum {figures['b3sum_s']:.3f} s: {figures['ratio']:.1f}x (medians of {args.pairs} pairs)", flush=True)
        if CHANGED_AT in sizes:
            store, db = work / f"store-{CHANGED_AT}", work / f"state-{CHANGED_AT}.db"
            out["changed_1pct"] = {"notes": CHANGED_AT, **changed_pass(store, db, 0.01)}  # a kept store keeps these edits
    out["load_after"] = load("after")
    report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


def report(out: dict[str, Any]) -> None:
    print("\nwhole process, page cache warm; wall (CPU) medians:")
    for notes, f in out["sizes"].items():
        top = ", ".join(f"{name} {seconds:.3f}" for name, seconds in list(f["imports_s"].items())[:5])
        print(f"  {notes:>7} notes: no-op pass {f['pass_s']:.3f} s ({f['pass_cpu_s']:.3f}) | b3sum {f['b3sum_s']:.3f} s ({f['b3sum_cpu_s']:.3f}) | "
              f"{f['ratio']:.1f}x wall, {f['pass_cpu_s'] / f['b3sum_cpu_s']:.1f}x CPU  (imports: {top} s)")  # fmt: skip
        if "base_s" in f:
            print(f"  {'':>7}        baseline {f['base_s']:.3f} s ({f['base_cpu_s']:.3f}): {f['base_ratio']:.1f}x b3sum wall; this / baseline {f['pass_s'] / f['base_s']:.2f}")
    if "changed_1pct" not in out:
        return
    c = out["changed_1pct"]
    print(f"  pass after {c['edited']} of {c['notes']} notes changed: {c['pass_s']:.2f} s ({c['pass_cpu_s']:.2f}); database +{c['db_growth_bytes'] / 1e3:.0f} KB "
          f"({c['growth_per_edited_note_bytes'] / 1e3:.1f} KB per changed note, {c['manifest_rows_added']} manifest rows)")  # fmt: skip


if __name__ == "__main__":
    main()
