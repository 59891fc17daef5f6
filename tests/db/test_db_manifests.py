"""Manifests as a base plus deltas: every recorded state rebuilds exactly, and k changed files cost k rows."""

from __future__ import annotations

import random

from sqlalchemy import func, insert, select

from daemon.core.hashing import root_hash
from daemon.db import repo
from daemon.db import schema as t
from daemon.db.queries import snapshots

from .helpers import add_store


def _blobs(conn, manifest):
    for h in set(manifest.values()) - set(conn.scalars(select(t.blobs.c.hash))):
        conn.execute(insert(t.blobs).values(hash=h, size=1, data=b"x"))


def _rows(conn, mid: int) -> int:
    entries = conn.scalar(select(func.count()).select_from(t.manifest_entries).where(t.manifest_entries.c.manifest_id == mid))
    drops = conn.scalar(select(func.count()).select_from(t.manifest_drops).where(t.manifest_drops.c.manifest_id == mid))
    return entries + drops


def _depth(conn, mid: int) -> int:
    return conn.scalar(select(t.manifests.c.depth).where(t.manifests.c.id == mid))


def _save(conn, store, manifest, **kw):
    _blobs(conn, manifest)
    return repo.save_manifest(conn, store, root_hash(manifest), manifest, **kw)


def test_a_random_history_rebuilds_every_manifest_exactly(engine):
    """200 states of a 500-file store, each changing, adding or dropping a few files (and now and
    then most of them): every manifest reads back equal to what was saved, however deep its chain."""
    rng = random.Random(7)
    state = {f"n{i:04d}.md": f"{i:064x}" for i in range(500)}
    saved: list[tuple[int, dict[str, str]]] = []
    with engine.begin() as conn:
        store = add_store(conn)
        for step in range(200):
            if step % 50 == 49:  # a reorganisation: most files change at once
                state = {p: f"{rng.getrandbits(256):064x}" for p in state}
            for _ in range(rng.randint(1, 6)):
                what = rng.random()
                if what < 0.5 and state:
                    state[rng.choice(sorted(state))] = f"{rng.getrandbits(256):064x}"
                elif what < 0.75 and state:
                    state.pop(rng.choice(sorted(state)))
                else:
                    state[f"new{step}-{rng.getrandbits(20)}.md"] = f"{rng.getrandbits(256):064x}"
            saved.append((_save(conn, store, state), dict(state)))
        assert all(repo.manifest_entries(conn, store, mid) == want for mid, want in saved)
        chains = conn.execute(select(t.manifests.c.depth, t.manifests.c.chain_rows, t.manifests.c.file_count)).all()
        assert max(depth for depth, _, _ in chains) > 32 and all(rows <= files for _, rows, files in chains)


def test_k_changed_files_cost_k_rows_and_the_first_manifest_is_full(engine):
    """A 1,000-file store: the first manifest holds 1,000 rows; the next, with 3 files changed,
    1 added and 1 removed, holds 5; an unchanged root adds nothing."""
    state = {f"n{i:04d}.md": f"{i:064x}" for i in range(1000)}
    with engine.begin() as conn:
        store = add_store(conn)
        first = _save(conn, store, state)
        changed = dict(state) | {"n0001.md": "a" * 64, "n0002.md": "b" * 64, "n0003.md": "c" * 64, "added.md": "d" * 64}
        del changed["n0999.md"]
        second = _save(conn, store, changed)
        assert (_rows(conn, first), _depth(conn, first)) == (1000, 0)
        assert (_rows(conn, second), _depth(conn, second)) == (5, 1)
        assert _save(conn, store, changed) == second
        assert repo.manifest_entries(conn, store, second) == changed and repo.manifest_entries(conn, store, first) == state


def test_a_chain_whose_rows_reach_the_store_size_or_its_depth_cap_and_a_change_of_most_files_start_full_again(engine, monkeypatch):
    """One file changing each time in a 101-file store: deltas until their rows would pass the
    store's 101 files, then a full manifest; with a depth cap of 5, full after 5 deltas; a
    manifest where most files changed is full."""
    state = {f"n{i:03d}.md": f"{i:064x}" for i in range(100)}
    with engine.begin() as conn:
        store = add_store(conn)
        depths = []
        for step in range(103):
            state = state | {"moving.md": f"{step + 1000:064x}"}
            depths.append(_depth(conn, _save(conn, store, state)))
        assert depths == [*range(102), 0]
        most = {p: f"{int(h, 16) + 7:064x}" for p, h in state.items()}
        assert _depth(conn, _save(conn, store, most)) == 0
        monkeypatch.setattr(snapshots, "MAX_DELTA_DEPTH", 5)
        capped = [_depth(conn, _save(conn, store, most | {"moving.md": f"{step + 5000:064x}"})) for step in range(7)]
        assert capped == [1, 2, 3, 4, 5, 0, 1]


def test_a_given_base_is_used_and_another_store_is_never_a_base(engine):
    """``base=(id, entries)`` makes the delta against that manifest; a manifest of another store is not read."""
    state = {f"n{i:03d}.md": f"{i:064x}" for i in range(50)}
    with engine.begin() as conn:
        store, other = add_store(conn, "one"), add_store(conn, "two")
        first = _save(conn, store, state)
        _save(conn, other, {"x.md": "e" * 64})
        nxt = state | {"n000.md": "f" * 64}
        mid = _save(conn, store, nxt, base=(first, state))
        assert (_rows(conn, mid), _depth(conn, mid)) == (1, 1)
        theirs = _save(conn, other, {"x.md": "e" * 64, "y.md": "f" * 64})
        assert repo.manifest_entries(conn, other, theirs) == {"x.md": "e" * 64, "y.md": "f" * 64}
        assert repo.manifest_entries(conn, other, mid) == {}  # not that store's manifest
