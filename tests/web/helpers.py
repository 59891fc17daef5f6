"""The store the report and web tests review, a real pass over it, and ``dreamd serve`` as a process."""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DREAMD = str(Path(sys.executable).with_name("dreamd"))

BUILD = "---\nname: Build\ndescription: how to build\ntype: reference\n---\n\nBuild with `make build`; it writes the binary to `out/app`.\n"
HOSTILE = '---\nname: <script>alert(1)</script>\ndescription: a hostile note\ntype: reference\n---\n\nRun <script>alert("body")</script> before & after.\n'
STORE = {
    "MEMORY.md": (
        "# Project memory\n\n"
        "- [Build](build.md) — how to build\n"
        "- [Build again](build-again.md) — how to build\n"
        "- [Hostile copy](hostile-copy.md) — a hostile note\n"
    ),
    "build.md": BUILD,
    "build-again.md": BUILD,
    "<script>x.md": HOSTILE,
    "hostile-copy.md": HOSTILE,
}


def pass_over(app: object, root: Path) -> None:
    from daemon.config import adhoc_store
    from daemon.service.passes.run import run_pass

    run_pass(app, adhoc_store(root, "deepcode"))


@dataclass
class Served:
    url: str  # what the server printed: http://127.0.0.1:PORT/?token=...
    base: str  # http://127.0.0.1:PORT
    port: int
    process: subprocess.Popen[str]


@contextmanager
def serving(db_url: str, log: Path, port: int = 0, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``dreamd serve`` as a subprocess until the block ends (then SIGTERM), with the URL it
    printed; ``env``: its environment (default: the test's own)."""
    with open(log, "a") as errors:
        process = subprocess.Popen([DREAMD, "--db", db_url, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    try:
        printed = _first_line(process, timeout=20)
        found = re.fullmatch(r"dreamd serve: open (http://127\.0\.0\.1:(\d+))/\?token=[\w-]+\n", printed)
        assert found, (printed, log.read_text())
        yield Served(printed.split("open ", 1)[1].strip(), found.group(1), int(found.group(2)), process)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        process.stdout.close()  # type: ignore[union-attr]


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        if not selector.select(timeout):
            raise AssertionError(f"dreamd serve printed nothing in {timeout}s")
    return process.stdout.readline()  # type: ignore[union-attr]
