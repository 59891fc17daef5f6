"""A real small model served on 127.0.0.1 from ../shared/local-llm, for end-to-end tests.

Slow (install ~1 min once, then seconds to start, tens of seconds per call): marked
``slow``; ``.ci/run`` runs them. Skipped with a clear message where ../shared/local-llm is
absent. The server is stopped at the end of the session whatever happens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCAL_LLM = Path(__file__).resolve().parents[2].parent / "shared" / "local-llm"
INSTALL_DIR = Path(os.environ.get("DREAMD_LOCAL_LLM_DIR", "/tmp/dreamd-llm"))
ALIAS = "local-qwen"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, server: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the local model server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:  # noqa: S310 - loopback only
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the local model server did not become healthy within {seconds:.0f} s")


@pytest.fixture(scope="session")
def local_model() -> Iterator[str]:
    """The api_base of a running local model (``openai/local-qwen``)."""
    if not (LOCAL_LLM / "install.sh").is_file():
        pytest.skip(f"no local model: {LOCAL_LLM} is absent (it ships beside this repository in CI)")
    install = subprocess.run(["bash", str(LOCAL_LLM / "install.sh"), str(INSTALL_DIR)], capture_output=True, text=True, timeout=900)
    if install.returncode != 0:
        pytest.fail(f"installing the local model failed: {install.stderr.strip().splitlines()[-1:]}")
    port = _free_port()
    server = subprocess.Popen(
        [str(INSTALL_DIR / "venv" / "bin" / "python"), str(LOCAL_LLM / "serve.py"), str(INSTALL_DIR / "model.gguf"), "--port", str(port), "--alias", ALIAS],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(base, server, 120)
        yield f"{base}/v1"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
