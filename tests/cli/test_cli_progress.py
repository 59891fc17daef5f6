"""A progress bar for a pass, ``apply`` and ``pass --all`` on a terminal's stderr, and nothing on a pipe;
and ``[notify]`` run by a CLI pass."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

NOTE = "---\nname: n{i}\n---\n\nThe build command number {i} is make all with -j{i}.\n"


@pytest.fixture
def accepted(tmp_path, make_store, db_url, cli):
    """A store with three exact-duplicate pairs, every proposal accepted; returns the store."""
    root = make_store({f"{side}{i}.md": NOTE.format(i=i) for i in range(3) for side in "ab"})
    cli("--db", db_url, "pass", "--store", str(root), "--preset", "generic")
    assert cli("--db", db_url, "accept", "--store", str(root)).out.count("accepted") == 3
    return root


def _with_terminal_stderr(args):
    """Run dreamd with stderr on a pseudo-terminal and stdout on a pipe; returns (exit, stdout, what the terminal got)."""
    master, slave = os.openpty()
    done = subprocess.Popen([sys.executable, "-m", "daemon", *args], stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = done.stdout.read().decode()
    return done.wait(timeout=120), out, seen.decode(errors="replace")


def test_apply_on_a_terminal_draws_a_bar_on_stderr(accepted, db_url):
    """With stderr a terminal, ``apply`` of three proposals draws a bar from 0/3 to 3/3; stdout keeps its lines."""
    code, out, terminal = _with_terminal_stderr(["--db", db_url, "apply"])
    assert (code, out.splitlines()) == (0, ["#1 applied", "#2 applied", "#3 applied"])
    assert "applying" in terminal and "0/3" in terminal and terminal.rstrip().endswith("3/3\x1b[?25h")


def test_apply_on_a_pipe_prints_nothing_on_stderr(accepted, db_url):
    """With stderr a pipe, ``apply`` writes exactly its result lines and nothing else."""
    done = subprocess.run([sys.executable, "-m", "daemon", "--db", db_url, "apply"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "#1 applied\n#2 applied\n#3 applied\n", "")


def test_apply_of_one_proposal_draws_no_bar(accepted, db_url):
    """One proposal needs no bar: the terminal gets nothing."""
    code, out, terminal = _with_terminal_stderr(["--db", db_url, "apply", "1"])
    assert (code, out, terminal) == (0, "#1 applied\n", "")


@pytest.fixture
def two_configured(tmp_path, make_store, db_url):
    """A config with two stores, each with one duplicate pair; returns the config file."""
    roots = [make_store({"a.md": NOTE.format(i=i), "b.md": NOTE.format(i=i)}, name=f"s{i}") for i in range(2)]
    config = tmp_path / "dreamd.toml"
    config.write_text(f'db = "{db_url}"\n\n' + "".join(f'[[stores]]\nname = "s{i}"\npath = "{root}"\npreset = "generic"\n\n' for i, root in enumerate(roots)))
    return config


def test_pass_all_on_a_terminal_draws_a_bar_over_the_stores(two_configured):
    """``pass --all`` with stderr a terminal draws a bar ending at 2/2; stdout keeps one line per store."""
    code, out, terminal = _with_terminal_stderr(["--config", str(two_configured), "pass", "--all"])
    assert code == 0 and len(out.splitlines()) == 2
    assert "passing" in terminal and "2/2" in terminal


def test_pass_all_on_a_pipe_prints_nothing_on_stderr(two_configured):
    """``pass --all`` with stderr a pipe prints its two store lines and nothing on stderr."""
    done = subprocess.run([sys.executable, "-m", "daemon", "--config", str(two_configured), "pass", "--all"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "s0: 1 proposal(s) wait for a person (1 pending; 1 new): dreamd review s0\ns1: 1 proposal(s) wait for a person (1 pending; 1 new): dreamd review s1\n"


def test_a_cli_pass_runs_the_notify_command(tmp_path, example_store, cli):
    """``dreamd pass`` with [notify] in the config runs the command once, with the store, the count waiting, the pass id and the count new."""
    got = tmp_path / "got.json"
    script = tmp_path / "notify.py"
    script.write_text(f"import json, sys\nopen({str(got)!r}, 'w').write(json.dumps([sys.argv[1:], json.load(sys.stdin)['waiting']]))\n")
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[notify]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(script))}]\n\n[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\n')
    pass_id = json.loads(cli("--config", str(config), "pass", "notes", "--json").out)["pass_id"]
    assert json.loads(got.read_text()) == [["notes", "6", str(pass_id), "6"], 6]


def test_a_pass_on_a_terminal_draws_a_bar_per_stage(tmp_path, make_store, db_url):
    """With stderr a terminal, a pass draws its reading, detecting and proposing stages to their ends; stdout is its summary."""
    root = make_store({f"{side}{i}.md": NOTE.format(i=i) for i in range(3) for side in "ab"})
    code, out, terminal = _with_terminal_stderr(["--db", db_url, "pass", "--store", str(root), "--preset", "generic", "--summary"])
    assert (code, out) == (0, f"{root}: pass #1: 6 notes, 3 pending\n")
    from daemon.planners.base import DEFAULT_DETECTORS

    for stage, total in (("reading notes", 6), ("detecting", len(DEFAULT_DETECTORS)), ("proposing", 3)):
        assert stage in terminal and f"{total}/{total}" in terminal, stage


def test_a_pass_on_a_pipe_draws_nothing(tmp_path, make_store, db_url):
    """With stderr a pipe, a pass's stderr holds its JSON log lines and no bar."""
    root = make_store({f"{side}{i}.md": NOTE.format(i=i) for i in range(3) for side in "ab"})
    done = subprocess.run([sys.executable, "-m", "daemon", "--db", db_url, "pass", "--store", str(root), "--preset", "generic", "--summary"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert all(json.loads(line)["event"] for line in done.stderr.splitlines())
    assert "reading notes" not in done.stderr and "detecting" not in done.stderr


def test_a_warning_while_a_bar_is_drawn_starts_a_line_of_its_own(tmp_path, example_store):
    """A [notify] program that fails logs a warning while the pass's last bar is still drawn:
    the bar's line is wiped first, so the warning starts at the left edge, not after ``6/6``."""
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[notify]\ncommand = ["false"]\n\n[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\n')
    code, out, terminal = _with_terminal_stderr(["--config", str(config), "pass", "notes", "--summary"])
    assert code == 0 and out.startswith("notes: pass #1: ")
    found = re.search(r"(.{12})\d{4}-\d\d-\d\dT[\d:.]+Z \[warning  \] notify\.failed", terminal, re.DOTALL)
    assert found, terminal
    assert found.group(1).endswith("6/6\r\x1b[K"), repr(found.group(1))  # the bar, then its line wiped


def test_a_failed_model_part_is_said_once(tmp_path, example_store):
    """A model that cannot be reached: its failure is the one error line at the end, with no
    log lines repeating it (retries, pass.failed) on the terminal."""
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[llm]\nmodel = "openai/stand-in"\napi_base = "http://127.0.0.1:9/v1"\nretries = 1\ntimeout_s = 5\n\n'
                      f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\n')  # fmt: skip
    code, _, terminal = _with_terminal_stderr(["--config", str(config), "pass", "notes", "--summary"])
    assert code != 0
    assert terminal.count("model openai/stand-in") == 1, terminal
    assert "retrying" not in terminal and "pass.failed" not in terminal
