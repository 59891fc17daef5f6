"""A pass over a store whose bytes and due times have not changed is recorded as skipped and does nothing else."""

from __future__ import annotations

from sqlalchemy import func, select

from daemon.config import adhoc_store
from daemon.db import schema as t
from daemon.service.review.audit import history
from daemon.service.passes.run import run_pass

STORE = {
    "MEMORY.md": "# M\n\n- [Status](status.md) — this week\n- [Ports](ports.md) — ports\n",
    # due 2025-03-08T00:00Z, a week after the first pass at T0 = 2025-03-01T12:00Z
    "status.md": "---\nname: Status\nupdated_at: 2025-03-01\nttl_days: 7\n---\nMigrating the scheduler this week.\n",
    "ports.md": "---\nname: Ports\n---\nThe API listens on 8080.\n",
}


def _counts(app):
    with app.engine().connect() as conn:
        return {table.name: conn.scalar(select(func.count()).select_from(table)) for table in (t.proposals, t.snapshots, t.blobs)}


def test_second_pass_over_unchanged_store_is_skipped_and_records_nothing_else(make_store, make_app, clock):
    """The second pass an hour later is 'skipped' in its report and history, and adds no proposal, snapshot or blob."""
    store = adhoc_store(make_store(STORE), "deepcode")
    app = make_app()
    assert run_pass(app, store).status == "completed"
    counts = _counts(app)
    clock.advance(hours=1)
    report = run_pass(app, store)
    assert (report.status, report.outcomes) == ("skipped", [])
    assert _counts(app) == counts
    assert [p["status"] for p in history(app, store)["passes"]] == ["skipped", "completed"]


def test_pass_after_the_ttl_due_time_is_not_skipped_and_proposes_the_expiry(make_store, make_app, clock):
    """With no byte changed, a pass just past status.md's due time runs and proposes its soft-expiry."""
    store = adhoc_store(make_store(STORE), "deepcode")
    app = make_app()
    assert [o.planned.draft.kind for o in run_pass(app, store).outcomes] == []
    clock.advance(days=6, hours=11)  # 2025-03-07T23:00Z: still before the due time
    assert run_pass(app, store).status == "skipped"
    clock.advance(hours=2)  # 2025-03-08T01:00Z: past it
    report = run_pass(app, store)
    assert report.status == "completed"
    assert [(o.state, o.planned.draft.kind, o.planned.draft.retire) for o in report.outcomes] == [("pending", "soft-expire", ("status.md",))]
    assert report.outcomes[0].planned.draft.reason == "ttl_days 7 elapsed on 2025-03-08"


def test_one_changed_byte_makes_the_next_pass_run(make_store, make_app, clock):
    """Changing a single byte of one note makes the next pass complete instead of skip."""
    root = make_store(STORE)
    store = adhoc_store(root, "deepcode")
    app = make_app()
    run_pass(app, store)
    data = bytearray((root / "ports.md").read_bytes())
    data[-2] = ord("1")  # 8080 -> 8081
    (root / "ports.md").write_bytes(bytes(data))
    clock.advance(minutes=1)
    assert run_pass(app, store).status == "completed"
    clock.advance(minutes=1)
    assert run_pass(app, store).status == "skipped"


def test_a_changed_store_setting_makes_the_next_pass_run(make_store, make_app, clock):
    """The same bytes under a different store setting (a pinned glob) are planned again rather than skipped."""
    from daemon.config import parse_config

    root = make_store(STORE)
    app = make_app()
    run_pass(app, adhoc_store(root, "deepcode"))
    config = parse_config({"stores": [{"name": str(root), "path": str(root), "preset": "deepcode", "settings": {"pinned": ["ports.md"]}}]})
    clock.advance(minutes=1)
    assert run_pass(make_app(config), config.stores[str(root)]).status == "completed"
