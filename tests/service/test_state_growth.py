"""State that grows with churn: an edited note, an apply that changes one index line and a
revert cost what changed, and every recorded state still comes back byte for byte."""

from __future__ import annotations

from sqlalchemy import select

from daemon.config import adhoc_store
from daemon.core.hashing import hash_bytes
from daemon.db import repo
from daemon.db import schema as t
from daemon.service.apply.applying import apply, revert
from daemon.service.review.audit import verify
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

FACT = "The staging database is reset every Monday at 06:00 UTC, so fixtures must be reloaded before the weekly demo."


def _store(make_store):
    """A deepcode store of 300 notes and its MEMORY.md index, with one exact-duplicate pair."""
    files = {f"note{i:03d}.md": f"# Note {i}\n\nService {i} listens on port {9000 + i}; its logs rotate daily at {i % 24}:00.\n" for i in range(300)}
    files |= {"dup-a.md": f"# Staging\n\n{FACT}\n", "dup-b.md": f"# Staging\n\n{FACT}\n"}
    files["MEMORY.md"] = "# Memory\n\n" + "".join(f"- [{p}]({p}): {p.removesuffix('.md')}\n" for p in sorted(files))
    return adhoc_store(make_store(files), "deepcode")


def _stored(app, digest: str):
    with app.engine().connect() as conn:
        return conn.execute(select(t.blobs.c.data, t.blobs.c.depth, t.blobs.c.size).where(t.blobs.c.hash == digest)).one()


def _manifest_rows(app) -> list[int]:
    """Rows (entries and drops) of each manifest, oldest first."""
    with app.engine().connect() as conn:
        ids = conn.scalars(select(t.manifests.c.id).order_by(t.manifests.c.id)).all()
        count = lambda table, mid: len(conn.execute(select(table.c.path).where(table.c.manifest_id == mid)).all())  # noqa: E731
        return [count(t.manifest_entries, m) + count(t.manifest_drops, m) for m in ids]


def test_an_apply_stores_the_edited_index_as_its_change_and_revert_gives_every_byte_back(make_store, make_app):
    """The merge drops one line of a 300-line index: the new index costs that change in the
    database (a delta of the old one), each manifest after the first holds only what changed,
    and revert restores the exact index, read back through the delta."""
    store = _store(make_store)
    app = make_app()
    index = (store.root / "MEMORY.md").read_bytes()
    (merge,) = [o for o in run_pass(app, store).outcomes if o.state == "pending" and o.planned.draft.kind == "merge"]
    decide(app, merge.id, "accept")
    assert [r.state for r in apply(app, [merge.id])] == ["applied"]
    edited = (store.root / "MEMORY.md").read_bytes()
    data, depth, size = _stored(app, hash_bytes(edited))
    assert (depth, size) == (1, len(edited)) and len(data) < 200 < len(edited) // 40
    assert _manifest_rows(app)[0] > 300 and all(rows <= 3 for rows in _manifest_rows(app)[1:])
    assert revert(app, merge.id).state == "reverted"
    assert (store.root / "MEMORY.md").read_bytes() == index
    assert verify(app, store).clean


def test_a_pass_after_a_note_grew_a_line_stores_that_line(make_store, make_app, clock):
    """One note edited (a line appended): the next pass stores its new bytes as a delta of the
    old ones and a manifest of one row; history gives both versions back exactly."""
    store = _store(make_store)
    app = make_app()
    run_pass(app, store)
    note = store.root / "note007.md"
    old = note.read_bytes()
    note.write_bytes(old + b"It moved to port 9907 in March.\n")
    clock.advance(minutes=5)
    report = run_pass(app, store)
    assert report.external_changes["modified"] == ["note007.md"]
    data, depth, _ = _stored(app, hash_bytes(note.read_bytes()))
    assert depth == 1 and data.endswith(b"It moved to port 9907 in March.\n") and len(data) < 64
    assert _manifest_rows(app)[-1] == 1
    with app.engine().connect() as conn:
        got = repo.get_blobs(conn, [hash_bytes(old), hash_bytes(note.read_bytes())])
    assert got == {hash_bytes(old): old, hash_bytes(note.read_bytes()): note.read_bytes()}
