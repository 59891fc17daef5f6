"""Lossless merge text: the survivor's bytes, then whatever the retired notes add.

A near-duplicate merge must not drop a fact. Rather than guess which wording is better,
the survivor stays byte for byte and every body line of a retired note that the survivor
lacks (compared with case and whitespace folded) is appended under a marker naming its
source, so a reviewer sees exactly what came from where.
"""

from __future__ import annotations

from collections.abc import Sequence

from daemon.core.notes import Note

MARKER = "\n<!-- merged from {path} by dreamd -->\n"


def _fold(line: str) -> str:
    return " ".join(line.split()).casefold()


def additions(survivor: Note, others: Sequence[Note]) -> dict[str, list[str]]:
    """Per retired note, its body lines that neither the survivor nor an earlier note has."""
    seen = {_fold(line) for line in survivor.body.split("\n")}
    found: dict[str, list[str]] = {}
    for other in others:
        for line in other.body.split("\n"):
            folded = _fold(line)
            if folded and folded not in seen:
                seen.add(folded)
                found.setdefault(other.path, []).append(line.rstrip())
    return found


def merged_data(survivor: Note, added: dict[str, list[str]]) -> bytes | None:
    """The survivor with ``added`` appended, one marked block per source; None when empty."""
    if not added:
        return None
    blocks = "".join(MARKER.format(path=path) + "\n".join(lines) + "\n" for path, lines in added.items())
    newline = "\r\n" if b"\r\n" in survivor.data else "\n"
    head = survivor.data if not survivor.data or survivor.data.endswith(b"\n") else survivor.data + newline.encode()
    return head + blocks.replace("\n", newline).encode("utf-8")
