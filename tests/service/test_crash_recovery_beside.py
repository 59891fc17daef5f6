"""Crash safety with the archive root beside the notes (Serena, Claude Code): a process
SIGKILLed at each journal step of an apply or revert leaves every file whole, nothing written
outside the two roots, and recovery finishes the job in both roots."""

from __future__ import annotations

import pytest

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal

from .test_crash_recovery import CHILD, _run_child

NOTES = {
    "core.md": "# Core\nRead `mem:auth/login` first.\n",
    "tokens.md": "# Tokens\nScripts use tokens; browsers use `mem:auth/login`.\n",
    "overview.md": "# Overview\nSessions: `mem:auth/login_copy`.\n",
    "auth/login.md": "# Login\nThe form posts to /api/session and sets the sid cookie.\n",
    "auth/login_copy.md": "# Login\nThe form posts to /api/session and sets the sid cookie.\n",
}
ARCHIVED = "memories.dreamd-archive/auth/login_copy.md"


@pytest.fixture
def accepted(make_store, make_app, tmp_path):
    """A Serena store (memories/ inside .serena/) with one accepted merge whose copy goes to the archive beside it."""
    root = make_store(NOTES, name=".serena/memories")
    (root.parent / "project.yml").write_text("project_name: demo\n")
    app = make_app()
    (merge,) = [o for o in run_pass(app, adhoc_store(root, "serena")).outcomes if o.planned.draft.kind == "merge"]
    decide(app, merge.id, "accept")
    view = get_proposal(app, merge.id)
    assert sorted(view.paths) == ["auth/login.md", "auth/login_copy.md", ARCHIVED, "overview.md"]
    app.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return root, merge.id, script


def _tree(place):
    return {str(p.relative_to(place)): p.read_bytes() for p in sorted(place.rglob("*")) if p.is_file()}


def _outside(root):
    """Every file of .serena/ that is in neither of the store's roots."""
    return {k: v for k, v in _tree(root.parent).items() if not k.startswith(("memories/", "memories.dreamd-archive/"))}


def _folders(place):
    return {str(p.relative_to(place)) for p in place.rglob("*") if p.is_dir()}


def _files(root):
    notes = {f"notes/{k}": v for k, v in _tree(root).items()}
    archive = root.parent / "memories.dreamd-archive"
    return notes | ({f"archive/{k}": v for k, v in _tree(archive).items()} if archive.exists() else {})


@pytest.mark.parametrize("plan", ["before:1", "before:2", "after:3", "replace:1", "replace:2"])
def test_apply_killed_at_each_step_recovers_in_both_roots(accepted, plan, db_url, cli, make_app):
    """After a SIGKILL at this step every file is whole, and verify's recovery leaves the merge applied: the copy in the archive beside, its reference rewritten, nothing else touched."""
    root, pid, script = accepted
    outside = _outside(root)
    _run_child(script, plan, db_url, "apply", pid)
    verified = cli("--db", db_url, "verify", "--store", str(root))
    assert (verified.code, verified.out.splitlines()[-1]) == (0, f"{root}: clean")
    app = make_app()
    assert get_proposal(app, pid).state == "applied"
    files = _files(root)
    assert "notes/auth/login_copy.md" not in files and "archive/auth/login_copy.md" in files
    assert files["notes/overview.md"] == b"# Overview\nSessions: `mem:auth/login`.\n"
    assert not [k for k in files if ".dreamd-tmp-" in k]
    assert _outside(root) == outside == {"project.yml": b"project_name: demo\n"}


@pytest.mark.parametrize("plan", ["before:1", "replace:1"])
def test_revert_killed_mid_way_restores_both_roots(accepted, plan, db_url, cli, make_app):
    """A revert SIGKILLed mid-way is finished by recovery: the notes hold their exact first
    bytes, and the archive beside, which the apply created, is gone again as a finished
    revert leaves it."""
    root, pid, script = accepted
    first, folders = _files(root), _folders(root.parent)
    app = make_app()
    assert [r.state for r in apply(app, [pid])] == ["applied"]
    app.close()
    assert "memories.dreamd-archive/auth" in _folders(root.parent)
    _run_child(script, plan, db_url, "revert", pid)
    assert cli("--db", db_url, "verify", "--store", str(root)).code == 0
    assert get_proposal(make_app(), pid).state == "reverted"
    assert _files(root) == first
    assert _folders(root.parent) == folders
