"""Content addressing: BLAKE3 hashes of bytes, and the root hash of a manifest."""

from __future__ import annotations

import bisect
from collections.abc import Mapping

import blake3


def hash_bytes(data: bytes) -> str:
    """Hex BLAKE3 digest of ``data`` (64 characters)."""
    return blake3.blake3(data).hexdigest()


def root_hash(manifest: Mapping[str, str]) -> str:
    """Hash of a whole store: every ``path\0hash\n`` in path order.

    Two stores with the same files and bytes have the same root hash, whatever order
    they were scanned in.
    """
    # The bytes ``_entry`` makes of each path (a digest is hex), made as one text and encoded
    # once: 2.3 ms where 3.7 ms for 10,000 paths, paid by every pass, a no-op one included.
    return blake3.blake3("".join([f"{path}\0{manifest[path]}\n" for path in sorted(manifest)]).encode("utf-8")).hexdigest()


def _entry(path: str, digest: str) -> bytes:
    return path.encode("utf-8") + b"\0" + digest.encode("ascii") + b"\n"


class RunningRoot:
    """A manifest's ``root_hash`` kept as its paths change one by one: the entries stay
    encoded and in order, so a change costs a search and an insert, not a sort and an
    encoding of every path (an apply of a run in a 10,000-note store changes two or three)."""

    def __init__(self, manifest: Mapping[str, str]) -> None:
        self._paths = sorted(manifest)
        self._entries = [_entry(path, manifest[path]) for path in self._paths]
        self._digest: str | None = None  # kept until the next set(): an apply's root before is the last one's after

    def set(self, path: str, digest: str | None) -> None:
        """``path`` now holds ``digest`` (None: it is gone)."""
        self._digest = None
        at = bisect.bisect_left(self._paths, path)
        present = at < len(self._paths) and self._paths[at] == path
        if digest is None:
            if present:
                del self._paths[at], self._entries[at]
        elif present:
            self._entries[at] = _entry(path, digest)
        else:
            self._paths.insert(at, path)
            self._entries.insert(at, _entry(path, digest))

    def digest(self) -> str:
        if self._digest is None:
            self._digest = blake3.blake3(b"".join(self._entries)).hexdigest()
        return self._digest


def hash_text(text: str) -> str:
    return hash_bytes(text.encode("utf-8"))


def manifest_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    """Paths added, removed and modified between two manifests (path -> hash), sorted."""
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "modified": sorted(p for p in set(before) & set(after) if before[p] != after[p]),
    }
