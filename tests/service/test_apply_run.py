"""Many accepted proposals of one store applied in one run: one lease, one look at the store,
each proposal still compare-and-swapped and journaled on its own, the recorded state exact."""

from __future__ import annotations

import pytest

from daemon.config import adhoc_store
from daemon.db import repo
from daemon.service.apply import applying
from daemon.service.apply.applying import apply
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal
from daemon.stores import port

FACT = "The staging database is reset every Monday at 06:00 UTC, so fixtures must be reloaded before the weekly demo."


def _store(make_store, pairs: int = 6):
    """``pairs`` exact-duplicate pairs (one merge each) among 40 unrelated notes."""
    files = {f"topic{i}.md": f"# Topic {i}\n\n{FACT} Topic {i} owns port {7000 + i}.\n" for i in range(pairs)}
    files |= {f"topic{i}-copy.md": files[f"topic{i}.md"] for i in range(pairs)}
    files |= {f"other{i:02d}.md": f"# Other {i}\n\nService {i} listens on port {9000 + i} and logs to /var/log/s{i}.\n" for i in range(40)}
    return adhoc_store(make_store(files), "generic")


def _accept_all(app, store) -> list[int]:
    ids = [o.id for o in run_pass(app, store).outcomes if o.state == "pending"]
    for pid in ids:
        decide(app, pid, "accept")
    return ids


def _recorded(app, store_id: int = 1) -> dict[str, str]:
    with app.engine().connect() as conn:
        snap = repo.latest_snapshot(conn, store_id)
        return repo.manifest_entries(conn, store_id, snap.manifest_id)


def test_a_run_looks_at_the_store_once_and_records_exactly_what_a_scan_finds(make_store, make_app, monkeypatch):
    """Six merges in one run: the store is scanned once (a glance), never once per proposal, and
    the snapshot the run leaves is byte for byte what a fresh scan of the store finds; verify is clean."""
    store = _store(make_store)
    app = make_app()
    ids = _accept_all(app, store)
    assert len(ids) == 6
    scans = []
    real_glance, real_scan = applying.glance, port.scan
    monkeypatch.setattr(applying, "glance", lambda *a: scans.append("glance") or real_glance(*a))
    monkeypatch.setattr(port, "scan", lambda *a: scans.append("scan") or real_scan(*a))
    assert [r.state for r in apply(app)] == ["applied"] * 6
    assert scans == ["glance"]
    assert _recorded(app) == real_scan(port.open_roots(store.root, store.settings), store.settings).manifest
    assert verify(app, store).clean


def test_each_proposal_of_a_run_is_still_compared_and_a_file_changed_mid_run_makes_only_its_own_stale(make_store, make_app):
    """After the first apply someone edits the copy the third proposal retires: that one goes
    stale, the others apply; the edit is never overwritten, and the next pass records it."""
    store = _store(make_store, pairs=3)
    app = make_app()
    ids = _accept_all(app, store)
    victim = store.root / "topic2-copy.md"

    def edit_after_first(done: int, total: int) -> None:
        if done == 1:
            victim.write_text(victim.read_text() + "Edited by hand meanwhile.\n")

    results = apply(app, ids, progress=edit_after_first)
    assert [r.state for r in results] == ["applied", "applied", "stale"]
    assert victim.read_text().endswith("Edited by hand meanwhile.\n")
    assert get_proposal(app, ids[2]).state == "stale"
    problems = verify(app, store).problems
    assert problems == ["topic2-copy.md: modified since dreamd last recorded the store"]
    report = run_pass(app, store)
    assert report.external_changes["modified"] == ["topic2-copy.md"]
    assert verify(app, store).clean


def test_a_change_outside_every_proposal_before_the_run_is_recorded_as_external_once(make_store, make_app):
    """A note no proposal touches, edited after the pass: the run's first snapshot records it as
    an external change (one store.changed event), and the run's last snapshot holds the edit."""
    store = _store(make_store, pairs=2)
    app = make_app()
    ids = _accept_all(app, store)
    (store.root / "other05.md").write_text("# Other 5\n\nMoved to port 9105.\n")
    assert [r.state for r in apply(app, ids)] == ["applied", "applied"]
    with app.engine().connect() as conn:
        changed = [e for e in repo.events(conn, 1) if e.type == "store.changed"]
    assert [e.payload["modified"] for e in changed] == [["other05.md"]]
    recorded = _recorded(app)
    scanned = port.scan(port.open_roots(store.root, store.settings), store.settings).manifest
    assert recorded == scanned and verify(app, store).clean


@pytest.mark.parametrize("order", ["given", "reversed"])
def test_proposals_of_two_stores_are_applied_store_by_store_in_the_order_given(make_store, make_app, order):
    """Ids of two stores interleaved: each store is one run, its proposals in the order given."""
    one, two = _store(make_store, pairs=2), adhoc_store(make_store({"a.md": f"# A\n\n{FACT}\n", "b.md": f"# A\n\n{FACT}\n"}, name="two"), "generic")
    app = make_app()
    first, second = _accept_all(app, one), _accept_all(app, two)
    ids = [first[0], second[0], first[1]]
    ids = ids if order == "given" else ids[::-1]
    results = apply(app, ids)
    assert sorted(r.proposal_id for r in results) == sorted(ids) and all(r.state == "applied" for r in results)
    by_store = [r.store for r in results]
    assert by_store == sorted(by_store, key=by_store.index)  # grouped
    assert verify(app, one).clean and verify(app, two).clean


def test_an_apply_of_a_run_reads_its_proposal_in_one_transaction_and_reuses_the_state_before(make_store, make_app):
    """Per apply after the first: the proposal's row, files and bytes come from one read
    transaction, and the manifest before it is the run's last one, not looked up again; the
    history is as exact as before (verify clean, every snapshot's manifest rebuilt)."""
    from sqlalchemy import event

    store = _store(make_store)
    app = make_app()
    assert len(_accept_all(app, store)) == 6
    statements: list[str] = []
    listener = lambda *args: statements.append(" ".join(args[2].split()[:4]))  # noqa: E731 - (conn, cursor, statement, ...)
    event.listen(app.engine(), "before_cursor_execute", listener)
    try:
        assert [r.state for r in apply(app)] == ["applied"] * 6
    finally:
        event.remove(app.engine(), "before_cursor_execute", listener)
    # each read once, then checked again in the write; and the one listing of the accepted
    assert statements.count("SELECT proposals.id, proposals.store_id, proposals.pass_id,") == 2 * 6 + 1
    assert sum(s.startswith("SELECT manifests.id") for s in statements) <= 2 * 6 + 2
    assert verify(app, store).clean
