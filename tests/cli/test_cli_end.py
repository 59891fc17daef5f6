"""``dreamd`` run as a program ends without tearing the interpreter down, yet ends as an
ordinary exit would: every line written arrives, the exit code is the command's, exit
handlers run, and a thread the interpreter would wait for is waited for."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Run in a fresh interpreter: what a program sets up before dreamd's entry runs as ``dreamd``.
PRELUDE = """
import atexit, sys, threading, time

class Finalised:
    def __del__(self):
        print("torn down", flush=True)

kept = Finalised()  # a module global: freed only when the interpreter is torn down
"""


def _program(setup: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``setup`` then dreamd's entry with ``args`` as the program's own command line."""
    code = PRELUDE + textwrap.dedent(setup) + f"\nsys.argv = ['dreamd', *{list(args)!r}]\nfrom daemon.cli.entry import main\nmain()\n"
    env = {k: v for k, v in os.environ.items() if k not in ("DREAMD_CONFIG", "DREAMD_DB", "PYTHONUNBUFFERED")}  # stdout buffered, as a pipe's is
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of 200 exact-duplicate pairs: a dry run's JSON is far longer than a pipe holds."""
    folder = tmp_path / "store"
    folder.mkdir()
    for i in range(200):
        for name in ("a", "b"):
            (folder / f"{name}{i}.md").write_text(f"---\nname: n{i}\n---\n\nThe build command number {i} is make all with -j{i}.\n")
    return folder


def test_a_command_ends_without_tearing_down_and_all_its_output_arrives(store, tmp_path):
    done = _program("", "--db", f"sqlite:///{tmp_path / 'state.db'}", "pass", "--store", str(store), "--preset", "generic", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    assert "torn down" not in done.stdout  # the module global was never freed: no teardown
    said = json.loads(done.stdout)
    assert len(said["proposals"]) == 200  # the whole document, flushed before the end


def test_the_exit_code_is_the_commands(tmp_path):
    done = _program("", "--db", f"sqlite:///{tmp_path / 'state.db'}", "show", "12345")
    assert (done.returncode, done.stderr) == (5, "error[proposal]: no proposal #12345 (dreamd proposals lists them)\n")
    assert "torn down" not in done.stdout
    usage = _program("", "pass", "--no-such-option")
    assert usage.returncode == 2 and "torn down" not in usage.stdout


def test_exit_handlers_still_run(tmp_path):
    done = _program("atexit.register(print, 'handler ran')", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("handler ran\n") and "torn down" not in done.stdout


def test_a_thread_the_interpreter_waits_for_makes_it_an_ordinary_exit(tmp_path):
    """Ended at once, the process would kill the thread before it writes its line."""
    setup = """
    def late():
        time.sleep(0.5)
        print("thread done", flush=True)
    threading.Thread(target=late).start()
    """
    done = _program(setup, "--version")
    assert done.returncode == 0, done.stderr
    assert "thread done" in done.stdout and "torn down" in done.stdout  # waited for, then the ordinary teardown


def test_a_daemon_thread_is_not_waited_for(tmp_path):
    setup = """
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    """
    done = _program(setup, "--version")
    assert done.returncode == 0 and "torn down" not in done.stdout


def test_called_with_a_command_line_it_raises_system_exit_as_before(tmp_path):
    """A caller that hands ``main`` its command line (tests, embedding) keeps its process."""
    from daemon.cli.entry import main

    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0


def test_a_code_that_is_not_a_number_is_left_to_the_ordinary_exit():
    from daemon.cli.entry import end_process

    assert end_process("a message the ordinary exit prints") is None  # returned: this process goes on


def test_a_process_started_without_stdout_still_ends(tmp_path):
    """No stream to flush (stdout closed at start: Python sets it to None): nothing to lose."""
    code = PRELUDE + "\nsys.argv = ['dreamd', '--version']\nfrom daemon.cli.entry import main\nmain()\n"
    done = subprocess.run(f"{sys.executable} -c {shlex.quote(code)} >&-", shell=True, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
