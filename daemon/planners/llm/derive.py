"""Evidence dreamd picks itself when a model names the right note but misquotes it.

A small model often names exactly the right notes with a correct rationale, then "quotes"
a paraphrase, or echoes an example from the schema. Refusing such a proposal throws away a
correct finding; accepting the quote would put words into a note's mouth. Instead, dreamd
takes the body line of the note that shares the most content words with the rationale and
the attempted quote, and marks it ``derived`` (the planner lowers the confidence). A note
none of whose lines shares a content word with them yields nothing: the proposal is refused
as before.
"""

from __future__ import annotations

import re

from daemon.core.proposals import Evidence
from daemon.planners.lossless import words
from daemon.planners.llm.redact import has_marker

MIN_SHARED = 2  # content words a line must share with the rationale and the quote
_HEADING = re.compile(r"^\s*#{1,6}\s")
_SMALL = frozenset(
    "the and for are but not you all any can has have this that with from they will would there their what about which"
    " when into than then them these some could other only also just more most such been were should after before because"
    " while where each does done its our".split()
)  # fmt: skip


def content_words(text: str) -> frozenset[str]:
    """Words that carry meaning: three letters or more, not a common function word."""
    return frozenset(w for w in words(text) if len(w) >= 3 and w not in _SMALL)


def derive(path: str, text: str, body_start: int, wanted: str) -> Evidence | None:
    """The body line of ``text`` (a sent note, lines from ``body_start``, 1-based) sharing the
    most content words with ``wanted``, as derived evidence; None when no line shares
    ``MIN_SHARED``. Ties go to the earlier line; headings are titles, not evidence, and a
    line holding a redaction marker is not what the note says."""
    want = content_words(wanted)
    best: tuple[int, int, str] | None = None
    for number, line in enumerate(text.split("\n")[body_start - 1 :], body_start):
        if not line.strip() or _HEADING.match(line) or has_marker(line):
            continue
        shared = len(content_words(line) & want)
        if shared >= MIN_SHARED and (best is None or shared > best[0]):
            best = (shared, number, line.strip())
    if best is None:
        return None
    _, number, line = best
    return Evidence(path, number, number, line, derived=True)
