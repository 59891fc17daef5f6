"""Benchmark the daemon's memory: idle RSS between passes, and what the workers cost.

    .venv/bin/python bench/bench_daemon.py [--notes 2000] [--json out.json]

Starts a real ``dreamd run`` on three stores in a temp dir, each with ``every = "1h"`` (so
each runs exactly one pass, at start):

- ``big``: a generated ``deepcode`` store (``generate.py``, --notes notes);
- ``example``: a copy of examples/deepcode-memory;
- ``llm``: another copy, with the LLM planner pointed at a local stub of an OpenAI-compatible
  server that answers every request with an empty proposal list, so its worker imports
  litellm and makes real HTTP calls.

While the passes run, the daemon's and its workers' RSS are sampled every 20 ms from
/proc. Once all three passes are recorded, the daemon's RSS is read for 5 s: that is the
idle figure the issue bounds (≤ 80 MB). VmHWM is the daemon's own peak.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from generate import generate_store  # noqa: E402

EMPTY_REPLY = {
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "stub",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": json.dumps({"v": 1, "proposals": []})}}],
    "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
}  # fmt: skip


class StubModel(http.server.BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        StubModel.calls += 1
        body = json.dumps(EMPTY_REPLY).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    """Workers are started by the daemon's job threads: each thread's task lists its own."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StubModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="dreamd-bench-daemon-") as tmp:
        base = Path(tmp)
        generate_store(base / "big", args.notes)
        for name in ("example", "llm"):
            shutil.copytree(REPO / "examples" / "deepcode-memory", base / name)
        config = base / "config.toml"
        config.write_text(
            f'db = "sqlite:///{base / "state.db"}"\n'
            + "".join(f'[[stores]]\nname = "{n}"\npath = "{base / n}"\npreset = "deepcode"\nevery = "1h"\njitter = "0s"\n' for n in ("big", "example"))
            + f'[[stores]]\nname = "llm"\npath = "{base / "llm"}"\npreset = "deepcode"\nevery = "1h"\njitter = "0s"\n'
            + f'[stores.llm]\nmodel = "openai/stub"\napi_base = "http://127.0.0.1:{server.server_port}/v1"\napi_key_env = "BENCH_STUB_KEY"\n'
        )
        env = {**os.environ, "BENCH_STUB_KEY": "not-a-secret", "XDG_STATE_HOME": str(base / "xdg"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        started = time.monotonic()
        daemon = subprocess.Popen([sys.executable, "-m", "daemon", "--config", str(config), "run"], stderr=subprocess.PIPE, text=True, env=env)
        finished: list[dict] = []
        lines: list[str] = []

        def read_log() -> None:
            for line in daemon.stderr:
                lines.append(line)
                if '"pass.finished"' in line:
                    finished.append(json.loads(line))

        threading.Thread(target=read_log, daemon=True).start()
        worker_peak: dict[int, float] = {}
        daemon_during = 0.0
        while len(finished) < 3 and time.monotonic() - started < 600:
            daemon_during = max(daemon_during, rss_mb(daemon.pid) or 0)
            for child in children(daemon.pid):
                worker_peak[child] = max(worker_peak.get(child, 0), rss_mb(child) or 0)
            time.sleep(0.02)
        passes_s = time.monotonic() - started
        idle = []
        for _ in range(25):
            idle.append(rss_mb(daemon.pid) or 0)
            time.sleep(0.2)
        hwm = rss_mb(daemon.pid, "VmHWM")
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(60)
    server.shutdown()
    by_store = {f["store"]: f for f in finished}
    result = {
        "notes_big_store": args.notes,
        "passes": {name: {k: by_store[name].get(k) for k in ("status", "pending", "notes")} for name in sorted(by_store)},
        "first_three_passes_s": round(passes_s, 1),
        "model_calls": StubModel.calls,
        "daemon_idle_rss_mb": round(max(idle), 1),
        "daemon_peak_rss_mb": round(hwm or 0, 1),
        "workers_peak_rss_mb": sorted(round(v, 1) for v in worker_peak.values()),
        "exit_code": code,
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if code != 0 or len(finished) < 3:
        print("".join(lines[-20:]), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
