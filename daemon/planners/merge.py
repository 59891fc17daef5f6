"""Merge text: the survivor's bytes, then whatever the retired notes add; or, for notes that
are one text each, the longest of their texts.

A near-duplicate merge must not drop a fact. Rather than guess which wording is better,
the survivor stays byte for byte and every body line of a retired note that the survivor
lacks (compared with case and whitespace folded) is appended under a marker naming its
source, so a reviewer sees exactly what came from where. Where the agent shows a note as one
item, as written (a Dexto record's content is one item of its prompt: its reader model's
``one_text``), two texts glued would say the fact twice: the merge keeps the longest text
whole (``one_text``), and the sentences of the others it does not hold (``lossless``) are
what it drops, which makes it lossy; the provenance is the metadata's ``merged_from`` alone.

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
from daemon.planners.lossless import uncovered

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


def merged_data(survivor: Note, added: dict[str, list[str]]) -> bytes | None:
    """The survivor with ``added`` appended, one block per source under a marker naming it;
    None when empty."""
    if not added:
        return None
    blocks = "".join(MARKER.format(path=path) + "\n".join(lines) + "\n" for path, lines in added.items())
    newline = "\r\n" if b"\r\n" in survivor.data else "\n"
    head = survivor.data if not survivor.data or survivor.data.endswith(b"\n") else survivor.data + newline.encode()
    return head + blocks.replace("\n", newline).encode("utf-8")


def one_text(survivor: Note, others: Sequence[Note]) -> tuple[bytes | None, Note, list[str]]:
    """For notes that are one text each: the survivor's bytes holding the longest text of the
    group (None when that is its own; its header stays), the note that text is from, and
    the sentences of the others it does not hold, which the merge drops."""
    longest = max([survivor, *others], key=lambda n: len(n.body))  # the first on a tie: the survivor
    dropped = uncovered([n.body for n in (survivor, *others) if n is not longest], longest.body, [])
    data = None if longest is survivor else survivor.parts.header + longest.body.encode("utf-8")
    return data, longest, dropped


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
