"""The shipped units under a real systemd: start, status, sandbox, reload, stop, watchdog,
restart and the per-store timer.

The units are the files in systemd/, copied verbatim into the machine's /etc/systemd/system
(see conftest.py and realsystemd.py); what a test changes, it changes in a drop-in, and only
to be fast: a watchdog of 2 s instead of 60, a restart after 1 s instead of 10, a timer every
2 s instead of every 6 hours. Every check is on what systemd itself reports (``systemctl
show``, the journal) or on what dreamd recorded, read the way the README says (``dreamd``
as the service user).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from realsystemd import CLEAN, NOTES, OUTSIDE, STATE, Host, store_config, wait_for, wait_until

APPLYING = 'policy = "trusting"\napply = "accepted"'  # exact duplicates are applied by the pass itself
WATCHDOG_S = 2


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below root: files by their bytes and mode, folders by their mode."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(root))] = path.read_bytes() + oct(info.st_mode).encode() if path.is_file() else oct(info.st_mode)
    return found


def events(host: Host, name: str, since: str | None = None, **match: object) -> list[dict]:
    return [e for e in host.json_lines("dreamd.service", since=since) if e.get("event") == name and all(e.get(k) == v for k, v in match.items())]


def wait_event(host: Host, name: str, since: str | None = None, timeout: float = 60, **match: object) -> dict:
    found = wait_until(lambda: events(host, name, since, **match), timeout, f"a {name} log event {match or ''}", host.explain)
    return found[-1]


def host_pid(host: Host, unit: str, machine_pid: int) -> int:
    """The PID outside the machine of the unit's process that is ``machine_pid`` inside it."""
    for pid in host.cgroup_pids(unit):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        nspids = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
        if nspids and int(nspids[-1]) == machine_pid:
            return pid
    raise AssertionError(f"no process {machine_pid} in {unit}'s cgroup")


def pass_worker(host: Host, store: str = "notes", *, in_pass: bool) -> int:
    """The daemon's pass worker (the one store's), by its PID outside the machine, or 0.
    With ``in_pass``, only once it catches SIGTERM: from then on a SIGTERM stops its pass
    at a safe point."""
    for pid in host.cgroup_pids("dreamd.service"):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            if b"worker" not in argv or b"--serve" not in argv:
                continue
            if not in_pass:
                return pid
            caught = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("SigCgt:"))
            if int(caught, 16) & (1 << (signal.SIGTERM - 1)):
                return pid
        except OSError:  # it ended meanwhile
            continue
    return 0


def frozen_pass(host: Host, *, in_pass: bool = True) -> int:
    """Catch the daemon's pass over notes and stop its worker there (SIGSTOP): a pass that
    runs for as long as the test wants. Returns the worker's PID outside the machine."""
    worker = wait_until(lambda: pass_worker(host, in_pass=in_pass), 60, "the daemon's pass worker" + (" inside its pass" if in_pass else ""),
                        host.explain, every=0.005)  # fmt: skip
    os.kill(worker, signal.SIGSTOP)
    return worker


def resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def wait_restarted(host: Host, what: str) -> dict[str, str]:
    return wait_for(lambda: host.show("dreamd.service", "ActiveState", "MainPID", "NRestarts"),
                    lambda s: s["NRestarts"] == "1" and s["ActiveState"] == "active", 30, what, host.explain)  # fmt: skip


def main_pid(host: Host) -> int:
    return int(host.prop("dreamd.service", "MainPID"))


# --- start and status -----------------------------------------------------------------


def test_the_daemon_becomes_active_and_tells_systemd_how_it_is(host):
    """Type=notify: ``systemctl enable --now`` returns once READY=1 came, with a STATUS= line;
    after the first pass the line says how it went, and ``dreamd status`` (the README's
    alias) sees the same daemon."""
    host.systemctl("enable", "--now", "dreamd.service")
    shown = host.show("dreamd.service", "ActiveState", "SubState", "StatusText", "MainPID", "UnitFileState")
    assert (shown["ActiveState"], shown["SubState"], shown["UnitFileState"]) == ("active", "running", "enabled"), host.explain()
    assert shown["StatusText"].startswith("1 store(s)"), shown  # sent with READY=1, before any pass
    status = host.wait_status("last: notes completed")
    assert "new; next: notes at " in status, status
    pid = int(shown["MainPID"])
    uids = next(line.split()[1:] for line in host.path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("Uid:"))
    assert set(uids) == {str(host.ids("dreamd")[0])}, f"the daemon runs as uid {uids}"
    out = host.dreamd("status").stdout
    assert f"daemon: running, pid {pid}," in out, out
    assert "notes: every 6h" in out and "last #1 completed" in out, out


# --- the sandbox ----------------------------------------------------------------------


def probe(host: Host, pid: int, folder: str) -> str:
    """Create and remove a file in ``folder`` as seen by the service's process ``pid`` (in
    its mount namespace, as root: only a read-only mount can stop it). "" when it worked."""
    script = 'f="$1/.sandbox-probe-$$" && : > "$f" && rm -f "$f"'
    done = host.run("nsenter", f"--target={pid}", "--mount", "--", "sh", "-c", script, "sh", folder, check=False)
    return "" if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def test_a_pass_writes_its_store_and_state_directory_and_nothing_else(host):
    """ProtectSystem=strict + ReadWritePaths=: the daemon's pass records its proposals in the
    state directory and applies what the policy accepted to the listed store, while the
    same apply to a store the service user may write but the unit does not list fails
    as a read-only file system and leaves every byte there as it was."""
    outside = host.make_store(OUTSIDE)
    before_outside, before_notes = tree(outside), tree(host.path(NOTES))
    host.write_config(store_config("notes", NOTES, APPLYING) + store_config("outside", OUTSIDE, APPLYING))
    host.systemctl("start", "dreamd.service")
    wait_event(host, "pass.finished", store="notes")
    failed = wait_event(host, "pass.finished", store="outside")

    assert failed["status"] == "failed" and "Read-only file system" in failed["error"], failed
    assert tree(outside) == before_outside

    applied = json.loads(host.dreamd("proposals", "--store", "notes", "--state", "applied", "--json").stdout)
    pending = json.loads(host.dreamd("proposals", "--store", "notes", "--state", "pending", "--json").stdout)
    assert applied and pending, "the pass applied what the policy accepted and left the rest for review"
    after_notes = tree(host.path(NOTES))
    changed = {p for p in set(before_notes) | set(after_notes) if before_notes.get(p) != after_notes.get(p)}
    touched = {p for proposal in applied for p in proposal["paths"]}
    assert changed and changed <= touched | {".dreamd-archive"}, (changed, touched)
    assert host.dreamd("verify", "notes", check=False).returncode == 0

    state = host.path(STATE)
    uid, gid = host.ids("dreamd")
    assert (state.stat().st_uid, state.stat().st_mode & 0o777) == (uid, 0o700)  # StateDirectoryMode=
    db = state / "state.db"
    assert (db.stat().st_uid, db.stat().st_mode & 0o777) == (uid, 0o600)  # UMask=0077

    # What the running service's mount namespace lets even root do.
    pid = main_pid(host)
    for writable in (NOTES, CLEAN, STATE, "/tmp", "/var/tmp"):
        assert probe(host, pid, writable) == "", f"{writable} should be writable in the service"
    for read_only in (OUTSIDE, "/etc/dreamd", "/opt/dreamd", "/var/lib", "/srv", "/root", "/usr"):
        why = probe(host, pid, read_only)
        assert "Read-only file system" in why, f"{read_only} should be read-only in the service: {why!r}"
    # PrivateTmp=: the service's /tmp is its own
    host.run("nsenter", f"--target={pid}", "--mount", "--", "sh", "-c", ": > /tmp/dreamd-private-tmp-probe")
    assert not host.path("/tmp/dreamd-private-tmp-probe").exists()


# --- reload ---------------------------------------------------------------------------


def test_reload_applies_a_new_config_and_refuses_a_broken_one(host):
    """ExecReload= sends SIGHUP: a valid config is applied in place (same process), a broken
    one is refused, logged and shown in the STATUS= line, and the service stays active."""
    host.systemctl("start", "dreamd.service")
    host.wait_status("last: notes completed")
    pid = main_pid(host)

    host.write_config(store_config("notes", NOTES) + store_config("clean", CLEAN))
    since = host.cursor()
    host.systemctl("reload", "dreamd.service")
    assert wait_event(host, "config.reloaded", since)["added"] == ["clean"]
    host.wait_status("2 store(s)")

    host.write_config(store_config("notes", NOTES) + store_config("clean", CLEAN) + '[[stores]]\nname = "no-path"\npreset = "deepcode"\n')
    since = host.cursor()
    host.systemctl("reload", "dreamd.service")  # the signal is delivered: the reload job succeeds
    refused = wait_event(host, "config.reload_failed", since)
    assert refused["kept"] == ["clean", "notes"] and refused["error"].startswith("error["), refused
    status = host.wait_status("reload refused")
    assert status.startswith("2 store(s)"), status

    shown = host.show("dreamd.service", "ActiveState", "SubState", "MainPID", "NRestarts")
    assert shown == {"ActiveState": "active", "SubState": "running", "MainPID": str(pid), "NRestarts": "0"}, shown


# --- stop -----------------------------------------------------------------------------


def test_stop_during_a_pass_lets_it_finish_and_succeeds(host):
    """``systemctl stop`` while a pass runs: dreamd stops scheduling, says it is waiting, lets
    the pass finish (its drain limit, 120 s, is far off), exits 0. The store is what the pass
    recorded: ``dreamd verify`` is clean."""
    host.write_config(store_config("notes", NOTES, APPLYING))
    host.systemctl("start", "dreamd.service")
    worker = frozen_pass(host)
    try:
        host.systemctl("stop", "--no-block", "dreamd.service")
        host.wait_state("deactivating")
        host.wait_status("stopping; waiting for 1 running pass(es)")
        assert Path(f"/proc/{worker}").exists(), "the running pass was not waited for"
    finally:
        resume(worker)
    shown = host.wait_state("inactive", timeout=90)
    assert (shown["Result"], shown["ExecMainStatus"]) == ("success", "0"), host.explain()
    finished = wait_event(host, "pass.finished", store="notes")
    assert finished["status"] == "completed", finished
    assert events(host, "daemon.stopped")
    verified = host.dreamd("verify", "notes", check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_second_stop_request_stops_the_pass_at_a_safe_point(host):
    """A second SIGTERM skips the wait: the worker is told to stop at its next safe point
    and the daemon still exits 0. Nothing is left half done: no journal entry open, no
    temporary file, no pass left "running"."""
    host.write_config(store_config("notes", NOTES, APPLYING))
    host.systemctl("start", "dreamd.service")
    worker = frozen_pass(host)
    try:
        since = host.cursor()
        host.systemctl("stop", "--no-block", "dreamd.service")
        host.wait_state("deactivating")
        host.systemctl("kill", "--kill-whom=main", "--signal=SIGTERM", "dreamd.service")
        wait_event(host, "pass.stopping", since, store="notes")
    finally:
        resume(worker)  # it gets the SIGTERM that waited for it
    shown = host.wait_state("inactive", timeout=60)
    assert (shown["Result"], shown["ExecMainStatus"]) == ("success", "0"), host.explain()
    finished = wait_event(host, "pass.finished", since, store="notes")
    # stopped by SIGTERM (exit 10: "told to stop before its pass finished"); a worker stopped
    # before it got to its pass prints no report, so only its exit code says so
    assert finished["status"] == "failed" and ("SIGTERM" in finished["error"] or finished["error"] == "worker exited with 10"), finished

    verified = json.loads(host.dreamd("verify", "notes", "--json", check=False).stdout)
    torn = [p for p in verified["problems"] if "journal" in p or "temporary" in p]
    assert not torn, verified
    last = json.loads(host.dreamd("status", "--json").stdout)["stores"][0]["last_pass"]
    assert last is None or last["status"] != "running", last
    # and the next pass over the store goes through
    assert host.dreamd("pass", "notes").returncode == 0
    assert host.dreamd("verify", "notes", check=False).returncode == 0


# --- watchdog and restart -------------------------------------------------------------


def test_a_hung_daemon_is_killed_by_the_watchdog_and_restarted(host):
    """WatchdogSec=: the scheduler loop pings even while a pass hangs (passes are worker
    processes); when the loop itself stops, systemd kills the daemon (Result=watchdog) and
    Restart=on-failure starts it again."""
    # LimitCORE=0: the daemon dies of SIGABRT; where core dumps go to a handler outside (a
    # core_pattern pipe), none is made
    host.drop_in("dreamd.service", f"[Service]\nWatchdogSec={WATCHDOG_S}s\nRestartSec=1s\nLimitCORE=0\n")
    host.systemctl("start", "dreamd.service")
    assert host.prop("dreamd.service", "WatchdogUSec") == f"{WATCHDOG_S}s"
    first = main_pid(host)
    worker = frozen_pass(host, in_pass=False)  # wherever it is: a hung pass
    try:
        # Proving that nothing happens takes time: two and a half watchdog periods with a hung pass.
        time.sleep(2.5 * WATCHDOG_S)
        shown = host.show("dreamd.service", "ActiveState", "MainPID", "NRestarts")
        assert shown == {"ActiveState": "active", "MainPID": str(first), "NRestarts": "0"}, host.explain()

        since = host.cursor()
        os.kill(host_pid(host, "dreamd.service", first), signal.SIGSTOP)  # the loop hangs
        restarted = wait_restarted(host, "the watchdog to restart the daemon")
    finally:
        resume(worker)
    assert restarted["MainPID"] != str(first)
    said = "\n".join(host.journal("dreamd.service", since=since))
    assert "Watchdog timeout" in said and "Failed with result 'watchdog'" in said, said
    host.wait_status("last: notes")  # the new daemon passes again


def test_a_killed_daemon_is_restarted(host):
    """Restart=on-failure: SIGKILL of the main process (Result=signal) starts it again."""
    host.drop_in("dreamd.service", "[Service]\nRestartSec=1s\n")
    host.systemctl("start", "dreamd.service")
    first = main_pid(host)
    since = host.cursor()
    host.systemctl("kill", "--kill-whom=main", "--signal=SIGKILL", "dreamd.service")
    restarted = wait_restarted(host, "the daemon to be restarted")
    assert restarted["MainPID"] != str(first)
    said = "\n".join(host.journal("dreamd.service", since=since))
    assert "status=9/KILL" in said and "Failed with result 'signal'" in said, said
    host.wait_status("1 store(s)")


def test_a_bad_config_fails_the_start_without_restarts(host):
    """RestartPreventExitStatus=2: a config dreamd refuses (exit 2) is not retried."""
    host.drop_in("dreamd.service", "[Service]\nRestartSec=1s\n")
    host.write_config('[[stores]]\nname = "notes"\n')
    done = host.systemctl("start", "dreamd.service", check=False)
    assert done.returncode != 0
    shown = host.show("dreamd.service", "ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts")
    # failed, not auto-restart: no restart is scheduled
    assert shown == {"ActiveState": "failed", "SubState": "failed", "Result": "exit-code", "ExecMainStatus": "2", "NRestarts": "0"}, host.explain()
    assert any(line.startswith("error[") for line in host.journal("dreamd.service")), host.explain()


# --- the timer ------------------------------------------------------------------------


def test_the_timer_runs_a_pass_recorded_as_timer(host):
    """dreamd-pass@notes.timer starts dreamd-pass@notes.service on its calendar (here every
    2 s, in a drop-in); the oneshot pass succeeds in the same sandbox and its pass and
    events say the timer started them (DREAMD_SURFACE=timer)."""
    host.drop_in("dreamd-pass@.timer", "[Timer]\nOnCalendar=\nOnCalendar=*:*:0/2\nRandomizedDelaySec=0\nAccuracySec=1ms\n")
    host.systemctl("enable", "--now", "dreamd-pass@notes.timer")
    try:
        assert host.prop("dreamd-pass@notes.timer", "ActiveState") == "active"
        ran = wait_for(lambda: host.show("dreamd-pass@notes.service", "Result", "ExecMainStatus", "ExecMainExitTimestampMonotonic", "ActiveState"),
                       lambda s: s["ExecMainExitTimestampMonotonic"] not in ("", "0") and s["ActiveState"] != "activating",
                       60, "the timer's pass to run", lambda: host.explain("dreamd-pass@notes.service"))  # fmt: skip
    finally:
        host.systemctl("disable", "--now", "dreamd-pass@notes.timer")
    assert (ran["Result"], ran["ExecMainStatus"]) == ("success", "0"), host.explain("dreamd-pass@notes.service")
    assert host.prop("dreamd-pass@notes.service", "User") == "dreamd"
    passes = json.loads(host.dreamd("history", "notes", "--json").stdout)["passes"]
    assert "completed" in {p["status"] for p in passes} and {p["surface"] for p in passes} == {"timer"}, passes
    log = json.loads(host.dreamd("log", "notes", "--json").stdout)
    assert log and {e["surface"] for e in log} == {"timer"}, log  # the pass's proposals too
