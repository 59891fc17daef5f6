"""Content addressing: BLAKE3 hashes of bytes, and the root hash of a manifest."""

from __future__ import annotations

from collections.abc import Mapping

import blake3


def hash_bytes(data: bytes) -> str:
    """Hex BLAKE3 digest of ``data`` (64 characters)."""
    return blake3.blake3(data).hexdigest()


def root_hash(manifest: Mapping[str, str]) -> str:
    """Hash of a whole store: every ``path\\0hash\\n`` in path order.

    Two stores with the same files and bytes have the same root hash, whatever order
    they were scanned in.
    """
    h = blake3.blake3()
    for path in sorted(manifest):
        h.update(path.encode("utf-8") + b"\0" + manifest[path].encode("ascii") + b"\n")
    return h.hexdigest()


def hash_text(text: str) -> str:
    return hash_bytes(text.encode("utf-8"))


def manifest_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, list[str]]:
    """Paths added, removed and modified between two manifests (path -> hash), sorted."""
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "modified": sorted(p for p in set(before) & set(after) if before[p] != after[p]),
    }
