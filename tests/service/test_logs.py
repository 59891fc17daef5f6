"""Structured logs: passes and applies are logged by id and path, never with note text."""

from __future__ import annotations

from structlog.testing import capture_logs

from daemon.config import adhoc_store
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

SECRET = "sk-live-4f9a0c1e7b"


def test_a_pass_logs_its_outcome_with_store_and_pass_id(make_store, make_app):
    """pass.completed carries the store, the pass id and the counts."""
    root = make_store({"a.md": "same words here\n", "b.md": "Same  words here\n"})
    with capture_logs() as logs:
        report = run_pass(make_app(), adhoc_store(root, "generic"))
    (done,) = [e for e in logs if e["event"] == "pass.completed"]
    assert (done["store"], done["pass_id"], done["pending"]) == (str(root), report.pass_id, 1)


def test_skipped_files_are_logged_by_path_and_reason(make_store, make_app):
    """A binary file is logged as skipped with its reason."""
    root = make_store({"a.md": "text\n", "blob.md": b"\x00\x01binary"})
    with capture_logs() as logs:
        run_pass(make_app(), adhoc_store(root, "generic"))
    assert {(e["path"], e["reason"]) for e in logs if e["event"] == "file.skipped"} == {("blob.md", "binary")}


def test_no_log_event_carries_note_text(make_store, make_app):
    """Through a pass, an accept and an apply, no logged value contains a note's content."""
    body = f"Deploy key is {SECRET} and rotates monthly.\n"
    root = make_store({"MEMORY.md": "# M\n- [A](a.md)\n", "a.md": body, "b.md": body.upper()})
    app = make_app()
    with capture_logs() as logs:
        report = run_pass(app, adhoc_store(root, "deepcode"))
        merge = next(o for o in report.outcomes if o.planned.draft.kind == "merge")
        decide(app, merge.id, "accept")
        apply(app, [merge.id])
    assert {e["event"] for e in logs} >= {"pass.completed", "proposal.applied"}
    assert not [e for e in logs if SECRET.casefold() in repr(e).casefold()]
