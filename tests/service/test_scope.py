"""Invariant 5: nothing outside the store root is read or written (symlinks, "..", absolute names)."""

from __future__ import annotations

import json
import os

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import UnsafePathError
from daemon.core.hashing import hash_bytes
from daemon.core.proposals import Change
from daemon.core.validate import unsafe_path_reason
from daemon.db import repo
from daemon.diffs.git import unified_diff
from daemon.service.apply.applying import apply
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal, list_proposals

SECRET = "SECRET-7f3a91-do-not-leak"


@pytest.fixture
def leaky_store(make_store, tmp_path):
    """A deepcode store whose MEMORY.md lists a symlinked note, plus a symlinked folder, both pointing outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"---\nname: Secret\n---\n{SECRET}\nThe service listens on port 8080.\n")
    (outside / "nested").mkdir()
    (outside / "nested" / "deep.md").write_text(f"{SECRET} in a folder\n")
    root = make_store({
        "MEMORY.md": "# Memory\n\n- [Port](port.md) — the port\n- [Leak](leak.md) — a symlink\n",
        "port.md": "---\nname: Port\n---\nThe service listens on port 8080.\n",
    })
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside / "nested", root / "linked")
    return root, outside


def _db_bytes(db_path) -> bytes:
    return b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())


def test_symlinks_out_of_the_store_are_skipped_and_never_read(leaky_store, make_app, db_path, cli, clock):
    """The secret behind two symlinks appears in no proposal, diff, event, blob, database byte or CLI output."""
    root, outside = leaky_store
    app = make_app()
    report = run_pass(app, adhoc_store(root, "deepcode"))
    assert [(s.path, s.reason) for s in report.skipped_files] == [("leak.md", "symlink"), ("linked", "symlink")]
    for proposal in list_proposals(app):
        decide(app, proposal.id, "accept")
    clock.advance(minutes=1)
    apply(app)
    outputs = [
        cli("--db", f"sqlite:///{db_path}", "pass", "--store", str(root), "--preset", "deepcode", "--dry-run", "--json").out,
        cli("--db", f"sqlite:///{db_path}", "proposals", "--json").out,
        cli("--db", f"sqlite:///{db_path}", "log", "--json").out,
    ]
    proposals = list_proposals(app)
    assert proposals and all(SECRET not in json.dumps(p.as_json()) for p in proposals)
    assert SECRET not in json.dumps(event_log(app))
    with app.engine().connect() as conn:
        assert all(SECRET.encode() not in data for data in repo.get_blobs(conn, _all_blob_hashes(conn)).values())
    assert SECRET.encode() not in _db_bytes(db_path)
    assert all(SECRET not in out for out in outputs)
    assert (root / "leak.md").is_symlink() and (root / "linked").is_symlink()
    assert (outside / "secret.md").read_text().startswith("---\nname: Secret\n")


def _all_blob_hashes(conn):
    from sqlalchemy import select

    from daemon.db import schema as t

    return list(conn.scalars(select(t.blobs.c.hash)))


def test_symlinked_note_listed_in_index_is_proposed_as_dangling_not_followed(leaky_store, make_app):
    """The index entry for the symlinked note is dropped as dangling, because the note is not read."""
    root, _ = leaky_store
    report = run_pass(make_app(), adhoc_store(root, "deepcode"))
    reindex = [o for o in report.outcomes if o.planned.draft.kind == "reindex"]
    assert [o.planned.draft.index_drop for o in reindex] == [("leak.md",)]


def _hand_made_proposal(app, store_id, path, data, now):
    """Insert an accepted-ready pending proposal that writes ``data`` to ``path`` (bypassing validation)."""
    digest = hash_bytes(data)
    # a real diff for a safe path (results are rebuilt from it); unsafe paths never get that far
    diff = "" if unsafe_path_reason(path) else unified_diff(Change(base={path: None}, result={path: digest}, data={digest: data}))
    values = {
        "pass_id": None, "kind": "reindex", "state": "pending", "source": "detector:hand@1", "confidence": 1.0,
        "lossy": False, "title": f"write {path}", "rationale": "hand-made", "evidence": {"v": 1, "items": []},
        "change_key": hash_bytes(path.encode()), "diff": diff, "state_reason": None, "created_at": now, "updated_at": now,
    }  # fmt: skip
    with app.engine().begin() as conn:
        repo.put_blobs(conn, {digest: data})
        return repo.add_proposal(conn, store_id, values, {path: (None, digest)})


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "nested-dotdot"])
def test_proposal_naming_a_path_outside_the_store_is_refused_at_apply(kind, make_store, make_app, tmp_path, clock, snapshot_tree):
    """An accepted proposal whose file is ``../escape.md``, an absolute path or ``sub/../../x`` is refused with UnsafePathError; nothing is written."""
    root = make_store({"a.md": "---\nname: A\n---\nalpha\n"})
    escape = tmp_path / "escape.md"
    path = {"dotdot": "../escape.md", "absolute": str(escape), "nested-dotdot": "sub/../../escape.md"}[kind]
    app = make_app()
    run_pass(app, adhoc_store(root, "generic"))
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, str(root)).id
    pid = _hand_made_proposal(app, store_id, path, b"escaped\n", clock())
    decide(app, pid, "accept")
    before_tmp = sorted(p.name for p in tmp_path.iterdir())
    before_store = snapshot_tree(root)
    with pytest.raises(UnsafePathError) as refused:
        apply(app, [pid])
    assert str(refused.value).startswith(f"proposal {pid} is refused: path {path!r} ")
    assert not escape.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before_tmp
    assert snapshot_tree(root) == before_store
    assert get_proposal(app, pid).state == "accepted"


def test_cli_apply_of_escaping_proposal_prints_one_line_and_exits_3(make_store, make_app, tmp_path, clock, db_url, cli):
    """``dreamd apply`` of a ``../escape.md`` proposal exits 3 with one error line and writes nothing outside."""
    root = make_store({"a.md": "alpha\n"})
    app = make_app()
    run_pass(app, adhoc_store(root, "generic"))
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, str(root)).id
    pid = _hand_made_proposal(app, store_id, "../escape.md", b"escaped\n", clock())
    decide(app, pid, "accept")
    result = cli("--db", db_url, "apply", str(pid))
    assert result.code == 3
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"error[unsafe-path]: proposal {pid} is refused: path '../escape.md' ")
    assert not (tmp_path / "escape.md").exists()


def test_proposal_writing_through_a_symlinked_folder_writes_nothing_outside(leaky_store, make_app, clock, tmp_path):
    """A hand-made proposal for ``linked/new.md`` (a symlinked folder) is not applied and creates nothing in the outside folder."""
    root, outside = leaky_store
    app = make_app()
    run_pass(app, adhoc_store(root, "deepcode"))
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, str(root)).id
    pid = _hand_made_proposal(app, store_id, "linked/new.md", b"through the link\n", clock())
    decide(app, pid, "accept")
    (result,) = apply(app, [pid])
    assert result.state == "stale"
    assert sorted(p.name for p in (outside / "nested").iterdir()) == ["deep.md"]
