"""Edits, links and folders that change under an apply: what a person wrote is put back or kept,
never thrown away, and nothing outside the store is read or written."""

from __future__ import annotations

import os
import shlex
import shutil

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ApplyError
from daemon.db import repo
from daemon.db import schema as t
from daemon.service import recorded
from daemon.service.apply import journal
from daemon.service.apply.applying import apply
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.apply.resolving import resolve
from daemon.service.proposals import decide, get_proposal
from daemon.stores import files
from daemon.stores.files import temp_tag, write_atomic


def _accepted_merge(app, root):
    store = adhoc_store(root, "deepcode")
    merge = next(o for o in run_pass(app, store).outcomes if o.planned.draft.kind == "merge")
    decide(app, merge.id, "accept")
    view = get_proposal(app, merge.id)
    rewritten = next(p for p in sorted(view.base) if view.base[p] and view.result[p] and view.base[p] != view.result[p])
    return store, merge.id, rewritten


def _conflict_journal(app, store):
    with app.engine().connect() as conn:
        (entry,) = repo.unfinished_journals(conn, repo.find_store(conn, store.name).id, ("conflict",))
    return entry


def test_a_note_held_open_by_another_program_is_not_replaced(example_store, make_app):
    """A program holding the note open could write to it after any check: dreamd sees that (no
    write lease can be had), swaps its new file back out and writes nothing; what the program
    writes later lands in the note, not in a file dreamd removed."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    base = (example_store / rewritten).read_bytes()
    held = os.open(example_store / rewritten, os.O_WRONLY | os.O_APPEND)
    try:
        with pytest.raises(ApplyError, match=f"{rewritten} is open in another program"):
            apply(app, [pid])
        os.write(held, b"Written after dreamd gave up.\n")
    finally:
        os.close(held)
    assert (example_store / rewritten).read_bytes() == base + b"Written after dreamd gave up.\n"
    assert not [p for p in example_store.rglob("*") if files.TEMP_MARKER in p.name]
    entry = _conflict_journal(app, store)
    assert rewritten in resolve(app, entry.id).kept


def test_without_leases_a_write_in_the_last_instant_is_kept_and_put_back_by_resolve(example_store, make_app, monkeypatch):
    """Where no write lease is available (a note dreamd's user does not own), someone holding
    the note open may write after dreamd checked the displaced file: the bytes written before
    its last name is gone are read back, apply fails in one line (edit-raced) naming the caught
    file that holds them, the whole file is a blob and an event, the journal is a conflict, and
    resolve puts the note back with them and names the caught file, which it leaves."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    held = os.open(example_store / rewritten, os.O_WRONLY | os.O_APPEND)
    base = (example_store / rewritten).read_bytes()
    real = files._check_late

    def late(place, checked, keep):
        if place.rel == rewritten:
            os.write(held, b"A line written in the last instant.\n")
        return real(place, checked, keep)

    monkeypatch.setattr(files, "_alone", lambda fd: True)
    monkeypatch.setattr(files, "_check_late", late)
    with pytest.raises(ApplyError, match=f"{rewritten} was written to in the instant dreamd replaced it") as failed:
        apply(app, [pid])
    monkeypatch.undo()
    os.close(held)
    assert failed.value.__cause__.code == "edit-raced"
    entry = _conflict_journal(app, store)
    caught = f".dreamd-archive/{rewritten}.dreamd-caught-j{entry.id}.txt"  # DeepCode lists every file beside its notes
    assert f"what was written then (1 line) is in {caught} " in str(failed.value)
    assert (example_store / caught).read_bytes() == b"A line written in the last instant.\n"
    with app.engine().connect() as conn:
        raced = repo.displaced(conn, entry.store_id, entry.id)
        kept = repo.get_blobs(conn, raced.values())
    assert kept[raced[rewritten]] == base + b"A line written in the last instant.\n"
    assert any(f"journal {entry.id}" in p and "conflict" in p for p in verify(app, store).problems)

    done = resolve(app, entry.id)

    assert rewritten in done.returned and done.caught == [caught]
    assert (example_store / rewritten).read_bytes() == base + b"A line written in the last instant.\n"
    assert (example_store / caught).exists()  # the person's to read and remove
    assert get_proposal(app, pid).state == "stale"
    assert verify(app, store).problems == [
        f"{rewritten}: modified since dreamd last recorded the store",  # the late line: a person's edit
        f"{caught}: caught file, what someone wrote to a note while dreamd swapped it (read it, then delete it)",
    ]


def _racing(monkeypatch, path, before=None, after=None):
    """Call ``before`` right before dreamd leases and exchanges ``path`` (after its last hash
    check) and ``after`` right after the exchange: a person's writes at those instants."""
    real_lease, real_exchange = files._lease_before, files.folders.exchange
    done = []

    def lease_before(place):
        if place.rel == path and before and "before" not in done:
            done.append("before")
            before()
        return real_lease(place)

    def exchange(src_fd, src, dst_fd, dst):
        exchanged = real_exchange(src_fd, src, dst_fd, dst)
        if dst == os.path.basename(path) and after and "after" not in done:
            done.append("after")
            after()
        return exchanged

    monkeypatch.setattr(files, "_lease_before", lease_before)
    monkeypatch.setattr(files.folders, "exchange", exchange)


def _append(path, line):
    with open(path, "ab") as note:  # by path, as `echo >>` or an agent's append does
        note.write(line)


def test_an_edit_before_the_exchange_is_swapped_back_in_place(example_store, make_app, monkeypatch):
    """An edit landing after dreamd's last hash check but before its rename is found in the
    displaced file: the two are swapped back, the edit stays in place, the journal is a conflict."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    _racing(monkeypatch, rewritten, before=lambda: _append(example_store / rewritten, b"An edit in the last millisecond.\n"))
    with pytest.raises(ApplyError, match=f"{rewritten} changed while dreamd was writing; nothing of it was overwritten$"):
        apply(app, [pid])
    monkeypatch.undo()
    assert (example_store / rewritten).read_bytes().endswith(b"An edit in the last millisecond.\n")
    assert not [p for p in example_store.rglob("*") if files.TEMP_MARKER in p.name]
    entry = _conflict_journal(app, store)
    assert rewritten in resolve(app, entry.id).kept
    assert (example_store / rewritten).read_bytes().endswith(b"An edit in the last millisecond.\n")


def test_a_line_appended_after_the_exchange_follows_the_edit_back_in_place(example_store, make_app, monkeypatch):
    """Someone edits the note and appends one more line by path just after dreamd's file took
    its name (so into dreamd's file): the swap back puts the edit in place with that line at its
    end, in the order written; the error says so, and there is no caught file."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    base = (example_store / rewritten).read_bytes()
    _racing(monkeypatch, rewritten, before=lambda: _append(example_store / rewritten, b"An edit.\n"), after=lambda: _append(example_store / rewritten, b"And a line after it.\n"))
    with pytest.raises(ApplyError) as failed:
        apply(app, [pid])
    monkeypatch.undo()
    assert str(failed.value) == (f"{rewritten} changed while dreamd was writing; nothing of it was overwritten, and what was written "
                                 "to it while dreamd swapped it back (1 line) is back at its end")  # fmt: skip
    assert (example_store / rewritten).read_bytes() == base + b"An edit.\nAnd a line after it.\n"
    assert not [p for p in example_store.rglob("*") if files.TEMP_MARKER in p.name or ".dreamd-caught" in p.name]
    assert resolve(app, _conflict_journal(app, store).id).caught == []


def test_lines_whose_order_cannot_be_proven_go_to_a_caught_file_that_resolve_names_and_leaves(example_store, make_app, monkeypatch, cli):
    """The person's file is written to after the exchange as well (through a descriptor opened
    before it), so dreamd cannot tell which came first: the line that landed in dreamd's file
    goes to a caught file beside the note, where DeepCode does not list it; apply's error names
    it, never saying that nothing was overwritten; resolve names it and leaves it."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    base = (example_store / rewritten).read_bytes()
    held = os.open(example_store / rewritten, os.O_WRONLY | os.O_APPEND)

    def after():
        os.write(held, b"Through the open file.\n")
        os.close(held)  # closed before dreamd looks: no wait for it
        _append(example_store / rewritten, b"By path.\n")

    _racing(monkeypatch, rewritten, after=after)
    with pytest.raises(ApplyError) as failed:
        apply(app, [pid])
    monkeypatch.undo()
    entry = _conflict_journal(app, store)
    caught = f".dreamd-archive/{rewritten}.dreamd-caught-j{entry.id}.txt"
    assert str(failed.value) == (f"{rewritten} changed while dreamd was writing; it is back as it was, but what was written to it "
                                 f"meanwhile (1 line) landed in dreamd's file and is in {caught}, not in {rewritten}")  # fmt: skip
    assert (example_store / rewritten).read_bytes() == base + b"Through the open file.\n"
    assert (example_store / caught).read_bytes() == b"By path.\n"
    done = cli("--db", app.db_url, "resolve", str(entry.id))
    assert done.code == 0, done.err
    assert f"  caught {caught} (written to a note while dreamd swapped it; not removed: read it, then delete it)\n" in done.out
    assert (example_store / caught).read_bytes() == b"By path.\n"
    assert (example_store / rewritten).read_bytes() == base + b"Through the open file.\n"


def test_a_hard_linked_note_is_skipped_and_its_bytes_never_stored(make_store, make_app, tmp_path):
    """A note hard-linked to a file outside the store is reported and never read: its bytes
    are in no blob, diff or proposal, and a write to it is refused."""
    secret = b"---\nname: Outside\n---\nA secret that lives outside the store: port 8080.\n"
    root = make_store({"MEMORY.md": "# Memory\n", "a.md": secret.decode()})
    outside = tmp_path / "outside.md"
    outside.write_bytes(secret)
    os.link(outside, root / "linked.md")
    app = make_app()
    report = run_pass(app, adhoc_store(root, "deepcode"))
    assert ("linked.md", "hard-link") in [(s.path, s.reason) for s in report.skipped_files]
    with app.engine().connect() as conn:
        stored = [row.data for row in conn.execute(t.blobs.select())]
        diffs = [row.diff for row in conn.execute(t.proposals.select())]
    assert all(b"lives outside" not in data for data in stored if data != secret)  # a.md's own bytes are its own
    assert all("linked.md" not in d for d in diffs)
    with pytest.raises(files.UnsafePathError, match="hard-linked"):
        write_atomic(root, "linked.md", b"overwritten\n")
    assert outside.read_bytes() == secret


def test_reading_a_hard_linked_file_is_refused(tmp_path):
    (tmp_path / "outside.md").write_bytes(b"outside\n")
    store = tmp_path / "store"
    store.mkdir()
    os.link(tmp_path / "outside.md", store / "a.md")
    with pytest.raises(files.UnsafePathError, match="hard-linked"):
        files.read_file(store, "a.md")
    assert journal.on_disk(store, ["a.md"]) == {"a.md": "unreadable"}  # never passes a compare-and-swap


def test_a_store_folder_replaced_at_its_path_is_refused_until_adopted(example_store, make_app, cli, tmp_path):
    """A folder re-created at the registered path (same files, another inode) is not the store:
    apply and pass refuse it in one line (exit 3) and write nothing; ``pass --adopt-root`` takes it."""
    app = make_app()
    store, pid, _ = _accepted_merge(app, example_store)
    moved = tmp_path / "moved"
    example_store.rename(moved)
    shutil.copytree(moved, example_store)
    before = {p: p.read_bytes() for p in example_store.rglob("*") if p.is_file()}
    db = app.db_url
    applied = cli("--db", db, "apply", str(pid))
    assert applied.code == 3
    assert applied.err.strip().splitlines()[-1].startswith(f"error[store-moved]: store {str(example_store)!r}: {example_store} is not the folder it was registered with")
    passed = cli("--db", db, "pass", "--store", str(example_store), "--preset", "deepcode")
    assert passed.code == 3 and "--adopt-root" in passed.err
    assert {p: p.read_bytes() for p in example_store.rglob("*") if p.is_file()} == before
    hint = passed.err.strip().splitlines()[-1].rsplit("(if the folder was restored or re-created on purpose: ", 1)[1].removesuffix(")")
    assert hint == f"dreamd pass {example_store} --adopt-root"
    adopted = cli("--db", db, *shlex.split(hint)[1:])  # exactly what the advice says
    assert adopted.code == 0, adopted.err
    assert cli("--db", db, "apply", str(pid)).code == 0
    with app.engine().connect() as conn:
        assert "store.adopted" in [e.type for e in conn.execute(t.events.select())]


def test_a_store_folder_replaced_by_a_symlink_is_refused_like_a_re_created_one(example_store, make_app, cli, tmp_path):
    """A symlink to another folder put at the registered path between pass and apply is not the
    store: apply and verify refuse it in one line (exit 3) and nothing is written in the folder it
    points to; the advice given (``pass NAME --adopt-root``) takes it under the store's own name."""
    app = make_app()
    store, pid, _ = _accepted_merge(app, example_store)
    outside = tmp_path / "outside"
    shutil.copytree(example_store, outside)
    shutil.rmtree(example_store)
    example_store.symlink_to(outside)
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    for command in (("apply", str(pid)), ("verify", str(example_store))):
        refused = cli("--db", app.db_url, *command)
        assert refused.code == 3, (command, refused.out, refused.err)
        assert refused.err.strip().splitlines()[-1].startswith(f"error[store-moved]: store {str(example_store)!r}: {example_store} is not the folder it was registered with")
        assert f"(a symlink there leads to {outside})" in refused.err
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert get_proposal(app, pid).state == "accepted"
    hint = refused.err.strip().rsplit("(if the folder was restored or re-created on purpose: ", 1)[1].removesuffix(")")
    assert cli("--db", app.db_url, *shlex.split(hint)[1:]).code == 0  # adopted under the store's own name
    assert cli("--db", app.db_url, "apply", str(pid)).code == 0


def test_a_store_folder_moved_and_reached_through_a_symlink_is_still_the_store(example_store, make_app, tmp_path):
    """The same folder (same device and inode) moved elsewhere, a symlink left at its old path: apply writes there."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    moved = tmp_path / "moved"
    example_store.rename(moved)
    example_store.symlink_to(moved)
    before = (moved / rewritten).read_bytes()
    apply(app, [pid])
    assert get_proposal(app, pid).state == "applied"
    assert (moved / rewritten).read_bytes() != before


def test_a_root_replaced_while_a_command_runs_is_refused(tmp_path):
    """The roots a command opened remember the folder: one swapped in afterwards gets no byte."""
    from daemon.stores.paths import open_roots

    store = tmp_path / "store"
    store.mkdir()
    (store / "a.md").write_bytes(b"a\n")
    roots = open_roots(store, ".dreamd-archive")
    store.rename(tmp_path / "away")
    store.mkdir()
    with pytest.raises(files.UnsafePathError, match="was replaced by another folder"):
        write_atomic(roots, "a.md", b"into the new folder\n")
    with pytest.raises(files.UnsafePathError, match="was replaced by another folder"):
        files.read_file(roots, "a.md")
    assert list(store.iterdir()) == []


def test_resolve_keeps_the_archive_copy_when_the_removed_note_was_re_created(example_store, make_app):
    """An apply that died after archiving a note and removing it, then the person re-created
    the note: resolve rolls back the rest but leaves the archive copy (the note's old bytes)."""
    app = make_app()
    store, pid, _ = _accepted_merge(app, example_store)
    view = get_proposal(app, pid)
    removed = next(p for p in view.base if view.base[p] and view.result[p] is None)
    archived = next(p for p in view.base if view.base[p] is None and view.result[p])
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
        proposal_files, blobs = recorded.proposal_bytes(conn, store_id, pid)
        steps = [{"path": p, "before": b, "after": r} for p, (b, r) in sorted(proposal_files.items()) if b != r]
        repo.put_blobs(conn, {r: blobs[r] for _, r in proposal_files.values() if r})
        journal_id = repo.open_journal(conn, store_id, pid, "apply", steps, app.clock())
    old = blobs[proposal_files[archived][1]]
    write_atomic(example_store, archived, old)  # dreamd archived the note, then removed it
    (example_store / removed).unlink()
    (example_store / removed).write_bytes(b"---\nname: new\n---\nWritten again by hand.\n")
    run_pass(app, store)  # recovery finds the conflict
    done = resolve(app, _conflict_journal(app, store).id)
    assert done.left == [archived] and removed in done.kept
    assert (example_store / archived).read_bytes() == old
    assert journal_id == _journal_ids(app, store)[-1]


def _journal_ids(app, store):
    with app.engine().connect() as conn:
        return [row.id for row in conn.execute(t.journal.select().order_by(t.journal.c.id))]


def _conflicted_journal(app, store, pid):
    """A journal of the proposal's steps, closed as a conflict before it wrote anything (a
    crash during recovery); its steps' bytes stored as blobs. The journal and the blobs."""
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store.name).id
        proposal_files, blobs = recorded.proposal_bytes(conn, store_id, pid)
        steps = [{"path": p, "before": b, "after": r} for p, (b, r) in sorted(proposal_files.items()) if b != r]
        repo.put_blobs(conn, {r: blobs[r] for _, r in proposal_files.values() if r})
        journal_id = repo.open_journal(conn, store_id, pid, "apply", steps, app.clock())
        repo.close_journal(conn, store_id, journal_id, "conflict", app.clock())
    return journal_id, blobs


def test_resolve_removes_a_temp_file_holding_a_start_of_its_journals_bytes(example_store, make_app):
    """A crash during recovery can leave a temp file of a journal that is then closed as a
    conflict: one holding dreamd's own bytes cut short is removed by resolve, and verify is clean again."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    journal_id, blobs = _conflicted_journal(app, store, pid)
    after = blobs[get_proposal(app, pid).result[rewritten]]
    leftover = example_store / ".dreamd-archive" / f".{rewritten}{files.TEMP_MARKER}{temp_tag(journal_id)}0123abcd"
    leftover.parent.mkdir(exist_ok=True)
    leftover.write_bytes(after[: len(after) // 2])
    assert any("leftover temporary file" in p for p in verify(app, store).problems)
    assert resolve(app, journal_id).caught == []
    assert not leftover.exists()
    assert verify(app, store).clean


def test_resolve_never_removes_a_temp_file_holding_bytes_no_one_else_has(example_store, make_app, cli):
    """A temp file of the journal holding dreamd's file with lines someone appended to it (a
    crash in the middle of a swap back): resolve moves those lines to a caught file beside the
    note, names it (in its output and its JSON), and leaves it; verify names it until it is gone."""
    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    journal_id, blobs = _conflicted_journal(app, store, pid)
    after = blobs[get_proposal(app, pid).result[rewritten]]
    archive = example_store / ".dreamd-archive"
    archive.mkdir(exist_ok=True)
    (archive / f".{rewritten}{files.TEMP_MARKER}{temp_tag(journal_id)}0123abcd").write_bytes(after + b"Appended by hand.\nAnd again.\n")
    (archive / f".{rewritten}{files.TEMP_MARKER}{temp_tag(journal_id)}4567cdef").write_bytes(b"Someone's own text.\n")
    done = cli("--db", app.db_url, "resolve", str(journal_id))
    assert done.code == 0, done.err
    caught = sorted(f".dreamd-archive/{rewritten}.dreamd-caught-j{journal_id}{n}.txt" for n in ("", "-2"))
    assert [line for line in done.out.splitlines() if "caught" in line] == [
        f"  caught {path} (written to a note while dreamd swapped it; not removed: read it, then delete it)" for path in caught
    ]
    assert sorted((example_store / path).read_bytes() for path in caught) == [b"Appended by hand.\nAnd again.\n", b"Someone's own text.\n"]
    assert not [p for p in archive.iterdir() if files.TEMP_MARKER in p.name]
    problems = verify(app, store).problems
    assert [p for p in problems if "caught" in p] == [f"{path}: caught file, what someone wrote to a note while dreamd swapped it (read it, then delete it)" for path in caught]
    for path in caught:
        (example_store / path).unlink()
    assert verify(app, store).clean


def test_verify_removes_a_temp_file_a_finished_journal_left(example_store, make_app):
    """A crash after a journal was closed (done) but before its temp files were swept leaves
    one behind: verify removes it under the lease (its bytes kept) and is clean, not unclean forever.
    A temp file of a journal that is still in conflict is left for resolve, and one that is
    not tagged with a journal is someone else's file and never touched."""
    from daemon.service.apply.applying import apply

    app = make_app()
    store, pid, rewritten = _accepted_merge(app, example_store)
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    (done_journal,) = _journal_ids(app, store)
    archive = example_store / ".dreamd-archive"
    leftover = archive / f".{rewritten}{files.TEMP_MARKER}{temp_tag(done_journal)}00ff00ff"
    leftover.write_bytes((example_store / rewritten).read_bytes())  # what the journal wrote: a sweep interrupted
    foreign = archive / f".{rewritten}{files.TEMP_MARKER}00ff00ff"
    foreign.write_bytes(b"not dreamd's\n")
    assert verify(app, store).clean
    assert not leftover.exists() and foreign.read_bytes() == b"not dreamd's\n"
