"""``[notify] command``: run after a pass that leaves proposals waiting, with a summary as
arguments and JSON on stdin; never on a dry run, never failing the pass."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from daemon.config import Config, Notify, adhoc_store, parse_config
from daemon.core.errors import ConfigError
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

RECORDER = textwrap.dedent(
    """
    import json, sys
    with open(sys.argv[1], "a") as out:
        out.write(json.dumps({"args": sys.argv[2:], "stdin": json.loads(sys.stdin.read())}) + "\\n")
    """
)


@pytest.fixture
def recorder(tmp_path):
    """A program that appends what it got (arguments, stdin) to a file; returns (argv, the file)."""
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    got = tmp_path / "got.jsonl"
    return [sys.executable, str(script), str(got)], got


def _calls(got):
    return [json.loads(line) for line in got.read_text().splitlines()] if got.exists() else []


def _app(make_app, argv, timeout=10.0):
    return make_app(Config(notify=Notify(tuple(argv), timeout)))


def test_a_pass_that_leaves_proposals_pending_runs_the_command(example_store, make_app, recorder):
    """The command gets STORE WAITING PASS_ID NEW as arguments and every waiting proposal as JSON on stdin."""
    argv, got = recorder
    store = adhoc_store(example_store, "deepcode")
    report = run_pass(_app(make_app, argv), store)
    waiting = [{"id": o.id, "kind": o.planned.draft.kind, "title": o.planned.draft.title} for o in report.outcomes if o.state == "pending"]
    assert _calls(got) == [{
        "args": [store.name, "5", str(report.pass_id), "5"],
        "stdin": {"v": 1, "store": store.name, "pass_id": report.pass_id, "waiting": 5, "new": 5, "proposals": waiting},
    }]  # fmt: skip


def test_accepted_proposals_not_applied_count_as_waiting(example_store, make_app, recorder):
    """After all but one are decided (one accepted, the rest rejected), the next pass reports 1 waiting: the accepted one."""
    argv, got = recorder
    app = _app(make_app, argv)
    store = adhoc_store(example_store, "deepcode")
    ids = [o.id for o in run_pass(app, store).outcomes if o.state == "pending"]
    decide(app, ids[0], "accept")
    for other in ids[1:]:
        decide(app, other, "reject", "not wanted")
    report = run_pass(app, store)
    assert _calls(got)[-1]["args"] == [store.name, "1", str(report.pass_id), "0"]
    assert [p["id"] for p in _calls(got)[-1]["stdin"]["proposals"]] == [ids[0]]


def test_only_new_runs_the_command_after_a_pass_that_made_proposals_and_not_after_a_reminder(example_store, make_app, recorder, clock):
    """With ``only_new`` the first pass (5 new) runs the command; the next, which only finds
    the same 5 still waiting, does not."""
    argv, got = recorder
    app = make_app(Config(notify=Notify(tuple(argv), 10.0, only_new=True)))
    store = adhoc_store(example_store, "deepcode")
    first = run_pass(app, store)
    clock.advance(hours=1)
    second = run_pass(app, store)
    assert second.status == "skipped" and second.pass_id is not None
    assert [call["args"] for call in _calls(got)] == [[store.name, "5", str(first.pass_id), "5"]]


def test_without_only_new_an_unchanged_store_is_reminded_of_what_waits(example_store, make_app, recorder, clock):
    """By default every pass that leaves proposals waiting runs the command, with 0 new after the first."""
    argv, got = recorder
    app = _app(make_app, argv)
    store = adhoc_store(example_store, "deepcode")
    run_pass(app, store)
    clock.advance(hours=1)
    second = run_pass(app, store)
    assert [call["args"][1:] for call in _calls(got)][-1] == ["5", str(second.pass_id), "0"]


def test_nothing_waiting_runs_nothing(make_store, make_app, recorder):
    """A pass that proposes nothing and leaves nothing waiting never runs the command."""
    argv, got = recorder
    root = make_store({"a.md": "---\nname: a\n---\n\nOne note.\n"})
    run_pass(_app(make_app, argv), adhoc_store(root, "generic"))
    assert _calls(got) == []


def test_a_dry_run_never_runs_the_command(example_store, make_app, recorder):
    """A dry run that would propose five changes runs no notify command."""
    argv, got = recorder
    report = run_pass(_app(make_app, argv), adhoc_store(example_store, "deepcode"), dry_run=True)
    assert report.count("pending") == 5 and _calls(got) == []


def test_a_failing_command_is_logged_and_the_pass_completes(example_store, make_app, tmp_path):
    """A command that exits 3 with a message: the pass completes, and a warning names the exit and the message."""
    failing = tmp_path / "fail.py"
    failing.write_text("import sys\nsys.stderr.write('no display')\nsys.exit(3)\n")
    with capture_logs() as logs:
        report = run_pass(_app(make_app, [sys.executable, str(failing)]), adhoc_store(example_store, "deepcode"))
    assert report.status == "completed"
    assert [(e["event"], e["log_level"], e["error"], e["stderr"]) for e in logs if e["event"].startswith("notify")] == [("notify.failed", "warning", "exited with 3", "no display")]


def test_a_command_past_its_timeout_is_killed_and_logged(example_store, make_app, tmp_path):
    """A command that sleeps past timeout_s is killed; the pass completes and the warning says so."""
    sleeper = tmp_path / "sleep.py"
    sleeper.write_text("import time\ntime.sleep(30)\n")
    with capture_logs() as logs:
        report = run_pass(_app(make_app, [sys.executable, str(sleeper)], timeout=0.5), adhoc_store(example_store, "deepcode"))
    assert report.status == "completed"
    assert [e["error"] for e in logs if e["event"] == "notify.failed"] == ["did not finish within 0.5s; killed"]


def test_a_missing_program_is_logged_and_the_pass_completes(example_store, make_app, tmp_path):
    """A program that does not exist: the pass completes, and a warning says it cannot run."""
    with capture_logs() as logs:
        report = run_pass(_app(make_app, [str(tmp_path / "nowhere")]), adhoc_store(example_store, "deepcode"))
    assert report.status == "completed"
    assert [e["error"] for e in logs if e["event"] == "notify.failed"] == ["cannot run: No such file or directory"]


def test_the_command_runs_without_a_shell(example_store, make_app, tmp_path):
    """An argument holding shell syntax reaches the program as it is: nothing is expanded or run by a shell."""
    script = tmp_path / "args.py"
    got = tmp_path / "args.json"
    script.write_text(f"import json, sys\nopen({str(got)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    run_pass(_app(make_app, [sys.executable, str(script), "$(touch pwned)", "; rm -rf /"]), adhoc_store(example_store, "deepcode"))
    assert json.loads(got.read_text())[:2] == ["$(touch pwned)", "; rm -rf /"]
    assert not (tmp_path / "pwned").exists()


def test_the_config_reads_notify(tmp_path):
    """``[notify]`` with command, timeout_s and only_new becomes Config.notify."""
    config = parse_config({"notify": {"command": ["notify-send", "dreamd"], "timeout_s": 3, "only_new": True}}, tmp_path / "c.toml")
    assert config.notify == Notify(("notify-send", "dreamd"), 3.0, only_new=True)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ({"command": "notify-send dreamd"}, "notify.command must be a non-empty list of strings"),
        ({"command": []}, "notify.command must be a non-empty list of strings"),
        ({"command": ["x"], "timeout_s": 0}, "notify.timeout_s must be a number of seconds in (0, 3600]"),
        ({"command": ["x"], "shell": True}, "notify: unknown key 'shell'"),
        ({"command": ["x"], "only_new": "yes"}, "notify.only_new must be true or false"),
    ],
    ids=["a-string", "empty", "zero-timeout", "unknown-key", "only-new-not-a-bool"],
)
def test_a_bad_notify_table_is_refused_at_load(table, said, tmp_path):
    """A command given as one string (it would need a shell), an empty one, a zero timeout or an unknown key is a config error."""
    with pytest.raises(ConfigError, match=rf"notify.*{said[7:12]}") as refused:
        parse_config({"notify": table}, tmp_path / "c.toml")
    assert said in str(refused.value)


FLOOD = textwrap.dedent(
    """
    import os, sys

    def peak_of_dreamd():  # the pass that runs this program: its peak RSS since it started, in kB
        with open(f"/proc/{os.getppid()}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

    before = peak_of_dreamd()
    chunk = b"x" * (1 << 20)
    for _ in range(200):
        sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.write(b"\\nthe last words of the flood\\n")
    sys.stderr.flush()  # written: dreamd has read all of it but what the pipe holds
    with open(sys.argv[1], "w") as out:
        out.write(f"{before} {peak_of_dreamd()}")
    sys.exit(1)
    """
)


def test_a_notifier_flooding_stderr_leaves_dreamd_small_and_its_last_words_logged(example_store, tmp_path):
    """A notifier that writes 200 MB to stderr and fails: the pass (a real dreamd process) keeps
    only the last 4 KiB of it, which end the warning, and its peak memory grows by far less than 200 MB."""
    flood, peaks = tmp_path / "flood.py", tmp_path / "peaks"
    flood.write_text(FLOOD)
    config = tmp_path / "config.toml"
    config.write_text(f"[notify]\ncommand = [{json.dumps(sys.executable)}, {json.dumps(str(flood))}, {json.dumps(str(peaks))}]\ntimeout_s = 60\n")
    argv = [str(Path(sys.executable).with_name("dreamd")), "--config", str(config), "--db", f"sqlite:///{tmp_path / 'state.db'}", "pass", "--store", str(example_store), "--preset", "deepcode"]
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (warning,) = [event for event in map(json.loads, done.stderr.splitlines()) if event["event"] == "notify.failed"]
    assert warning["error"] == "exited with 1"
    assert warning["stderr"].endswith("the last words of the flood") and len(warning["stderr"].encode()) <= 4096
    before, after = (int(kb) / 1024 for kb in peaks.read_text().split())
    print(f"peak RSS of the pass: {before:.0f} MB before its notifier flooded 200 MB, {after:.0f} MB after")
    assert after - before < 20


HANGER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with open(sys.argv[1], "w") as out:
        out.write(f"{os.getpid()} {child.pid}")
    time.sleep(60)
    """
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie waiting for its parent does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_hanging_notifier_is_killed_with_every_process_it_started(example_store, make_app, tmp_path):
    """A notifier that starts a child and hangs: at its timeout the whole process group is killed,
    the notifier and its child, and the pass completes soon after the timeout."""
    hanger = tmp_path / "hang.py"
    hanger.write_text(HANGER)
    pids = tmp_path / "pids"
    app = _app(make_app, [sys.executable, str(hanger), str(pids)], timeout=1.0)
    store = adhoc_store(example_store, "deepcode")
    with capture_logs() as logs:
        report = run_pass(app, store, dry_run=True)  # the pass's work, without the notifier
        started = time.monotonic()
        report = run_pass(app, store)
        took = time.monotonic() - started
    assert report.status == "completed"
    assert [e["error"] for e in logs if e["event"] == "notify.failed"] == ["did not finish within 1s; killed"]
    notifier, child = (int(pid) for pid in pids.read_text().split())
    gone = time.monotonic() + 5  # SIGKILL is sent, the child's end is the kernel's to finish
    while _alive(child) and time.monotonic() < gone:
        time.sleep(0.01)
    after = time.monotonic() - started - took
    assert not _alive(notifier) and not _alive(child)
    print(f"pass with a notifier hanging past its 1 s timeout: {took:.2f} s; its child gone {after * 1000:.0f} ms after")
    assert took < 10
