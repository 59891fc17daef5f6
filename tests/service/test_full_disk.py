"""A disk that refuses a write mid-apply (ENOSPC, EIO, EDQUOT) never leaves a half-applied store
that a later apply builds on.

The write is rolled back at once: every file byte for byte as before, the journal closed
``rolled-back``, the proposal still accepted (or, for a revert, still applied), verify clean, and
the same apply or revert works once the disk takes writes again. When the rollback cannot finish
either (the disk stays broken), the journal stays in conflict and the store is held: every apply
and revert of it is refused in one line naming the journal and ``dreamd resolve``, no second
journal is opened, and resolve, once the disk works, leaves store, proposal and event log in
agreement.

The full disk is real where it can be: a 256 KiB tmpfs filled to the last pages (root only;
skipped elsewhere with the reason, required under CI). Every other write step, and EIO and
EDQUOT, fail through ``faults`` (the test process's own os calls, counted under the store).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ApplyError
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.apply.applying import apply, revert
from daemon.service.review.audit import event_log, verify
from daemon.service.passes.run import run_pass
from daemon.service.recorded import proposal_bytes
from daemon.service.proposals import decide, get_proposal
from daemon.stores.files import write_atomic

from .faults import failing, recording

STORE = {
    "MEMORY.md": "# Memory\n\n- [Alpha](a.md) — the port\n- [Beta](b.md) — the same port\n",
    "a.md": "---\nname: Alpha\n---\nThe service listens on port 8080.\n",
    "b.md": "---\nname: Beta\n---\nthe service listens on  port 8080.\n",
}
TEMP = re.compile(r"\.dreamd-tmp-j\d+-[0-9a-f]+")
# What the merge writes (b.md retired into the archive): archive copy, index, removal, then each folder synced once.
MERGE_STEPS = [
    ("mkdir", ".dreamd-archive"), ("fsync", ""),  # the archive folder, made durable
    ("create", ".dreamd-archive/.b.md.TMP"), ("write", ".dreamd-archive/.b.md.TMP"), ("fsync", ".dreamd-archive/.b.md.TMP"),
    ("rename", ".dreamd-archive/b.md"), ("unlink", ".dreamd-archive/.b.md.TMP"),  # the temp file is gone already: a no-op
    ("create", ".dreamd-archive/.MEMORY.md.TMP"), ("write", ".dreamd-archive/.MEMORY.md.TMP"), ("fsync", ".dreamd-archive/.MEMORY.md.TMP"),
    ("exchange", "MEMORY.md"), ("unlink", ".dreamd-archive/.MEMORY.md.TMP"),  # the displaced old index
    ("unlink", ".dreamd-archive/.MEMORY.md.TMP"),  # a no-op again
    ("rename", ".dreamd-archive/.b.md.TMP"), ("unlink", ".dreamd-archive/.b.md.TMP"),  # b.md moved aside, checked, removed
    ("fsync", ".dreamd-archive"), ("fsync", ""),
]  # fmt: skip
MERGE_NOOPS = {7, 13}  # unlinks of a temp name already renamed away: failing them changes nothing
# What the error line says failed when each step fails: the write of a file, its removal, a folder's sync.
MERGE_TOLD = ["cannot write .dreamd-archive/b.md"] * 7 + ["cannot write MEMORY.md"] * 6 + ["cannot remove b.md"] * 2 + [
    "cannot sync .dreamd-archive/b.md", "cannot sync b.md"]  # fmt: skip
REVERT_STEPS = [
    ("create", ".dreamd-archive/.MEMORY.md.TMP"), ("write", ".dreamd-archive/.MEMORY.md.TMP"), ("fsync", ".dreamd-archive/.MEMORY.md.TMP"),
    ("exchange", "MEMORY.md"), ("unlink", ".dreamd-archive/.MEMORY.md.TMP"), ("unlink", ".dreamd-archive/.MEMORY.md.TMP"),
    ("create", ".dreamd-archive/.b.md.TMP"), ("write", ".dreamd-archive/.b.md.TMP"), ("fsync", ".dreamd-archive/.b.md.TMP"),
    ("rename", "b.md"), ("unlink", ".dreamd-archive/.b.md.TMP"),
    ("rename", ".dreamd-archive/.b.md.TMP"), ("unlink", ".dreamd-archive/.b.md.TMP"),
    ("fsync", ""), ("fsync", ".dreamd-archive"),
    ("rmdir", ".dreamd-archive"), ("fsync", ""),  # the archive folder the apply made, empty again, removed
]  # fmt: skip
REVERT_NOOPS = {6, 11, 16, 17}  # 16, 17: the revert is done; a folder that stays is untidy, nothing more
ERRNOS = [errno.ENOSPC, errno.EIO, errno.EDQUOT]
ERRNO_IDS = ["ENOSPC", "EIO", "EDQUOT"]
TWO, TWO_IDS = ERRNOS[:2], ERRNO_IDS[:2]  # the code never looks at the errno: two of them for the longer tests


def _required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("DREAMD_TEST_TMPFS_REQUIRED") == "1"


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 256 KiB tmpfs (root only): skipped elsewhere, saying why; under CI it must mount."""
    reason = None
    if os.geteuid() != 0 or shutil.which("mount") is None:
        reason = "needs root and mount(8) to make a small tmpfs"
    mount = tmp_path / "small-disk"
    mount.mkdir()
    if reason is None:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True)
        reason = None if done.returncode == 0 else f"cannot mount a tmpfs here: {done.stderr.strip()}"
    if reason is not None:
        if _required():
            pytest.fail(f"{reason}; the full-disk tests must run here (CI or DREAMD_TEST_TMPFS_REQUIRED=1)", pytrace=False)
        pytest.skip(f"{reason}: the tests on a real full disk are skipped")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _fill(mount: Path, free_pages: int) -> Path:
    """Fill the tmpfs but ``free_pages`` pages; returns the filler, whose removal frees it."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        os.ftruncate(fd, os.fstat(fd).st_size - free_pages * 4096)
    finally:
        os.close(fd)
    assert os.statvfs(mount).f_bavail == free_pages
    return filler


def _accepted(make_app, root: Path):
    """The store at ``root`` with its one merge accepted: (app, store, proposal id, bytes before)."""
    for rel, text in STORE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    app = make_app()
    store = adhoc_store(root, "deepcode")
    (merge,) = [o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge"]
    decide(app, merge.id, "accept")
    return app, store, merge.id, _files(root)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and p.name != "filler"}


def _temp_files(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if TEMP.search(p.name)]


def _journals(app) -> list[tuple[int, str, str]]:
    with app.engine().connect() as conn:
        return [(j.proposal_id, j.operation, j.state) for j in conn.execute(t.journal.select().order_by(t.journal.c.id))]


def _events(app, pid: int) -> list[str]:
    return [e["type"] for e in event_log(app) if e["proposal_id"] == pid]


def _steps(seam) -> list[tuple[str, str]]:
    return [(operation, TEMP.sub(".TMP", path)) for operation, path in seam.steps]


def _assert_as_before(app, store, root: Path, pid: int, before: dict[str, bytes], state: str) -> None:
    """The store holds ``before`` byte for byte, no temp file of dreamd's, the proposal is in
    ``state`` and verify is clean."""
    assert _files(root) == before
    assert _temp_files(root) == []
    assert get_proposal(app, pid).state == state
    assert verify(app, store).problems == []


def _applies_and_reverts(app, store, root: Path, pid: int, before: dict[str, bytes]) -> None:
    """The same proposal applies now (verify clean after), and its revert puts ``before`` back."""
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    assert verify(app, store).clean
    _reverts(app, store, root, pid, before)


def _reverts(app, store, root: Path, pid: int, before: dict[str, bytes]) -> None:
    assert revert(app, pid).state == "reverted"
    _assert_as_before(app, store, root, pid, before, "reverted")


def test_the_write_steps_of_a_merge_and_its_revert(make_app, tmp_path):
    """The steps each failing test below takes in turn: a merge writes the archive copy and the
    index, removes the retired note and syncs each folder; its revert undoes them."""
    root = tmp_path / "store"
    app, _, pid, _ = _accepted(make_app, root)
    with recording(root) as seam:
        assert [r.state for r in apply(app, [pid])] == ["applied"]
    assert _steps(seam) == MERGE_STEPS
    with recording(root) as seam:
        assert revert(app, pid).state == "reverted"
    assert _steps(seam) == REVERT_STEPS


@pytest.mark.parametrize(("free_pages", "refused"), [(0, ".dreamd-archive/b.md"), (1, "MEMORY.md")], ids=["archive-copy", "index"])
def test_a_real_full_disk_mid_apply_rolls_it_back_and_the_apply_works_once_there_is_room(small_disk, free_pages, refused, make_app, cli):
    """On a full tmpfs the apply fails with the disk's own ENOSPC at the archive copy or at the
    index; the store is as it was, nothing to resolve; with room again `dreamd apply` applies it
    under one journal that finishes, and `dreamd revert` undoes it."""
    root = small_disk / "store"
    app, store, pid, before = _accepted(make_app, root)
    filler = _fill(small_disk, free_pages)
    failed = cli("--db", app.db_url, "apply", str(pid))
    assert (failed.code, failed.out) == (6, "")
    assert failed.err.splitlines()[-1] == (
        f"error[apply]: apply of proposal {pid} failed while writing: cannot write {refused}: No space left on device; what it wrote was rolled back, "
        f"the store is as it was and proposal {pid} is still accepted (free space or mend the disk, then dreamd apply {pid} again)"
    )
    _assert_as_before(app, store, root, pid, before, "accepted")
    assert _journals(app) == [(pid, "apply", "rolled-back")]
    assert _events(app, pid)[-1] == "journal.rolled_back"
    resolved = cli("--db", app.db_url, "resolve", "1")
    assert (resolved.code, resolved.err.splitlines()[-1]) == (5, "error[proposal]: journal 1 is rolled-back, not in conflict; nothing to resolve")

    filler.unlink()
    assert cli("--db", app.db_url, "apply").out == f"#{pid} applied\n"
    assert _journals(app) == [(pid, "apply", "rolled-back"), (pid, "apply", "done")]
    assert get_proposal(app, pid).state == "applied" and verify(app, store).clean
    assert _files(root) != before
    assert cli("--db", app.db_url, "revert", str(pid)).out == f"#{pid} reverted\n"
    _assert_as_before(app, store, root, pid, before, "reverted")


@pytest.mark.parametrize("code", ERRNOS, ids=ERRNO_IDS)
@pytest.mark.parametrize("step", range(1, len(MERGE_STEPS) + 1), ids=[f"{n}-{op}" for n, (op, _) in enumerate(MERGE_STEPS, 1)])
def test_each_write_step_of_a_merge_refused_once_is_rolled_back_at_once(step, code, make_app, tmp_path):
    """Whichever write step of the apply the disk refuses, the store is at once byte for byte as
    before, the proposal accepted, verify clean, and the same apply then works (and reverts)."""
    root = tmp_path / "store"
    app, store, pid, before = _accepted(make_app, root)
    with failing(root, step, code) as seam:
        if step in MERGE_NOOPS:
            assert [r.state for r in apply(app, [pid])] == ["applied"]
        else:
            with pytest.raises(ApplyError) as failed:
                apply(app, [pid])
            assert str(failed.value) == (f"apply of proposal {pid} failed while writing: {MERGE_TOLD[step - 1]}: {os.strerror(code)}; "
                                         f"what it wrote was rolled back, the store is as it was and proposal {pid} is still accepted")  # fmt: skip
    assert _steps(seam)[step - 1] == MERGE_STEPS[step - 1]
    if step in MERGE_NOOPS:
        assert verify(app, store).clean
        _reverts(app, store, root, pid, before)
        return
    _assert_as_before(app, store, root, pid, before, "accepted")
    assert _journals(app) == [(pid, "apply", "rolled-back")]
    _applies_and_reverts(app, store, root, pid, before)


@pytest.mark.parametrize("code", TWO, ids=TWO_IDS)
@pytest.mark.parametrize("step", range(1, len(MERGE_STEPS) + 1), ids=[f"{n}-{op}" for n, (op, _) in enumerate(MERGE_STEPS, 1)])
def test_a_disk_that_stays_broken_from_any_write_step_holds_the_store_until_resolve(step, code, make_app, tmp_path, cli):
    """When the disk refuses this step and every later one, nothing is left half-applied and
    open: either nothing needed undoing (the store as before, rolled back), or the store is held,
    every apply and revert of it refused in one line naming the journal and `dreamd resolve`,
    with no second journal; resolve, once the disk works, puts it back as before, keeps the
    proposal accepted, and the apply then works."""
    root = tmp_path / "store"
    app, store, pid, before = _accepted(make_app, root)
    with failing(root, step, code, persist=True) as seam:
        with pytest.raises(ApplyError) as failed:
            apply(app, [pid])
    told = MERGE_TOLD[step if step in MERGE_NOOPS else step - 1]  # the first step whose failure counts, not masked by a later one
    assert str(failed.value).startswith(f"apply of proposal {pid} failed while writing: {told}: {os.strerror(code)}")
    wrote = [operation for operation, _ in seam.steps[: step - 1] if operation in ("create", "rename", "exchange")]
    if not wrote:  # nothing reached the store: nothing to undo
        assert "what it wrote was rolled back" in str(failed.value)
        _assert_as_before(app, store, root, pid, before, "accepted")
        return
    assert "rolling it back failed too" in str(failed.value)
    assert failed.value.hint == "the store is held: no apply or revert of it runs until dreamd resolve 1 ends journal 1, once the disk takes writes again"
    held = (f"error[unresolved]: store {store.name} is held: journal 1 (apply of proposal {pid}) did not finish; no apply or revert runs on it "
            "until that journal is resolved (dreamd resolve 1 ends it; dreamd verify says what it holds)")  # fmt: skip
    for args in (("apply", str(pid)), ("apply",), ("revert", str(pid))):
        refused = cli("--db", app.db_url, *args)
        assert (args, refused.code, refused.out, refused.err.splitlines()[-1]) == (args, 6, "", held)
    assert _journals(app) == [(pid, "apply", "conflict")]  # no second journal of the same proposal
    assert get_proposal(app, pid).state == "accepted"
    problems = verify(app, store).problems
    assert problems[0].startswith(f"journal 1 (apply of proposal {pid}) is conflict: its writes failed (cannot ")
    assert problems[0].endswith(f"{os.strerror(code)}) and were not rolled back; no apply or revert of the store runs until dreamd resolve 1")

    resolved = cli("--db", app.db_url, "resolve", "1")
    assert resolved.code == 0 and resolved.out.splitlines()[-1] == f"  #{pid} is still accepted: dreamd apply {pid} applies it again", resolved
    _assert_as_before(app, store, root, pid, before, "accepted")
    assert _journals(app) == [(pid, "apply", "resolved")]
    assert _events(app, pid)[-2:] == ["journal.failed", "journal.resolved"]
    _applies_and_reverts(app, store, root, pid, before)


@pytest.mark.parametrize("code", TWO, ids=TWO_IDS)
@pytest.mark.parametrize("step", range(1, len(REVERT_STEPS) + 1), ids=[f"{n}-{op}" for n, (op, _) in enumerate(REVERT_STEPS, 1)])
def test_each_write_step_of_a_revert_refused_once_leaves_it_applied(step, code, make_app, tmp_path):
    """A revert the disk refuses at any step is rolled back to the applied store byte for byte:
    the proposal still applied, verify clean, and the revert then works."""
    root = tmp_path / "store"
    app, store, pid, before = _accepted(make_app, root)
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    applied = _files(root)
    with failing(root, step, code) as seam:
        if step in REVERT_NOOPS:
            assert revert(app, pid).state == "reverted"
        else:
            with pytest.raises(ApplyError, match=f"what it wrote was rolled back, the store is as it was and proposal {pid} is still applied"):
                revert(app, pid)
    assert _steps(seam)[step - 1] == REVERT_STEPS[step - 1]
    if step not in REVERT_NOOPS:
        _assert_as_before(app, store, root, pid, applied, "applied")
        assert _journals(app) == [(pid, "apply", "done"), (pid, "revert", "rolled-back")]
        _reverts(app, store, root, pid, before)
    else:
        _assert_as_before(app, store, root, pid, before, "reverted")


def test_recovery_that_the_disk_refuses_rolls_the_crashed_apply_back(make_app, tmp_path, cli):
    """An apply that died after its archive copy, recovered onto a full disk: the roll forward
    fails at the index, so what the crash left is rolled back instead, the proposal still accepted."""
    root = tmp_path / "store"
    app, store, pid, before = _accepted(make_app, root)
    with app.engine().begin() as conn:  # what a SIGKILL after the archive copy leaves: the journal writing, the copy in place
        store_id = repo.find_store(conn, store.name).id
        files, blobs = proposal_bytes(conn, store_id, pid)
        steps = [{"path": p, "before": b, "after": r} for p, (b, r) in sorted(files.items()) if b != r]
        repo.put_blobs(conn, {r: blobs[r] for _, r in files.values() if r})
        repo.open_journal(conn, store_id, pid, "apply", steps, app.clock())
    (copy,) = [s for s in steps if s["before"] is None]
    write_atomic(root, copy["path"], blobs[copy["after"]])
    with failing(root, 1, errno.ENOSPC) as seam:  # the index's temp file, the first thing recovery writes
        verified = cli("--db", app.db_url, "verify", "--store", str(root), "--preset", "deepcode")
    assert seam.failed == [("create", seam.failed[0][1])] and "MEMORY.md" in seam.failed[0][1]
    assert "journal.rolled_back" in [json.loads(line)["event"] for line in verified.err.splitlines() if line.startswith("{")]
    assert (verified.code, verified.out.splitlines()[-1]) == (0, f"{root}: clean")
    _assert_as_before(app, store, root, pid, before, "accepted")
    assert _journals(app) == [(pid, "apply", "rolled-back")]


def test_resolve_leaves_what_a_later_journal_wrote(make_app, tmp_path, cli):
    """A journal an older dreamd left in conflict while the same proposal was applied again
    under a later one: resolve leaves the later journal's files as they are (the proposal stays
    applied, verify clean, revert works) instead of undoing half of it."""
    root = tmp_path / "store"
    app, store, pid, before = _accepted(make_app, root)
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
    with failing(root, 1, errno.ENOSPC), pytest.raises(ApplyError):
        apply(app, [pid])  # journal 1: nothing written
    assert [r.state for r in apply(app, [pid])] == ["applied"]  # journal 2
    applied = _files(root)
    with app.engine().begin() as conn:  # as the earlier code left journal 1: in conflict, the store not held
        repo.close_journal(conn, store_id, 1, "conflict", app.clock())
    done = cli("--db", app.db_url, "resolve", "1", "--json")
    assert done.code == 0
    assert {k: v for k, v in json.loads(done.out).items() if k in ("restored", "kept", "later", "state")} == {
        "restored": [], "kept": [], "later": [".dreamd-archive/b.md", "MEMORY.md", "b.md"], "state": "applied",
    }  # fmt: skip
    _assert_as_before(app, store, root, pid, applied, "applied")
    _reverts(app, store, root, pid, before)
