"""The daemon over many small stores: one round of passes, with pooled workers and without.

    .venv/bin/python bench/bench_many_stores.py [--stores 200] [--notes 100] [--runs 1]

Writes ``--stores`` stores of ``--notes`` small notes each (no duplicates: every pass
proposes nothing), then for each setting starts a real ``dreamd run`` with every store
``every = "1h"`` (so each store gets exactly one pass, at start), waits until every pass is
recorded, stops the daemon and reports: the round's wall time, the CPU seconds of the
daemon and all its workers (user + system, from ``wait4`` of the daemon, which reaps its
workers), how many worker processes it started, and the daemon's own RSS once idle.

Settings: ``--worker-passes 1`` (a new worker per pass, as before the pool) against the
default pool. The two settings alternate when ``--runs`` > 1; medians are printed.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DREAMD = [sys.executable, "-m", "daemon"]
SETTINGS = {"a new worker per pass": ["--worker-passes", "1"], "pooled workers (default)": []}


def write_stores(base: Path, stores: int, notes: int) -> Path:
    lines = []
    for s in range(stores):
        root = base / f"store-{s:04d}"
        root.mkdir(parents=True)
        (root / "MEMORY.md").write_text("# Memory\n")
        for n in range(notes):
            (root / f"note-{n:03d}.md").write_text(f"# Note {n} of store {s}\n\nFact {s * 1000 + n}: value {n * 7 % 13} for key k{s}-{n}.\n")
        lines += ["[[stores]]", f'name = "s{s:04d}"', f'path = "{root}"', 'preset = "generic"', 'every = "1h"', 'jitter = "0s"']
    config = base / "config.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def finished(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT count(*) FROM passes WHERE status IN ('completed', 'skipped', 'failed')").fetchone()[0]
    except sqlite3.Error:
        return 0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def one_round(config: Path, stores: int, extra: list[str], workdir: Path) -> dict[str, float]:
    db = workdir / "state.db"
    for leftover in workdir.glob("state.db*"):
        leftover.unlink()
    env = {**os.environ, "DREAMD_DB": f"sqlite:///{db}", "XDG_STATE_HOME": str(workdir / "xdg")}
    started = time.perf_counter()
    daemon = subprocess.Popen([*DREAMD, "--config", str(config), "run", "--max-parallel", "2", *extra], stdout=subprocess.DEVNULL, stderr=(workdir / "daemon.log").open("w"), env=env)
    while finished(db) < stores:
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with {daemon.returncode}; see {workdir / 'daemon.log'}")
        time.sleep(0.05)
    wall = time.perf_counter() - started
    time.sleep(1.0)
    idle_rss = rss_mb(daemon.pid)
    log = (workdir / "daemon.log").read_text()
    workers = len({line.split('"worker_pid": ')[1].split(",")[0].split("}")[0] for line in log.splitlines() if '"pass.started"' in line})
    daemon.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(daemon.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime  # the daemon and every worker it reaped
    return {"wall": wall, "cpu": cpu, "workers": workers, "idle_rss": idle_rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--notes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        config = write_stores(base / "stores", options.stores, options.notes)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
        for _ in range(options.runs):
            for name, extra in SETTINGS.items():
                results[name].append(one_round(config, options.stores, extra, base))
        print(f"{options.stores} stores of {options.notes} notes, one round of passes, --max-parallel 2, median of {options.runs}")
        for name, rounds in results.items():
            med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
            print(f"{name:28} wall {med['wall']:6.1f} s  cpu {med['cpu']:6.1f} s  workers {med['workers']:5.0f}  daemon idle RSS {med['idle_rss']:5.1f} MB")


if __name__ == "__main__":
    main()
