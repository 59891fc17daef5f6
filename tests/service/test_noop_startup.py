"""Start-up that pays only for what it does: a pass over an unchanged store imports no planner, numpy or diff code."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from daemon.planners.base import DEFAULT_DETECTORS, DetectorSettings, planner_fingerprint
from daemon.planners.versions import detectors_fingerprint

PLANNING = ("numpy", "daemon.planners.detectors", "unidiff")
_IMPORTED = re.compile(r"^import time:\s+-?\d+ \|\s+\d+ \|\s*(\S+)$", re.M)


def _imported_by_a_pass(store, db_url: str) -> tuple[str, set[str]]:  # noqa: ANN001
    """One ``dreamd pass`` as its own process: its output, and every module it imported
    (Python's own ``-X importtime`` report, one line per module, on stderr)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")}
    args = [sys.executable, "-X", "importtime", "-m", "daemon", "--db", db_url, "pass", "--store", str(store), "--preset", "deepcode", "--summary"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=True, timeout=120)
    return done.stdout, set(_IMPORTED.findall(done.stderr))


@pytest.fixture
def passed_once(example_store, db_url):  # noqa: ANN001
    """The example store after a first pass (which plans, and so imports the planners)."""
    out, modules = _imported_by_a_pass(example_store, db_url)
    assert "notes" in out and set(PLANNING) <= modules  # the report below does see these imports
    return example_store


def test_a_no_op_pass_imports_no_planner_numpy_or_diff_code(passed_once, db_url):
    """The second pass finds the store unchanged and never imports numpy, the detectors or unidiff."""
    out, modules = _imported_by_a_pass(passed_once, db_url)
    assert "unchanged since the last pass" in out
    assert sorted(m for m in modules if m.split(".")[0] in PLANNING or m.startswith(PLANNING[1])) == []


def test_a_no_op_pass_the_stat_cache_vouches_for_imports_no_database_layer_or_structlog(passed_once, db_url, db_path):
    """Once every file's stat-cache row is trusted, the no-op lane decides and records the skip
    through the standard library's sqlite3: SQLAlchemy, Alembic, structlog and YAML are never
    imported, nor dataclasses (with inspect, and the classes it builds, a fifth of such a process)."""
    import sqlite3

    with sqlite3.connect(db_path) as conn:  # as if the first pass had read the files a minute after their last change
        conn.execute("UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns) + 60000000000")
    out, modules = _imported_by_a_pass(passed_once, db_url)
    assert "unchanged since the last pass" in out
    assert sorted(m for m in modules if m.split(".")[0] in ("sqlalchemy", "alembic", "structlog", "yaml", "dataclasses", "inspect", *PLANNING)) == []
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM passes ORDER BY id").fetchall() == [("completed",), ("skipped",)]


def test_pass_all_over_unchanged_stores_imports_no_database_layer_and_says_what_waits(example_store, db_url, db_path, tmp_path):
    """``dreamd pass --all`` (the crontab form): once the stores are unchanged and every
    cache row trusted, the lane counts what waits, so the line it prints for a store with
    proposals pending is the whole pass's, and SQLAlchemy is never imported."""
    import sqlite3

    config = tmp_path / "config.toml"
    config.write_text(f'[[stores]]\nname = "demo"\npath = "{example_store}"\npreset = "deepcode"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")}
    args = [sys.executable, "-X", "importtime", "-m", "daemon", "--config", str(config), "--db", db_url, "pass", "--all"]
    first = subprocess.run(args, capture_output=True, text=True, env=env, check=True, timeout=120)
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns) + 60000000000")
    again = subprocess.run(args, capture_output=True, text=True, env=env, check=True, timeout=120)
    pending = first.stdout.split("demo: ", 1)[1].split(" ", 1)[0]  # "demo: N proposal(s) wait for a person (N pending; N new): …"
    assert int(pending) > 0 and f"({pending} pending; {pending} new)" in first.stdout
    assert again.stdout.strip() == f"demo: {pending} proposal(s) wait for a person ({pending} pending; 0 new): dreamd review demo"
    modules = set(_IMPORTED.findall(again.stderr))
    assert sorted(m for m in modules if m.split(".")[0] in ("sqlalchemy", "alembic", "structlog")) == []
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM passes ORDER BY id").fetchall() == [("completed",), ("skipped",)]


def test_the_fingerprint_known_without_the_detectors_is_theirs():
    """versions.DEFAULT_VERSIONS names the detectors DEFAULT_DETECTORS runs, in order, at their versions."""
    settings = DetectorSettings(near_threshold=0.9)
    assert detectors_fingerprint(settings) == planner_fingerprint(DEFAULT_DETECTORS, settings)
