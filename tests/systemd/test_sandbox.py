"""dreamd works under the system call filter and W^X memory rule of its units.

``seccomp_sandbox.py`` installs the seccomp filters that dreamd.service's
``SystemCallFilter=``, ``MemoryDenyWriteExecute=`` and ``RestrictAddressFamilies=`` lines
make systemd install, then runs a command: a real dry-run pass (numpy, BLAKE3, SQLAlchemy,
git diffs) and a probe of what the daemon and its workers do. Controls show the filters
really are on. Needs systemd-analyze (for the system call groups) and libseccomp, which
systemd depends on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_units import DAEMON, PASS, REPO, systemd_analyze

SANDBOX = Path(__file__).with_name("seccomp_sandbox.py")
EXAMPLE = REPO / "examples" / "deepcode-memory"

PROBE = '''
import ctypes, multiprocessing, socket, sqlite3, ssl, subprocess, sys
import numpy

def square(x):
    return x * x

if __name__ == "__main__":
    a = numpy.random.default_rng(0).random((200, 200))
    assert (a @ a).shape == (200, 200)                            # BLAS, its threads
    assert ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x + 1)(41) == 42  # libffi closure
    sqlite3.connect(":memory:").execute("select 1")
    ssl.create_default_context()
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    subprocess.run(["git", "--version"], check=True, capture_output=True)
    subprocess.run([sys.executable, "-c", "import numpy"], check=True)  # a worker: same python
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert pool.map(square, [2, 3]) == [4, 9]
    print("probe ok")
'''


def sandboxed(unit: Path, *command: str) -> subprocess.CompletedProcess[str]:
    systemd_analyze()  # skip (or fail under CI) without it
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, str(SANDBOX), str(unit), "--", *command], capture_output=True, text=True, env=env, timeout=120, check=False)
    if done.returncode == 77:
        pytest.skip(done.stderr.strip())
    return done


@pytest.mark.parametrize("unit", [DAEMON, PASS], ids=lambda p: p.name)
def test_a_dry_run_pass_works_in_the_sandbox(unit):
    done = sandboxed(unit, sys.executable, "-m", "daemon", "pass", "--dry-run", "--store", str(EXAMPLE), "--preset", "deepcode")
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "dry run (nothing written)" in done.stdout


def test_workers_numpy_ctypes_and_git_work_in_the_sandbox(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    done = sandboxed(DAEMON, sys.executable, str(probe))
    assert done.returncode == 0 and "probe ok" in done.stdout, f"exit {done.returncode}:\n{done.stdout}\n{done.stderr}"


def test_the_sandbox_is_really_on():
    """W+X memory is refused, a @privileged call kills, a netlink socket is refused."""
    wx = "import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)"
    done = sandboxed(DAEMON, sys.executable, "-c", wx)
    assert done.returncode == 1 and "PermissionError" in done.stderr, done.stderr
    done = sandboxed(DAEMON, sys.executable, "-c", "import os; os.setuid(os.getuid())")
    assert done.returncode == -signal.SIGSYS, (done.returncode, done.stderr)
    done = sandboxed(DAEMON, sys.executable, "-c", "import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)")
    assert done.returncode == 1 and "Errno 97" in done.stderr, done.stderr
