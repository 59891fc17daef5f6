"""Crash safety: a process SIGKILLed at any journal step of an apply or revert leaves every file
all-old or all-new, and recovery (run by ``dreamd verify``) finishes the job.

The child is a real Python process running ``dreamd apply``/``revert`` through
``daemon.cli.main.main``; only in the child are ``write_atomic`` / ``remove_file`` (and the
renames of ``stores.folders``, for a kill between temp file and rename, or between the
exchange and the check of the displaced file) wrapped to SIGKILL the process.
"""

from __future__ import annotations

import json

import signal
import subprocess
import sys
import textwrap

import pytest

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.service.recorded import proposal_bytes
from daemon.service.apply.applying import apply
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from daemon.stores import files, folders

    plan, url, command, proposal = sys.argv[1:5]
    when, nth = plan.split(":")
    nth = int(nth)
    calls = 0

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def dying(real, after):
        def rename(src_fd, src, dst_fd, dst):
            if not after:
                die()  # the temp file is written and fsynced; the rename never happens
            result = real(src_fd, src, dst_fd, dst)
            die()  # renamed: the displaced file waits at the temp name, not yet checked
            return result
        return rename

    def counted(real):
        def operation(*args, **kwargs):
            global calls
            calls += 1
            if calls == nth and when == "before":
                die()
            if calls == nth and when in ("replace", "exchanged"):
                folders.exchange = dying(folders.exchange, when == "exchanged")
                folders.move_new = dying(folders.move_new, when == "exchanged")
            result = real(*args, **kwargs)
            if calls == nth and when == "after":
                die()
            return result
        return operation

    files.write_atomic = counted(files.write_atomic)
    files.remove_file = counted(files.remove_file)
    from daemon.cli.main import main
    main(["--db", url, command, proposal])
    """
)

STORE = {
    "MEMORY.md": "# Memory\n\n- [Alpha](a.md) — the port\n- [Beta](b.md) — the same port\n",
    "a.md": "---\nname: Alpha\n---\nThe service listens on port 8080.\n",
    "b.md": "---\nname: Beta\n---\nthe service listens on  port 8080.\n",
}
# the merge retires b.md into a.md in archive mode: write the archive copy, write MEMORY.md, remove b.md
APPLY_OPS = [".dreamd-archive/b.md", "MEMORY.md", "b.md"]


@pytest.fixture
def accepted(make_store, make_app, db_url, tmp_path):
    """A deepcode store with one accepted merge; returns (root, proposal id, before bytes, after bytes)."""
    root = make_store(STORE)
    app = make_app()
    report = run_pass(app, adhoc_store(root, "deepcode"))
    (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    assert merge.planned.draft.retire == ("b.md",)
    decide(app, merge.id, "accept")
    view = get_proposal(app, merge.id)
    with app.engine().connect() as conn:
        _, blobs = proposal_bytes(conn, repo.proposal_store(conn, merge.id), merge.id)
    before = {p: blobs[h] if h else None for p, h in view.base.items()}
    after = {p: blobs[h] if h else None for p, h in view.result.items()}
    assert sorted(p for p in after if after[p] != before[p]) == sorted(APPLY_OPS)
    app.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return root, merge.id, before, after, script


def _on_disk(root, paths):
    return {p: (root / p).read_bytes() if (root / p).exists() else None for p in paths}


def _run_child(script, plan, db_url, command, pid):
    done = subprocess.run([sys.executable, str(script), plan, db_url, command, str(pid)], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


def _temp_files(root):
    return [str(p.relative_to(root)) for p in root.rglob("*") if ".dreamd-tmp-" in p.name]


def _assert_recovered(root, cli, db_url, make_app, pid, expected, final_state):
    """dreamd verify recovers and is clean; files hold ``expected``; the proposal and its event say so."""
    verified = cli("--db", db_url, "verify", "--store", str(root), "--preset", "deepcode")
    assert (verified.code, verified.out.splitlines()[-1]) == (0, f"{root}: clean")
    assert _on_disk(root, expected) == expected
    assert _temp_files(root) == []
    app = make_app()
    assert get_proposal(app, pid).state == final_state
    events = [e for e in event_log(app) if e["proposal_id"] == pid and e["type"] == f"proposal.{final_state}"]
    assert len(events) == 1
    assert events[0]["payload"]["recovered"] is True
    assert [e for e in event_log(app) if e["type"] == "store.changed"] == []  # its own writes are not "external"
    return app


@pytest.mark.parametrize(
    "plan",
    ["before:1", "before:2", "before:3", "after:3", "replace:1", "replace:2", "exchanged:2", "exchanged:3"],
    ids=[
        "journal-open-nothing-written", "archive-copy-written", "index-written", "all-written-not-recorded", "temp-archive-copy-not-renamed",
        "temp-index-not-renamed", "old-index-displaced-not-checked", "removed-note-moved-not-checked",
    ],  # fmt: skip
)
def test_apply_killed_at_each_journal_step_recovers_to_all_new(accepted, plan, db_url, cli, make_app):
    """After a SIGKILL at this step each file is whole (old or new), and verify's recovery leaves all new, applied and logged."""
    root, pid, before, after, script = accepted
    _run_child(script, plan, db_url, "apply", pid)
    crashed = _on_disk(root, after)
    for path, data in crashed.items():
        assert data in (before[path], after[path]), path
    if plan.startswith(("replace", "exchanged:2")):
        (temp,) = _temp_files(root)
        assert temp.startswith(".dreamd-archive/"), "a flat store's top level never holds a dreamd file, even after a crash"
    top = [p.name for p in root.iterdir() if p.is_file()]
    assert all(name.endswith(".md") and ".dreamd-tmp-" not in name for name in top), top
    _assert_recovered(root, cli, db_url, make_app, pid, after, "applied")


@pytest.mark.parametrize("plan", ["before:2", "replace:1"], ids=["index-restored-note-not-yet", "temp-index-not-renamed"])
def test_revert_killed_mid_journal_recovers_to_all_old(accepted, plan, db_url, cli, make_app, clock):
    """A revert SIGKILLed mid-way is finished by recovery: every file has its exact before
    bytes again, reverted and logged, and the archive folder the apply made is gone again."""
    root, pid, before, after, script = accepted
    app = make_app()
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    app.close()
    _run_child(script, plan, db_url, "revert", pid)
    crashed = _on_disk(root, before)
    for path, data in crashed.items():
        assert data in (before[path], after[path]), path
    recovered = _assert_recovered(root, cli, db_url, make_app, pid, before, "reverted")
    assert not (root / ".dreamd-archive").exists()
    assert [e["type"] for e in event_log(recovered) if e["proposal_id"] == pid][-2:] == ["proposal.applied", "proposal.reverted"]


def test_crashed_apply_is_finished_by_the_next_apply_command_too(accepted, db_url, cli):
    """Recovery also runs before the next ``dreamd apply``: the crashed proposal ends applied without verify."""
    root, pid, before, after, script = accepted
    _run_child(script, "before:2", db_url, "apply", pid)
    again = cli("--db", db_url, "apply")
    assert again.code == 0
    assert again.out == "nothing accepted to apply\n"
    assert _on_disk(root, after) == after
    assert _temp_files(root) == []


def test_applying_a_crashed_proposal_by_id_recovers_it_instead_of_marking_it_stale(accepted, db_url, cli, make_app, clock):
    """``dreamd apply ID`` after that apply crashed finishes it (applied, exit 5 'is applied'), and it can still be reverted."""
    root, pid, before, after, script = accepted
    _run_child(script, "after:1", db_url, "apply", pid)
    again = cli("--db", db_url, "apply", str(pid))
    logged, error = again.err.splitlines()[:-1], again.err.splitlines()[-1]
    assert (again.code, error) == (5, f"error[proposal]: proposal {pid} is applied; only accepted proposals are applied (it is applied already; dreamd revert {pid} undoes it)")
    assert [json.loads(line)["event"] for line in logged] == ["journal.recovered"]  # said on stderr, as a JSON log line
    app = make_app()
    assert get_proposal(app, pid).state == "applied"
    assert _on_disk(root, after) == after
    reverted = cli("--db", db_url, "revert", str(pid))
    assert (reverted.code, reverted.out) == (0, f"#{pid} reverted\n")
    assert _on_disk(root, before) == before
