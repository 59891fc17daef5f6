"""Empty and stub notes: a file with nothing to say, which the agent still lists and loads.

Agents create a note and never fill it, or a tool seeds one with a placeholder ("TODO",
"Add content here"). What is left is no body at all, a title only (a heading, a ``name``), or
placeholder text; each costs a lookup and says nothing. What counts as saying something is
any line that is not a heading, a comment, a rule or a placeholder, and any frontmatter
value beyond the note's name, type, tags and dates (a ``description`` is content). Such a
note is proposed for soft-expiry: marked, out of the index, never deleted. Fairly sure, 0.8:
an empty note may be a place someone meant to fill, which the reviewer knows.
"""

from __future__ import annotations

import re

from daemon.core.notes import Note
from daemon.core.proposals import SOFT_EXPIRE, Draft, Evidence
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line
from daemon.planners.survivor import can_retire

CONFIDENCE = 0.8
# frontmatter keys that name or file a note rather than say something
IDENTITY_KEYS = frozenset({
    "name", "title", "type", "tags", "status", "id", "metadata", "created", "created_at", "updated", "updated_at",
    "modified", "date", "author", "pinned",
})  # fmt: skip
PLACEHOLDERS = frozenset({
    "todo", "tbd", "tba", "wip", "placeholder", "empty", "none", "none yet", "n a", "nothing yet", "nothing here yet",
    "no content", "no content yet", "no notes yet", "coming soon", "to be written", "to be filled in", "to do",
    "fill in", "fill this in", "add content here", "add notes here", "write here", "write your notes here",
    "notes go here", "content goes here", "lorem ipsum",
})  # fmt: skip
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_RULE = re.compile(r"^\s*([-*_=])(\s*\1){2,}\s*$")
_FOLD = re.compile(r"[^\w]+")


def said(line: str) -> str:
    """A line reduced to its words, lower case: ``**TODO:**`` reads ``todo``."""
    return " ".join(_FOLD.sub(" ", line.casefold()).split())


def stub_kind(note: Note) -> str | None:
    """"empty", "title only" or "placeholder only" when the note says nothing; else None."""
    if any(_speaks(value) for key, value in note.meta.items() if key not in IDENTITY_KEYS):
        return None
    body = _COMMENT.sub("", note.body)
    lines = [line for line in body.split("\n") if line.strip() and not _RULE.match(line)]
    text = [line for line in lines if not _HEADING.match(line)]
    if any(said(line) not in PLACEHOLDERS for line in text):
        return None
    if text:
        return "placeholder only"
    if lines or note.meta.get("name") or note.meta.get("title"):
        return "title only"
    return "empty"


def _speaks(value: object) -> bool:
    if isinstance(value, str):
        return bool(said(value)) and said(value) not in PLACEHOLDERS
    if isinstance(value, (list, tuple)):
        return any(_speaks(v) for v in value)
    if isinstance(value, dict):
        return any(_speaks(v) for v in value.values())
    return value is not None and value is not False


class StubNotes:
    name = "stub-note"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        drafts = []
        for note in ctx.view.live_notes():
            kind = stub_kind(note) if can_retire(ctx.view, note) and note.path not in ctx.retiring else None
            if kind is not None:
                drafts.append(self._draft(note, kind))
        return drafts

    def _draft(self, note: Note, kind: str) -> Draft:
        what = {
            "empty": "has no text at all",
            "title only": "has a title and nothing else",
            "placeholder only": "holds only placeholder text",
        }[kind]
        evidence = first_body_line(note)
        return Draft(
            kind=SOFT_EXPIRE,
            source=source_of(self),
            confidence=CONFIDENCE,
            title=f"Expire {note.path}: {kind}",
            rationale=(
                f"{note.path} {what}: no line beyond headings, comments and placeholders, and no frontmatter beyond its "
                "name, type, tags and dates. The agent still lists and loads it for nothing. Expiring marks it and takes it "
                "out of the index; it is not deleted, and a person decides whether it was a place meant to be filled."
            ),
            evidence=(evidence,) if evidence else _header(note),
            retire=(note.path,),
            reason=f"{kind} note",
        )


def _header(note: Note) -> tuple[Evidence, ...]:
    """For a note with no body line: its first frontmatter line (its name, usually), if any."""
    inner = note.lines[1 : note.parts.header.count(b"\n") - 1]
    first = next(((number, line) for number, line in enumerate(inner, 2) if line.strip()), None)
    return (Evidence(note.path, first[0], first[0], first[1].strip()),) if first else ()
