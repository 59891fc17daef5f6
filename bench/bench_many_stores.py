"""The daemon over many small stores: one round of passes, with pooled workers and without;
or (``--steady``) the pooled daemon over two rounds, the second over unchanged stores.

    .venv/bin/python bench/bench_many_stores.py [--stores 200] [--notes 100] [--runs 1]
    .venv/bin/python bench/bench_many_stores.py --steady --stores 1000 --every 240 [--tree DIR] [--no-watch] [--json OUT]

Writes ``--stores`` stores of ``--notes`` small notes each (no duplicates: every pass
proposes nothing), then for each setting starts a real ``dreamd run`` with every store
``every = "1h"`` (so each store gets exactly one pass, at start), waits until every pass is
recorded, stops the daemon and reports: the round's wall time, the CPU seconds of the
daemon and all its workers (user + system, from ``wait4`` of the daemon, which reaps its
workers), how many worker processes it started, and the daemon's own RSS once idle.

Settings: ``--worker-passes 1`` (a new worker per pass, as before the pool) against the
default pool. The two settings alternate when ``--runs`` > 1; medians are printed.

``--steady``: every store ``every = "<--every>s"``, the default pool; round 1 is every
store's first pass, round 2 (one period later) finds every store unchanged. For each round:
its CPU seconds (the daemon, the workers it reaped and the ones still alive, from
/proc), and for round 2 how late each pass started against the time its store was due
(the first pass's start plus the period: with no jitter every store is due then); the daemon's RSS is sampled throughout. The
CPU of round 2 is what an hourly schedule costs per hour when nothing changes.

``--tree DIR`` runs the daemon of another checkout (``python -m daemon`` there, as
``bench_noop.py --baseline`` does); ``--no-watch`` runs it without its watches, so that every
skipped pass walks its store; ``--json`` keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import load  # noqa: E402

DREAMD = [sys.executable, "-m", "daemon"]
THIS = Path(__file__).resolve().parents[1]
SETTINGS = {"a new worker per pass": ["--worker-passes", "1"], "pooled workers (default)": []}


def write_stores(base: Path, stores: int, notes: int, every: str = "1h") -> Path:
    lines = []
    for s in range(stores):
        root = base / f"store-{s:04d}"
        root.mkdir(parents=True)
        (root / "MEMORY.md").write_text("# Memory\n")
        for n in range(notes):
            (root / f"note-{n:03d}.md").write_text(f"# Note {n} of store {s}\n\nFact {s * 1000 + n}: value {n * 7 % 13} for key k{s}-{n}.\n")
        lines += ["[[stores]]", f'name = "s{s:04d}"', f'path = "{root}"', 'preset = "generic"', f'every = "{every}"', 'jitter = "0s"']
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


def own_cpu_seconds(pid: int) -> float:
    """User + system seconds of ``pid`` itself (not its workers)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system seconds of ``pid``, the children it reaped, and its live children."""
    tick = os.sysconf("SC_CLK_TCK")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = sum(int(fields[i]) for i in (11, 12, 13, 14)) / tick  # utime stime cutime cstime
    for child in Path("/proc").iterdir():
        if child.name.isdigit():
            try:
                own = (child / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(own[1]) == pid:  # its parent
                total += (int(own[11]) + int(own[12])) / tick
    return total


def settled_cpu_seconds(pid: int, quiet: float = 0.01, every: float = 0.5, longest: float = 30.0) -> float:
    """``cpu_seconds`` once the daemon and its workers have stopped working: a round is done
    when its passes are recorded, but the workers that ran them still close their databases
    and wait for the next job, and that tail belongs to the round, not to the next one.
    Sampled every ``every`` seconds until two samples differ by less than ``quiet`` seconds
    (or ``longest`` seconds have gone by)."""
    last, waited = cpu_seconds(pid), 0.0
    while waited < longest:
        time.sleep(every)
        waited += every
        now = cpu_seconds(pid)
        if now - last < quiet:
            return now
        last = now
    return last


def steady(config: Path, stores: int, every: int, workdir: Path, tree: Path = THIS, extra: tuple[str, ...] = ()) -> dict[str, float]:
    db = workdir / "state.db"
    for leftover in workdir.glob("state.db*"):
        leftover.unlink()
    env = {**os.environ, "DREAMD_DB": f"sqlite:///{db}", "XDG_STATE_HOME": str(workdir / "xdg"), "PYTHONPATH": str(tree)}
    command = [*DREAMD, "--config", str(config), "run", "--max-parallel", "2", *extra]
    daemon = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=(workdir / "daemon.log").open("w"), env=env, cwd=tree)
    peak = 0.0
    marks, own = [], []
    for target in (stores, 2 * stores):
        while finished(db) < target:
            if daemon.poll() is not None:
                raise SystemExit(f"the daemon exited with {daemon.returncode}; see {workdir / 'daemon.log'}")
            peak = max(peak, rss_mb(daemon.pid))
            time.sleep(0.2)
        marks.append(settled_cpu_seconds(daemon.pid))
        own.append(own_cpu_seconds(daemon.pid))
    idle = rss_mb(daemon.pid)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT store_id, started_at, status, runner FROM passes ORDER BY store_id, id").fetchall()
    starts: dict[int, list[float]] = {}
    statuses = {}
    runners: dict[int, list[str]] = {}
    for store_id, started, status, runner in rows:
        starts.setdefault(store_id, []).append(_seconds(started))
        statuses.setdefault(store_id, []).append(status)
        runners.setdefault(store_id, []).append(runner or "")
    first = min(s[0] for s in starts.values())  # every store is due at start (jitter 0), then every period
    late = sorted(s[1] - (first + every) for s in starts.values() if len(s) > 1)  # negative: early
    skipped = sum(st[1] == "skipped" for st in statuses.values() if len(st) > 1)
    by_daemon = sum(r[1].endswith(f":{daemon.pid}") for r in runners.values() if len(r) > 1)  # skipped in the daemon, no worker
    return {"round1_cpu": marks[0], "round2_cpu": marks[1] - marks[0], "round2_daemon_cpu": own[1] - own[0], "peak_rss": peak, "idle_rss": idle, "late_max": late[-1] if late else -1,
            "late_p95": late[int(len(late) * 0.95) - 1] if late else -1, "early_max": -late[0] if late else -1, "second_passes": len(late), "skipped": skipped, "skipped_by_daemon": by_daemon}  # fmt: skip


def _seconds(text: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--notes", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--steady", action="store_true", help="two rounds of the pooled daemon, the second over unchanged stores")
    parser.add_argument("--every", type=int, default=240, help="--steady: each store's period in seconds (longer than a round)")
    parser.add_argument("--tree", type=Path, default=THIS, help="--steady: the checkout whose daemon runs (default: this one)")
    parser.add_argument("--no-watch", action="store_true", help="--steady: run the daemon with --no-watch")
    parser.add_argument("--json", type=Path, metavar="OUT", help="--steady: write the figures as JSON")
    options = parser.parse_args()
    load("before")
    try:
        _run(options)
    finally:
        load("after")


def _run(options: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        config = write_stores(base / "stores", options.stores, options.notes, f"{options.every}s" if options.steady else "1h")
        if options.steady:
            got = steady(config, options.stores, options.every, base, options.tree.resolve(), ("--no-watch",) if options.no_watch else ())
            got["round2_cpu_per_store_ms"] = 1000 * got["round2_cpu"] / options.stores
            if options.json:
                options.json.write_text(json.dumps(got, indent=2) + "\n")
            print(f"{options.stores} stores of {options.notes} notes, every {options.every} s, pooled workers, --max-parallel 2")
            print(f"round 1 (first passes): {got['round1_cpu']:.1f} s CPU; round 2 (unchanged, {got['skipped']:.0f} of {got['second_passes']:.0f} skipped, {got['skipped_by_daemon']:.0f} by the daemon itself): {got['round2_cpu']:.1f} s CPU"
                  f" ({got['round2_cpu_per_store_ms']:.1f} ms a store, of which the daemon itself {1000 * got['round2_daemon_cpu'] / options.stores:.1f} ms)")  # fmt: skip
            print(f"lateness of round 2 against each store's due time: p95 {got['late_p95']:.1f} s, max {got['late_max']:.1f} s (earliest {got['early_max']:.1f} s early)")
            print(f"daemon RSS: peak {got['peak_rss']:.1f} MB, idle {got['idle_rss']:.1f} MB")
            return
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
