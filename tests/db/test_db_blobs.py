"""Blobs as deltas of an earlier version: exact bytes back, bounded chains, damage named."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import insert, select

from daemon.core.errors import StateError
from daemon.core.hashing import hash_bytes
from daemon.db import packing, repo
from daemon.db import schema as t

INDEX = b"".join(f"- [Note {i}](note-{i:05d}.md) - what note {i} is about\n".encode() for i in range(2000))


def _row(conn, digest: str):
    return conn.execute(select(t.blobs.c.data, t.blobs.c.base_hash, t.blobs.c.depth, t.blobs.c.size).where(t.blobs.c.hash == digest)).one()


def _edits(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(0, 3)):
        at = rng.randint(0, len(out))
        if rng.random() < 0.5:
            out[at:at] = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 6)))
        else:
            del out[at : at + rng.randint(0, 6)]
    return bytes(out)


def test_encode_then_decode_gives_every_edit_back_exactly():
    """Random bases and edits (inserts, deletions, empty sides, a rewrite): decode(encode) is the identity."""
    rng = random.Random(3)
    for _ in range(3000):
        base = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 9000 if rng.random() < 0.05 else 40)))
        data = _edits(rng, base) if rng.random() < 0.9 else bytes(rng.choice(b"ab") for _ in range(rng.randint(0, 12)))
        assert packing.decode(base, packing.encode(base, data)) == data


def test_an_index_with_one_line_removed_is_stored_as_that_change(engine):
    """The 2,000-line index, then the same with one line gone: the second costs a few bytes, reads back exact."""
    edited = INDEX.replace(b"- [Note 977](note-00977.md) - what note 977 is about\n", b"")
    first, second = hash_bytes(INDEX), hash_bytes(edited)
    with engine.begin() as conn:
        repo.put_blobs(conn, {first: INDEX})
        repo.put_blobs(conn, {second: edited}, bases={second: first})
        data, base, depth, size = _row(conn, second)
        assert (base, depth, size) == (first, 1, len(edited)) and len(data) == 16
        assert repo.get_blobs(conn, [first, second]) == {first: INDEX, second: edited}
        assert _row(conn, first)[1:3] == (None, 0)


def test_a_base_not_stored_a_rewrite_or_a_small_blob_stays_whole(engine):
    """No delta when the base is missing, when most of the blob differs, or when the blob is tiny."""
    other = bytes(reversed(INDEX))
    with engine.begin() as conn:
        repo.put_blobs(conn, {hash_bytes(INDEX): INDEX})
        repo.put_blobs(conn, {hash_bytes(b"x" * 100): b"x" * 100}, bases={hash_bytes(b"x" * 100): "0" * 64})
        repo.put_blobs(conn, {hash_bytes(other): other}, bases={hash_bytes(other): hash_bytes(INDEX)})
        repo.put_blobs(conn, {hash_bytes(b"ab"): b"ab"}, bases={hash_bytes(b"ab"): hash_bytes(b"x" * 100)})
        assert all(_row(conn, hash_bytes(d))[2] == 0 for d in (b"x" * 100, other, b"ab"))


def test_a_chain_stops_at_its_cap_and_every_version_reads_back(engine):
    """MAX_BLOB_DEPTH edits in a row are deltas; the next is whole again; all read back exactly."""
    versions, data = [], INDEX
    with engine.begin() as conn:
        repo.put_blobs(conn, {hash_bytes(data): data})
        versions.append(data)
        for i in range(repo.MAX_BLOB_DEPTH + 1):
            new = data + f"- [Added {i}](added-{i}.md)\n".encode()
            repo.put_blobs(conn, {hash_bytes(new): new}, bases={hash_bytes(new): hash_bytes(data)})
            versions.append(new)
            data = new
        depths = [_row(conn, hash_bytes(v))[2] for v in versions]
        assert depths == [*range(repo.MAX_BLOB_DEPTH + 1), 0]
        assert repo.get_blobs(conn, [hash_bytes(v) for v in versions]) == {hash_bytes(v): v for v in versions}


def test_a_delta_that_does_not_rebuild_its_hash_is_a_state_error(engine):
    """A damaged delta row (its middle bytes wrong) is refused when read, never returned."""
    edited = INDEX[:-10]
    with engine.begin() as conn:
        repo.put_blobs(conn, {hash_bytes(INDEX): INDEX})
        bad = packing.encode(INDEX, edited) + b"junk"
        conn.execute(insert(t.blobs).values(hash=hash_bytes(edited), size=len(edited), data=bad, base_hash=hash_bytes(INDEX), depth=1))
        with pytest.raises(StateError, match="does not rebuild to its hash"):
            repo.get_blobs(conn, [hash_bytes(edited)])


def test_a_large_whole_blob_is_kept_compressed_and_a_small_or_random_one_is_not(engine):
    """The 2,000-line index is stored zlib-compressed (a fraction of its size) and read back
    exact; a small note and random bytes are stored as they are."""
    small, noise = b"# Note\n\nshort\n", random.Random(5).randbytes(64_000)
    with engine.begin() as conn:
        repo.put_blobs(conn, {hash_bytes(d): d for d in (INDEX, small, noise)})
        packed = {d: conn.execute(select(t.blobs.c.packed, t.blobs.c.data).where(t.blobs.c.hash == hash_bytes(d))).one() for d in (INDEX, small, noise)}
        assert packed[INDEX][0] and len(packed[INDEX][1]) * 4 < len(INDEX)
        assert packed[small] == (False, small) and packed[noise] == (False, noise)
        assert repo.get_blobs(conn, [hash_bytes(d) for d in (INDEX, small, noise)]) == {hash_bytes(d): d for d in (INDEX, small, noise)}
