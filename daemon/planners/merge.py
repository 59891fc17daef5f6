"""Lossless merge text: the survivor's bytes, then whatever the retired notes add.

A near-duplicate merge must not drop a fact. Rather than guess which wording is better,
the survivor stays byte for byte and every body line of a retired note that the survivor
lacks (compared with case and whitespace folded) is appended under a marker naming its
source, so a reviewer sees exactly what came from where. Where the agent shows the text
verbatim (a Dexto record's content is one line of its prompt), the lines are appended with no
marker and the provenance is the metadata's ``merged_from`` alone.

Votes, not copies: the survivor also records in its frontmatter which notes said the same
thing (``merged_from``, its own earlier merges included), so a fact learned three times
weighs three notes, not three rows. Only where the agent reads frontmatter as metadata
(its reader model's ``frontmatter``) and the survivor already has a block: a note without
one, or an agent that shows frontmatter as text, gets no block it never had. Notes are named
there by path, without the reader's ``name_prefix`` (a record by its id).
"""

from __future__ import annotations

from collections.abc import Sequence

from daemon.core import frontmatter
from daemon.core.errors import ValidationError
from daemon.core.notes import Note
from daemon.core.view import StoreView

MARKER = "\n<!-- merged from {path} by dreamd -->\n"
VOTES = "merged_from"


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


def merged_data(survivor: Note, added: dict[str, list[str]], *, marked: bool = True) -> bytes | None:
    """The survivor with ``added`` appended, one block per source (``marked``: under a marker
    naming it); None when empty."""
    if not added:
        return None
    head = lambda path: MARKER.format(path=path) if marked else ""  # noqa: E731
    blocks = "".join(head(path) + "\n".join(lines) + "\n" for path, lines in added.items())
    newline = "\r\n" if b"\r\n" in survivor.data else "\n"
    head = survivor.data if not survivor.data or survivor.data.endswith(b"\n") else survivor.data + newline.encode()
    return head + blocks.replace("\n", newline).encode("utf-8")


def merged_from(survivor: Note, retired: Sequence[Note], prefix: str = "") -> list[str]:
    """Every note folded into the survivor: its earlier ones, then each retired note's own
    earlier ones and the retired note itself; each once, named without ``prefix``."""
    name = lambda path: path.removeprefix(prefix)  # noqa: E731
    found = [*survivor.declared_paths(VOTES)]
    for note in retired:
        found += [*note.declared_paths(VOTES), name(note.path)]
    return [p for p in dict.fromkeys(found) if p != name(survivor.path)]


def with_votes(view: StoreView, survivor: Note, retired: Sequence[Note], data: bytes | None) -> bytes | None:
    """The survivor's new bytes (``data``, else its own) with ``merged_from`` set, where the
    preset allows it; else ``data`` as it was."""
    if not view.reader.frontmatter or survivor.pinned or not survivor.parts.has_frontmatter or survivor.frontmatter_error:
        return data
    try:
        return frontmatter.set_keys(survivor.data if data is None else data, {VOTES: merged_from(survivor, retired, view.reader.name_prefix)})
    except ValidationError:
        return data  # frontmatter dreamd cannot edit safely: the merge goes ahead without votes
