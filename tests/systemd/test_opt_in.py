"""A developer's ``pytest`` boots no systemd: the tests that do run only when asked, and CI asks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASKING = ("CI", "DREAMD_TEST_SYSTEMD", "DREAMD_TEST_SYSTEMD_REQUIRED")


def _run(*tests: str, **env: str) -> subprocess.CompletedProcess[str]:
    plain = {k: v for k, v in os.environ.items() if k not in ASKING}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "-rs", "-p", "no:cacheprovider", *tests], cwd=HERE.parents[1],
                          env={**plain, **env}, capture_output=True, text=True, timeout=300)  # fmt: skip


def test_unasked_the_real_systemd_and_cron_tests_skip_saying_how_to_run_them():
    """With none of CI, DREAMD_TEST_SYSTEMD or DREAMD_TEST_SYSTEMD_REQUIRED set, every test of
    test_real_systemd.py and test_real_cron.py is skipped before anything boots, naming the switch."""
    done = _run("tests/systemd/test_real_systemd.py", "tests/systemd/test_real_cron.py")
    assert done.returncode == 0, done.stdout[-2000:]
    skips = re.findall(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$", done.stdout, re.MULTILINE)
    assert {why for _, why in skips} == {"these tests boot a real systemd (as root, in private namespaces): DREAMD_TEST_SYSTEMD=1 runs them"}
    assert sum(int(n) for n, _ in skips) == len(re.findall(r"^def test_", "".join((HERE / f).read_text() for f in ("test_real_systemd.py", "test_real_cron.py")), re.MULTILINE))
    assert not re.search(r"\d+ (passed|failed|error)", done.stdout), done.stdout[-2000:]


def test_ci_asks_for_them():
    """``.ci/run`` makes them required, so CI runs them (and fails if they cannot run)."""
    assert "export DREAMD_TEST_SYSTEMD_REQUIRED=1\n" in (HERE.parents[1] / ".ci" / "run").read_text()
