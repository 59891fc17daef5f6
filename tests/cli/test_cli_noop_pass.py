"""``dreamd pass`` over an unchanged store is answered before click is imported, and says and
records exactly what the whole CLI would; any other command line goes to the whole CLI."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.cli.noop_pass import PassLine, parse

_IMPORTED = re.compile(r"^import time:\s+-?\d+ \|\s+\d+ \|\s*(\S+)$", re.M)
SETTLED = "UPDATE stat_cache SET scanned_ns = max(mtime_ns, ctime_ns) + 60000000000"  # every row trusted


def _dreamd(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -X importtime -m daemon ARGS`` as its own process (the module list on stderr)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB")}
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "daemon", *args], capture_output=True, text=True, env=env, timeout=120)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """What the process wrote to stderr, Python's import lines left out."""
    return "".join(line + "\n" for line in done.stderr.splitlines() if not line.startswith("import time:"))


@pytest.fixture
def settled(example_store: Path, db_url: str, db_path: Path) -> Path:
    """The example store after a first pass, every stat-cache row trusted."""
    assert _dreamd("--db", db_url, "pass", "--store", str(example_store), "--preset", "deepcode").returncode == 0
    with sqlite3.connect(db_path) as conn:
        conn.execute(SETTLED)
    return example_store


def test_a_no_op_pass_imports_no_click(settled, db_url, db_path):
    """The skip is recorded, its line printed, and click was never imported."""
    done = _dreamd("--db", db_url, "pass", "--store", str(settled), "--preset", "deepcode")
    assert done.returncode == 0 and done.stdout == f"{settled}: unchanged since the last pass; nothing to do\n"
    assert "click" not in set(_IMPORTED.findall(done.stderr))
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM passes ORDER BY id").fetchall() == [("completed",), ("skipped",)]


def test_it_prints_what_the_whole_cli_prints_for_a_skip(settled, db_url, cli):
    """stdout, stderr and exit code are the whole CLI's, with a skipped file and a control character in the store's name."""
    (settled / "blob.md").write_bytes(b"\0binary")
    config = settled.parent / "config.toml"
    config.write_text(f'[[stores]]\nname = "notes\\u001b"\npath = "{settled}"\npreset = "deepcode"\n')
    assert cli("--config", str(config), "--db", db_url, "pass", "notes\x1b").code == 0  # a first pass under this name, reading the new file
    with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
        conn.execute(SETTLED)
    fast = _dreamd("--config", str(config), "--db", db_url, "pass", "notes\x1b")
    whole = cli("--config", str(config), "--db", db_url, "pass", "notes\x1b")
    assert "click" not in set(_IMPORTED.findall(fast.stderr))
    assert (fast.returncode, fast.stdout, _said(fast)) == (whole.code, whole.out, whole.err)
    assert whole.err == "skipped blob.md: binary\n" and whole.out == "notes\\x1b: unchanged since the last pass; nothing to do\n"


def test_a_store_that_changed_is_passed_by_the_whole_cli(settled, db_url, db_path):
    """A note written since: the lane steps aside having written nothing, the whole CLI plans, records and prints the pass."""
    (settled / "cache.md").write_text("# Cache\n\nThe cache lives in /var/cache/app.\n")
    done = _dreamd("--db", db_url, "pass", "--store", str(settled), "--preset", "deepcode", "--summary")
    assert done.returncode == 0 and " notes, " in done.stdout and "click" in set(_IMPORTED.findall(done.stderr))
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM passes ORDER BY id").fetchall() == [("completed",), ("completed",)]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["pass", "notes"], PassLine(name="notes")),
        (["--config", "c.toml", "--db=sqlite:///s.db", "pass", "notes", "--quiet"], PassLine("c.toml", "sqlite:///s.db", "notes", summary=True)),
        (["pass", "--store", "/m", "--preset=deepcode", "--summary"], PassLine(path="/m", preset="deepcode", summary=True)),
        (["pass", "--preset", "serena", "notes"], PassLine(name="notes", preset="serena")),
    ],
)
def test_the_command_lines_answered_before_click(args, line):
    """A store by name or by path, the global --config and --db, --summary or --quiet, = or a separate value."""
    assert parse(args) == line


@pytest.mark.parametrize(
    "args",
    [
        [], ["pass"], ["proposals"], ["--debug", "pass", "notes"], ["pass", "notes", "--json"], ["pass", "notes", "--dry-run"],
        ["pass", "--all"], ["pass", "notes", "--adopt-root"], ["pass", "notes", "other"], ["pass", "notes", "--store", "/m"],
        ["pass", "--db", "x", "notes"], ["--config", "a", "--config", "b", "pass", "notes"], ["pass", "--store"], ["pass", "--store", "--summary"],
        ["pass", "notes", "--", "x"], ["--help"], ["pass", "--help"], ["pass", "-h"], ["--version"],
    ],
)
def test_every_other_command_line_goes_to_the_whole_cli(args):
    """Options this module does not take, a second store, a missing value, help: None."""
    assert parse(args) is None


def test_called_in_process_with_a_command_line_it_still_ends_with_system_exit(settled, db_url, db_path, capsys):
    """Only ``dreamd`` run as a program ends its process at once after a skip; a caller that
    hands ``main`` a command line gets SystemExit(0), as from every command."""
    from daemon.cli.entry import main

    with pytest.raises(SystemExit) as ended:
        main(["--db", db_url, "pass", "--store", str(settled), "--preset", "deepcode"])
    assert ended.value.code == 0 and capsys.readouterr().out == f"{settled}: unchanged since the last pass; nothing to do\n"
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT status FROM passes ORDER BY id").fetchall() == [("completed",), ("skipped",)]


@pytest.mark.parametrize("collecting", [True, False])
def test_the_garbage_collector_is_left_as_it_was(tmp_path, collecting):
    """The lane turns the cyclic collector off while it works, and leaves it as it found it,
    here after stepping aside (no database): the whole CLI then runs with it on."""
    import gc

    from daemon.cli.noop_pass import answer

    (gc.enable if collecting else gc.disable)()
    try:
        assert answer(PassLine(db=f"sqlite:///{tmp_path / 'none.db'}", path=str(tmp_path), preset="deepcode")) is False
        assert gc.isenabled() is collecting
    finally:
        gc.enable()
