"""How a blob's bytes are kept: whole, compressed, or as a delta of another blob.

A delta keeps only what differs from its base: what the two share at the start and at the
end is the base's, the middle is stored. An edit of one place in a file (an index line
removed, a line appended to a note) costs that place, not the file again. A delta is
``prefix length, suffix length`` (8 bytes each, big-endian) then the middle.

A whole blob of ``COMPRESS_FROM`` bytes or more is kept zlib-compressed when that saves a
quarter (an index of 10,000 entries, rewritten by every apply, is kept whole at the end of
each delta chain). Decoding checks nothing itself: ``repo.get_blobs`` hashes every blob it
rebuilds.
"""

from __future__ import annotations

import struct
import zlib

from daemon.core.affixes import common_prefix, common_suffix

_HEAD = struct.Struct(">QQ")
COMPRESS_FROM = 4096


def pack(data: bytes) -> tuple[bytes, bool]:
    """What to store for a whole blob, and whether it is compressed."""
    if len(data) < COMPRESS_FROM:
        return data, False
    packed = zlib.compress(data, 1)  # fast: most of the saving, a fraction of the time
    return (packed, True) if len(packed) * 4 <= len(data) * 3 else (data, False)


def unpack(stored: bytes, packed: bool) -> bytes:
    return zlib.decompress(stored) if packed else stored


def encode(base: bytes, data: bytes) -> bytes:
    """``data`` as a delta of ``base``."""
    prefix = common_prefix(base, data)
    suffix = common_suffix(base[prefix:], data[prefix:])  # the suffix may not overlap the prefix
    return _HEAD.pack(prefix, suffix) + data[prefix : len(data) - suffix]


def decode(base: bytes, delta: bytes) -> bytes:
    prefix, suffix = _HEAD.unpack_from(delta)
    return base[:prefix] + delta[_HEAD.size :] + (base[len(base) - suffix :] if suffix else b"")


def worth_it(delta: bytes, data: bytes) -> bool:
    """A delta is kept only when it is at most half the blob (small blobs stay whole)."""
    return len(delta) * 2 <= len(data)
