"""The units in systemd/: systemd-analyze has nothing to say about them and rates both services'
exposure at most 2.0, and they carry the directives dreamd's contract with systemd depends on.

These run the real ``systemd-analyze`` (offline: no running systemd is needed). Without it
they are skipped, except under CI (``$CI`` set), where a missing tool is a failure.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from unitfile import parse, timespan_s, value, values

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "systemd"
DAEMON = UNITS / "dreamd.service"
PASS = UNITS / "dreamd-pass@.service"
TIMER = UNITS / "dreamd-pass@.timer"
CRONTAB = UNITS / "crontab.example"
README = UNITS / "README.md"

DREAMD = "/opt/dreamd/bin/dreamd"
CONFIG_ARGS = "--config /etc/dreamd/config.toml"
DRAIN_LIMIT_S = 120  # `dreamd run --stop-timeout` default: TimeoutStopSec= must exceed it
MAX_EXPOSURE = 2.0

# [Service] keys that belong to the daemon's process model; every other [Service] line of
# dreamd.service (user, environment, the whole sandbox) must be in dreamd-pass@.service too.
DAEMON_ONLY = {"Type", "NotifyAccess", "ExecStart", "ExecReload", "WatchdogSec", "Restart", "RestartSec",
               "RestartPreventExitStatus", "KillMode", "TimeoutStopSec"}  # fmt: skip


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found:
        return found
    message = "systemd-analyze is not installed (Debian: apt-get install systemd)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; CI must run the systemd unit tests", pytrace=False)
    pytest.skip(message)


def analyze(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SYSTEMD_COLORS": "0", "SYSTEMD_PAGER": "", "LC_ALL": "C.UTF-8"}
    return subprocess.run([systemd_analyze(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)


def staged(tmp_path: Path) -> Path:
    """The units copied to tmp_path, each Exec*= program replaced by a stub that exists there.

    ``verify`` checks that every command it would run is an executable file; dreamd's
    install prefix (and /bin/kill, in a container without procps) need not exist here.
    """
    folder = tmp_path / "units"
    folder.mkdir()
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for unit in (DAEMON, PASS, TIMER):
        text = unit.read_text(encoding="utf-8")
        for program in sorted(set(re.findall(r"^Exec\w+=[-@:+!]*(/\S+)", text, re.MULTILINE))):
            stub = stubs / Path(program).name
            stub.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
            stub.chmod(0o755)
            text = re.sub(rf"^(Exec\w+=[-@:+!]*){re.escape(program)}\b", rf"\g<1>{stub}", text, flags=re.MULTILINE)
        (folder / unit.name).write_text(text, encoding="utf-8")
    return folder


def assert_verify_silent(folder: Path, *names: str) -> None:
    done = analyze("verify", *(f"./{name}" for name in names), cwd=folder)
    assert done.returncode == 0 and not done.stderr.strip() and not done.stdout.strip(), (
        f"systemd-analyze verify {' '.join(names)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    )


def exposure(folder: Path, name: str) -> float:
    # --threshold is the exposure x10 above which the command fails: 20 = MAX_EXPOSURE.
    done = analyze("security", "--offline=yes", f"--threshold={int(MAX_EXPOSURE * 10)}", "--no-pager", f"./{name}", cwd=folder)
    found = re.search(r"Overall exposure level for (\S+): (\d+(?:\.\d+)?)", done.stdout)
    assert found, f"no exposure figure for {name}:\n{done.stdout}{done.stderr}"
    assert found.group(1) == name
    assert not done.stderr.strip(), done.stderr
    figure = float(found.group(2))
    assert figure <= MAX_EXPOSURE and done.returncode == 0, (
        f"{name}: exposure {figure} > {MAX_EXPOSURE}; what counts:\n"
        + "\n".join(line for line in done.stdout.splitlines() if line.startswith("✗"))
    )
    return figure


# --- systemd-analyze ------------------------------------------------------------------


def test_verify_finds_nothing_to_say(tmp_path):
    """No error and no warning (verify warns on stderr and still exits 0: stderr must be empty)."""
    folder = staged(tmp_path)
    assert_verify_silent(folder, "dreamd.service", "dreamd-pass@example.service", "dreamd-pass@example.timer")


def test_verify_would_report_a_mistake(tmp_path):
    """The check above can fail: an unknown key and a bad value are reported on stderr."""
    folder = staged(tmp_path)
    unit = folder / "dreamd.service"
    unit.write_text(unit.read_text(encoding="utf-8").replace("UMask=0077", "UMask=0077\nProtectHome=maybe\nPersistent=true"), encoding="utf-8")
    done = analyze("verify", "./dreamd.service", cwd=folder)
    assert "maybe" in done.stderr and "'Persistent'" in done.stderr, done.stderr


@pytest.mark.parametrize("name", ["dreamd.service", "dreamd-pass@example.service"])
def test_exposure_is_at_most_2(name):
    """``systemd-analyze security --offline=yes`` rates the service at most 2.0 ("OK")."""
    assert exposure(UNITS, name) <= MAX_EXPOSURE


def test_readme_drop_in_verifies_and_keeps_the_exposure(tmp_path):
    """The ReadWritePaths= drop-in the README shows is valid and changes no rating."""
    blocks = re.findall(r"```ini\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "systemd/README.md shows one drop-in"
    drop_in = "\n".join(line.strip() for line in blocks[0].splitlines()) + "\n"
    assert "ReadWritePaths=\n" in drop_in  # resets the unit's example path first
    folder = staged(tmp_path)
    for unit in ("dreamd.service", "dreamd-pass@.service"):
        (folder / f"{unit}.d").mkdir()
        (folder / f"{unit}.d" / "override.conf").write_text(drop_in, encoding="utf-8")
    assert_verify_silent(folder, "dreamd.service", "dreamd-pass@example.service")
    for name in ("dreamd.service", "dreamd-pass@example.service"):
        assert exposure(folder, name) <= MAX_EXPOSURE


def test_timer_calendar_fires_every_6_hours():
    """OnCalendar= parses, and fires at 00, 06, 12 and 18 o'clock."""
    calendar = value(parse(TIMER), "Timer", "OnCalendar")
    done = analyze("calendar", "--iterations=4", calendar, cwd=UNITS)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    hours = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ \S+ (\d\d):00:00", done.stdout)
    assert sorted(hours) == ["00", "06", "12", "18"], done.stdout


# --- directives -----------------------------------------------------------------------


def environment(directives) -> dict[str, str]:
    pairs = [word.partition("=") for line in values(directives, "Service", "Environment") for word in shlex.split(line)]
    return {name: val for name, _, val in pairs}


def test_daemon_speaks_notify_and_stops_gracefully():
    d = parse(DAEMON)
    assert value(d, "Service", "ExecStart") == f"{DREAMD} {CONFIG_ARGS} run"
    assert value(d, "Service", "Type") == "notify"
    assert value(d, "Service", "NotifyAccess") == "main"  # only dreamd, not its workers
    assert timespan_s(value(d, "Service", "WatchdogSec")) == 60
    assert value(d, "Service", "ExecReload") == "/bin/kill -HUP $MAINPID"
    assert value(d, "Service", "Restart") == "on-failure"
    assert value(d, "Service", "KillMode") == "mixed"  # SIGTERM to dreamd only; it stops its workers
    assert timespan_s(value(d, "Service", "TimeoutStopSec")) > DRAIN_LIMIT_S
    assert value(d, "Install", "WantedBy") == "multi-user.target"


@pytest.mark.parametrize("unit", [DAEMON, PASS], ids=lambda p: p.name)
def test_user_state_environment_and_sandbox(unit):
    d = parse(unit)
    assert (value(d, "Service", "User"), value(d, "Service", "Group")) == ("dreamd", "dreamd")
    assert value(d, "Service", "DynamicUser") is None
    assert value(d, "Service", "StateDirectory") == "dreamd"
    assert environment(d)["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert values(d, "Service", "EnvironmentFile") == ["-/etc/dreamd/env"]
    assert value(d, "Service", "UMask") == "0077"
    assert value(d, "Service", "ProtectSystem") == "strict"
    assert value(d, "Service", "ProtectHome") == "read-only"  # ReadWritePaths= reach stores in homes
    assert values(d, "Service", "ReadWritePaths"), "an example store path, for users to replace"
    assert value(d, "Service", "CapabilityBoundingSet") == ""
    assert value(d, "Service", "AmbientCapabilities") == ""
    assert value(d, "Service", "NoNewPrivileges") == "yes"
    assert value(d, "Service", "MemoryDenyWriteExecute") == "yes"
    assert value(d, "Service", "PrivateUsers") == "yes"
    assert set(value(d, "Service", "RestrictAddressFamilies").split()) == {"AF_UNIX", "AF_INET", "AF_INET6"}
    filters = values(d, "Service", "SystemCallFilter")
    assert filters[0] == "@system-service" and "~@privileged" in filters
    # numpy's OpenBLAS calls mbind() (in @resources) at import: filtering it kills dreamd
    assert not any("@resources" in f for f in filters if f.startswith("~"))


def test_pass_service_runs_one_pass_with_the_daemons_sandbox():
    p, d = parse(PASS), parse(DAEMON)
    assert value(p, "Service", "Type") == "oneshot"
    assert value(p, "Service", "ExecStart") == f"{DREAMD} {CONFIG_ARGS} pass %i"
    shared = [(x.key, x.value) for x in d if x.section == "Service" and x.key not in DAEMON_ONLY]
    missing = [f"{k}={v}" for k, v in shared if (k, v) not in {(x.key, x.value) for x in p if x.section == "Service"}]
    assert not missing, f"dreamd-pass@.service lacks lines of dreamd.service: {missing}"
    assert value(p, "Install", "WantedBy") is None  # started by its timer, not enabled itself


def test_timer_catches_up_and_spreads_stores():
    t = parse(TIMER)
    assert value(t, "Timer", "Persistent") == "true"
    delay = timespan_s(value(t, "Timer", "RandomizedDelaySec"))
    accuracy = timespan_s(value(t, "Timer", "AccuracySec"))
    assert 0 < delay <= 3600 and 0 < accuracy <= delay
    assert value(t, "Timer", "Unit") is None  # dreamd-pass@X.timer starts dreamd-pass@X.service
    assert value(t, "Install", "WantedBy") == "timers.target"


def test_crontab_example_runs_pass_all_as_dreamd():
    lines = [line for line in CRONTAB.read_text(encoding="utf-8").splitlines() if line.strip() and not line.lstrip().startswith("#")]
    settings = dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z_]+=", line))
    jobs = [line.split(None, 6) for line in lines if not re.match(r"^[A-Z_]+=", line)]
    assert settings.get("MAILTO") and settings.get("STATE_DIRECTORY") == "/var/lib/dreamd"
    assert settings.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"
    assert len(jobs) == 1 and len(jobs[0]) == 7, jobs
    *when, user, command = jobs[0]
    assert user == "dreamd" and command == f"{DREAMD} {CONFIG_ARGS} pass --all"
    assert all(re.fullmatch(r"[\d*/,-]+", field) for field in when), when
    comments = CRONTAB.read_text(encoding="utf-8")
    assert re.search(r"^#\s+11\s", comments, re.MULTILINE) and re.search(r"^#\s+12\s", comments, re.MULTILINE)
