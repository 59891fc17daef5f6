"""systemd/crontab.example under Debian's real cron daemon: ``dreamd pass --all`` as the
dreamd user, its output mailed, and that mail silent unless proposals wait for a person.

cron runs in the same private machine as the systemd tests (see realsystemd.py), started
by the cron package's own cron.service. The file is installed as the README says
(/etc/cron.d/dreamd, root's, 0644) and kept as shipped; one line is added, the shipped
job again with ``@reboot`` for its time, because cron's shortest schedule is a minute and
an ``@reboot`` job runs the moment cron starts (the first start after boot: the machine's
/run/crond.reboot is removed before each test). cron hands a job's output to
/usr/sbin/sendmail; in the machine that is a stand-in that keeps every message as a file.
"""

from __future__ import annotations

import json
import re

from realsystemd import CLEAN, MAIL, NOTES, REPO, STATE, Host, store_config, wait_until

CRONTAB = REPO / "systemd" / "crontab.example"
CRON_FILE = "/etc/cron.d/dreamd"
SENDMAIL = "/usr/sbin/sendmail"
# The MTA cron mails through (``sendmail -FCronDaemon -i -B8BITMIME -oem root``, the
# message on stdin), reduced to keeping each message, with its arguments, as a file.
SENDMAIL_STUB = f"""#!/bin/sh
umask 022
file=$(mktemp {MAIL}/mail.XXXXXX)
{{ printf 'X-Sendmail-Args: %s\\n' "$*"; cat; }} > "$file"
"""


def crontab_with_a_job_at_start() -> str:
    """The shipped file, plus its job once more with ``@reboot`` instead of its time fields."""
    shipped = CRONTAB.read_text(encoding="utf-8")
    jobs = [line for line in shipped.splitlines() if line.strip() and not line.lstrip().startswith("#") and not re.match(r"^[A-Z_]+=", line)]
    assert len(jobs) == 1, jobs
    user_and_command = jobs[0].split(None, 5)[5]
    return shipped + f"\n# added by the test: the same job as soon as cron starts\n@reboot  {user_and_command}\n"


def install_cron_job(host: Host) -> None:
    """systemd/README.md, "Cron instead of systemd": the state directory, then the cron file."""
    host.run("install", "-d", "-o", "dreamd", "-g", "dreamd", "-m", "0700", STATE)
    host.write(CRON_FILE, crontab_with_a_job_at_start(), mode=0o644)
    mail = host.path(MAIL)
    mail.mkdir(mode=0o1777)
    mail.chmod(0o1777)  # the job's user sends its mail
    stub = host.path(SENDMAIL)
    if stub.exists() or stub.is_symlink():
        stub.unlink()  # in the machine's /usr/sbin overlay only
    host.write(SENDMAIL, SENDMAIL_STUB, mode=0o755)


def run_cron_once(host: Host) -> None:
    """Start cron, and wait until its @reboot job, and the mail of its output, are over."""
    host.systemctl("start", "cron.service")
    wait_until(lambda: any("CMD (" in line for line in host.journal("cron.service")), 30, "cron to start the job",
               lambda: host.explain("cron.service"))  # fmt: skip
    # cron's process for the job waits for it, mails its output, then exits: the job is over
    # when only the daemon is left in cron.service
    wait_until(lambda: len(host.cgroup_pids("cron.service")) == 1, 120, "the cron job to end", lambda: host.explain("cron.service"))
    said = host.journal("cron.service")
    assert any("Running @reboot jobs" in line for line in said), said
    assert not [line for line in said if re.search(r"\berror\b", line, re.IGNORECASE)], said  # the shipped line parses too


def mails(host: Host) -> list[tuple[dict[str, str], list[str]]]:
    """Each message: its headers, and its body's lines."""
    found = []
    for path in sorted(host.path(MAIL).iterdir()):
        head, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        headers = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        found.append((headers, body.splitlines()))
    return found


def passes(host: Host, store: str) -> list[dict]:
    return json.loads(host.dreamd("history", store, "--json").stdout)["passes"]


def test_cron_mails_nothing_when_nothing_waits_for_review(cron_host):
    host = cron_host
    host.write_config(store_config("clean", CLEAN))
    install_cron_job(host)
    run_cron_once(host)
    ran = passes(host, "clean")
    assert [(p["status"], p["surface"]) for p in ran] == [("completed", "timer")], ran  # the job ran, with the crontab's DREAMD_SURFACE
    assert mails(host) == []


def test_cron_mails_one_line_per_store_that_waits_for_review(cron_host):
    host = cron_host
    host.write_config(store_config("clean", CLEAN) + store_config("notes", NOTES))
    install_cron_job(host)
    run_cron_once(host)
    sent = mails(host)
    assert len(sent) == 1, sent
    headers, body = sent[0]
    assert headers["To"] == "root" and headers["X-Sendmail-Args"].endswith(" root"), headers  # MAILTO=root
    assert "pass --all" in headers["Subject"], headers
    pending = json.loads(host.dreamd("proposals", "--store", "notes", "--state", "pending", "--json").stdout)
    assert pending
    n = len(pending)
    assert body == [f"notes: {n} proposal(s) wait for a person ({n} pending; {n} new): dreamd review notes"], body
    assert [(p["status"], p["surface"]) for p in passes(host, "notes") + passes(host, "clean")] == [("completed", "timer")] * 2
