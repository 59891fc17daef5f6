"""A model's proposal becomes a Draft only after it proves itself against what was sent.

The model is a fallible, possibly manipulated reader, so each proposal is checked before
it is a Draft - on top of, not instead of, the foundation's build and validation that
every Draft (detector or model) goes through later:

- it names only notes sent in this call (prompt ids map back to paths; anything else is
  refused, which also stops a reply from reaching notes it never saw);
- every evidence quote is a verbatim substring of the note it cites, as the model saw it:
  after redaction (the model never saw the secrets, so it cannot quote them); a quote that
  is not gives way to the note's lines that best match the rationale, marked derived, at a
  confidence of at most ``DERIVED_CONFIDENCE`` (``derive``); a note with no such line, or
  one never sent, is refused;
- a supersede names the newer note and quotes both sides; a soft-expire quotes something;
- a merge's body holds no redaction marker (applying it would write ``[REDACTED]`` into a
  note) and states nothing the notes do not (a number or mostly new words: refused), and is
  checked for loss: a merge that drops a sentence without saying why is kept but marked
  ``lossy``, which no policy may accept on its own;
- a merge whose ``merged_body`` is null is an edit script, "keep every line of these notes":
  dreamd writes the lossless union itself (the survivor's text, then each line of the others
  it lacks, as the near-duplicate detector does), so a merge of long notes costs the reply a
  few tokens instead of a rewrite of both. Lossless by construction, such a merge proves no
  reading: unless its notes are near copies (``ALIKE``), its confidence is at most
  ``UNRELATED_CONFIDENCE``, which no shipped policy accepts;
- a merge may fold its notes into a new note (``new_path``, ``new_title``): a plain, unused
  markdown path the agent reads (``newnote``);
- a merge of two distinct records of a series (ADR-017 and ADR-021; ``daemon.planners.series``)
  is held for a person, naming the identifiers that differ, unless the texts are copies;
- a merge with a note related to none of its others (no content word of its text or name
  shared, no candidate group shared) is kept for a person only: its confidence is at most
  ``UNRELATED_CONFIDENCE``, which no shipped policy accepts. People fold notes that share
  no words (a tech stack and a style guide into one guide), so it is not refused; but a
  model shown a whole store may also lump an unrelated note in, and only a person can tell.

A failed check gives a ``Refusal`` with the reason and the raw proposal: refusals are the
planner's error rate and are recorded, never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from daemon.core import frontmatter
from daemon.core.notes import Note
from daemon.core.proposals import MERGE, SOFT_EXPIRE, SUPERSEDE, Draft, Evidence
from daemon.core.view import StoreView
from daemon.planners import series
from daemon.planners.llm.derive import content_words, derive
from daemon.planners.lossless import invented, uncovered
from daemon.planners.llm.newnote import clean_title, new_note_data, path_problem
from daemon.planners.llm.prompts import unescape_data
from daemon.planners.llm.redact import has_marker
from daemon.planners.llm.schema import ModelProposal
from daemon.planners.merge import additions, merged_data, one_text
from daemon.planners.survivor import choose

MIN_QUOTE = 4  # characters: shorter "quotes" match almost anywhere
DERIVED_CONFIDENCE = 0.5  # at most, when dreamd chose the evidence lines itself
UNRELATED_CONFIDENCE = 0.5  # at most, for a merge with a note that shares nothing with the rest
ALIKE = 0.5  # word-set Jaccard above which a union merge's notes are near copies (the candidates' loose threshold)
MAX_RATIONALE = 1500
MAX_BODY_BYTES = 1 << 20  # a merged body over a scan's default note limit (1 MiB) is refused


@dataclass(frozen=True)
class Sent:
    """What one call showed the model."""

    ids: Mapping[str, str]  # prompt id -> note path
    texts: Mapping[str, str]  # note path -> its text after redaction (what the model read)
    view: StoreView
    related: tuple[frozenset[str], ...] = ()  # the candidate groups of the call (a whole store's hints)

    def resolve(self, name: str) -> str | None:
        """The path an id (or the exact path of a sent note) stands for; None if unsent."""
        name = name.strip()
        if name in self.ids:
            return self.ids[name]
        return name if name in self.texts and name in self.ids.values() else None

    def body(self, path: str) -> str:
        """The sent text without its frontmatter lines (redaction keeps lines in place)."""
        skip = self.view.notes[path].parts.header.count(b"\n")
        return "\n".join(self.texts[path].split("\n")[skip:])


@dataclass(frozen=True)
class Refusal:
    """A model proposal that failed a check, kept for the record."""

    kind: str
    notes: tuple[str, ...]
    rationale: str
    reason: str
    source: str
    raw: dict[str, Any]


class _Refused(Exception):
    pass


def check(proposal: ModelProposal, sent: Sent, source: str) -> Draft | Refusal:
    """The proposal as a Draft, or a Refusal saying which check it failed."""
    try:
        return _draft(proposal, sent, source)
    except _Refused as exc:
        named = tuple(sent.resolve(n) or n for n in proposal.notes)
        return Refusal(proposal.kind, named, _clean(proposal.rationale), str(exc), source, proposal.model_dump())


def _draft(p: ModelProposal, sent: Sent, source: str) -> Draft:
    notes = _notes(p.notes, sent)
    evidence = _evidence(p, sent)
    confidence = min(1.0, max(0.0, p.confidence))
    derived = sorted({e.path for e in evidence if e.derived})
    if derived:
        confidence = min(confidence, DERIVED_CONFIDENCE)
    if p.kind == MERGE:
        draft = series.hold(_merge(p, notes, evidence, confidence, sent, source), sent.view)  # distinct records of a series: a person decides
    elif p.kind == SUPERSEDE:
        draft = _supersede(p, notes, evidence, confidence, sent, source)
    else:
        draft = _expire(p, notes, evidence, confidence, source)
    if derived:
        said = (
            f" Evidence derived by dreamd: the model's quote from {', '.join(derived)} is not in the note; "
            "the lines shown are those that best match the rationale."
        )
        draft = replace(draft, rationale=draft.rationale + said)
    return draft


def _expire(p: ModelProposal, notes: tuple[str, ...], evidence: tuple[Evidence, ...], confidence: float, source: str) -> Draft:
    if not evidence:
        raise _Refused("a soft-expire must quote its evidence (a date, a DONE/RESOLVED marker, a newer note)")
    reason = _clean(p.rationale).split(". ")[0][:120].rstrip(".") or "the model judged it no longer true"
    return Draft(
        kind=SOFT_EXPIRE, source=source, confidence=confidence, title=f"Expire {', '.join(notes)}",
        rationale=_clean(p.rationale), evidence=evidence, retire=notes, reason=reason,
    )  # fmt: skip


def _notes(names: list[str], sent: Sent) -> tuple[str, ...]:
    if not names:
        raise _Refused("the proposal names no notes")
    paths = []
    for name in names:
        path = sent.resolve(name)
        if path is None:
            raise _Refused(f"names {name!r}, which is not a note sent in this call")
        paths.append(path)
    return tuple(dict.fromkeys(paths))


def _one(name: str | None, notes: tuple[str, ...], sent: Sent, role: str) -> str:
    path = sent.resolve(name) if name else None
    if path is None or path not in notes:
        raise _Refused(f"{role} {name!r} is not one of the notes the proposal names")
    return path


def _evidence(p: ModelProposal, sent: Sent) -> tuple[Evidence, ...]:
    """Each quote as the note's own lines; a quote that is not verbatim (or too short to
    show anything) gives, instead, the lines of its note that best match the rationale,
    marked derived. A quote of a note that was not sent, or a note with no such line, is refused."""
    found: list[Evidence] = []
    for q in p.evidence:
        path = sent.resolve(q.note)
        if path is None:
            raise _Refused(f"evidence cites {q.note!r}, which is not a note sent in this call")
        quote = unescape_data(q.quote).strip()
        located = _verbatim(path, quote, sent) if len(quote) >= MIN_QUOTE else None
        if located is None:
            start = sent.view.notes[path].parts.header.count(b"\n") + 1
            located = derive(path, sent.texts[path], start, f"{p.rationale}\n{quote}")
        if located is None:
            why = "is too short to show anything" if len(quote) < MIN_QUOTE else "is not in the note, and no line of it matches the rationale"
            raise _Refused(f"evidence quote {_short(quote)!r} from {path} {why}; quotes must be verbatim")
        found.append(located)
    return tuple(dict.fromkeys(found))


def _verbatim(path: str, quote: str, sent: Sent) -> Evidence | None:
    text = sent.texts[path]
    found = _find_verbatim(text, quote)
    if found is None:
        return None
    at, quote = found
    start = text.count("\n", 0, at) + 1
    return Evidence(path, start, start + quote.count("\n"), quote)


def _find_verbatim(text: str, quote: str) -> tuple[int, str] | None:
    """Where ``quote`` is in ``text``, and the text's own bytes there.

    The same words with other whitespace count (a model re-wraps a line it quotes: a line
    break becomes a space); the evidence then records the note's text, not the model's.
    """
    at = text.find(quote)
    if at >= 0:
        return at, quote
    match = re.search(r"\s+".join(re.escape(word) for word in quote.split()), text)
    return (match.start(), match.group(0)) if match else None


def _merge(p: ModelProposal, notes: tuple[str, ...], evidence: tuple[Evidence, ...], confidence: float, sent: Sent, source: str) -> Draft:
    if len(notes) < 2:
        raise _Refused("a merge names at least two different notes")
    new_path = (p.new_path or "").strip()
    if new_path and p.survivor:
        raise _Refused("a merge gives either survivor (an existing note) or new_path (a new note), not both")
    survivor = new_path or _one(p.survivor, notes, sent, "survivor")
    if not evidence:
        raise _Refused("a merge must quote at least one line showing the notes say the same thing")
    union = p.merged_body is None or not p.merged_body.strip()
    body = "" if union else _checked_body(unescape_data(p.merged_body or ""), survivor)
    bodies = [sent.body(n) for n in notes]
    if not union:
        added = invented(bodies, body)
        if added:
            raise _Refused(f"merged_body states what none of the merged notes says: “{_short(added[0])}”")
    missing = [] if union else uncovered(bodies, body, [(d.text, d.reason) for d in p.dropped])
    rationale = _clean(p.rationale)
    stranger = _unrelated(notes, sent)
    if stranger is not None:
        confidence = min(confidence, UNRELATED_CONFIDENCE)
        rationale += f" {stranger} shares no word and no candidate group with the other notes: only a person can tell whether it belongs."
    if missing:
        rationale += (
            f" Lossy: {len(missing)} sentence{'s' if len(missing) > 1 else ''} of the merged notes "
            f"{'are' if len(missing) > 1 else 'is'} neither in the merged text nor listed as dropped, "
            f"e.g. “{_short(missing[0])}”."
        )
    if union:
        rationale += f" {ONE_TEXT if sent.view.reader.one_text else UNION}"
        apart = _not_alike(notes, sent)
        if apart is not None:  # no text the model wrote shows it read both: a person decides
            confidence = min(confidence, UNRELATED_CONFIDENCE)
            rationale += f" {apart} is no near copy of the others, and the model wrote no merged text: only a person can tell whether they belong together."
    if new_path:
        if union:
            body = _union_body([sent.view.notes[n] for n in notes])
        return _merge_into_new(p, notes, evidence, confidence, sent, source, rationale, body, bool(missing))
    kept = choose(sent.view, [sent.view.notes[n] for n in notes])
    if kept is not None and kept.binding and kept.survivor.path != survivor:  # the store's structure decides, not the model
        rationale += f" The merged text goes into {kept.survivor.path}, not {survivor} as the model said: {kept.why}."
        survivor = kept.survivor.path
    note = sent.view.notes[survivor]
    retire = tuple(n for n in notes if n != survivor)
    if union and sent.view.reader.one_text:  # a record's content is one prompt item: the longest, never two glued
        longest, _, missing = one_text(note, [sent.view.notes[n] for n in retire])
        data = longest or note.data
        if missing:
            rationale += f" Lossy: it drops {len(missing)} sentence{'s' if len(missing) > 1 else ''} of the others, e.g. “{_short(missing[0])}”."
    elif union:
        data = merged_data(note, additions(note, [sent.view.notes[n] for n in retire])) or note.data
    else:
        data = _survivor_data(note, body)
    return Draft(
        kind=MERGE, source=source, confidence=confidence, title=f"Merge {', '.join(retire)} into {survivor}",
        rationale=rationale, evidence=evidence, retire=retire, survivor=survivor,
        survivor_data=None if data == note.data else data, lossy=bool(missing),
    )  # fmt: skip


UNION = "The merged text is dreamd's lossless union (the model gave no merged_body): the survivor's text, then every line of the others it lacks."
ONE_TEXT = "Each note is one text the agent shows whole: the survivor keeps the longest, not the union."


def _not_alike(notes: tuple[str, ...], sent: Sent) -> str | None:
    """The first note of a union merge whose content words are not mostly those of another
    note of it (word-set Jaccard below ``ALIKE``): the union of two topics is lossless, so only
    this keeps a model that pairs notes at random from passing a policy with it."""
    said = {n: content_words(sent.body(n)) for n in notes}
    for note in notes:
        mine = said[note]
        if not any(mine and said[o] and len(mine & said[o]) / len(mine | said[o]) >= ALIKE for o in notes if o != note):
            return note
    return None


def _checked_body(body: str, survivor: str) -> str:
    """A merged_body the model wrote, refused when applying it would write what must not be."""
    size = len(body.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise _Refused(f"merged_body is {size:,} bytes, over the {MAX_BODY_BYTES:,} a note may be")
    if has_marker(body):
        raise _Refused(f"merged_body holds a redaction marker; applying it would write [REDACTED] into {survivor}")
    if frontmatter.split(body.encode("utf-8")).has_frontmatter:
        raise _Refused("merged_body starts with a frontmatter block; it must be the body only")
    return body


def _union_body(notes: list[Note]) -> str:
    """A new note's body when the model gave none: the first note's body, then every line of
    the others it lacks (the notes' own text, never what redaction made of it)."""
    first, rest = notes[0], notes[1:]
    added = additions(first, rest)
    lines = [first.body.rstrip("\n"), *(line for path in added for line in added[path])]
    return "\n".join(lines) + "\n"


def _unrelated(notes: tuple[str, ...], sent: Sent) -> str | None:
    """The first note of a merge related to none of its other notes: no content word of its
    text or file name shared, and no candidate group of the call shared either."""
    said = {n: content_words(sent.body(n) + " " + re.sub(r"[^0-9A-Za-z]+", " ", n.rsplit("/", 1)[-1].removesuffix(".md"))) for n in notes}
    for note in notes:
        others = frozenset().union(*(words for other, words in said.items() if other != note))
        grouped = any(note in group and len(group & set(notes)) > 1 for group in sent.related)
        if not said[note] & others and not grouped:
            return note
    return None


def _merge_into_new(p: ModelProposal, notes: tuple[str, ...], evidence: tuple[Evidence, ...], confidence: float, sent: Sent, source: str, rationale: str, body: str, lossy: bool) -> Draft:
    """Every named note folds into a note the merge creates at ``new_path``."""
    path = (p.new_path or "").strip()
    problem = path_problem(sent.view, path)
    if problem:
        raise _Refused(problem)
    title = clean_title(p.new_title)
    if not title:
        raise _Refused("a merge into a new note must give new_title")
    data = new_note_data(title, body, [sent.view.notes[n] for n in notes])
    if b"\r\n" in sent.view.notes[notes[0]].data:
        data = data.replace(b"\n", b"\r\n")
    return Draft(
        kind=MERGE, source=source, confidence=confidence, title=f"Merge {', '.join(notes)} into a new note {path}",
        rationale=rationale, evidence=evidence, retire=notes, survivor=path, create=((path, data),), lossy=lossy,
    )  # fmt: skip


def _supersede(p: ModelProposal, notes: tuple[str, ...], evidence: tuple[Evidence, ...], confidence: float, sent: Sent, source: str) -> Draft:
    if len(notes) < 2:
        raise _Refused("a supersede names the newer note and at least one older note")
    newer = _one(p.newer, notes, sent, "newer note")
    older = tuple(n for n in notes if n != newer)
    cited = {e.path for e in evidence}
    for path in (newer, *older):
        if path not in cited:
            raise _Refused(f"a supersede must quote the contradicting lines of both sides; nothing is quoted from {path}")
    for path in older:
        earlier = _declared_later(sent.view.notes[path], sent.view.notes[newer])
        if earlier:
            raise _Refused(f"names {newer} as newer, but {earlier}")
    return Draft(
        kind=SUPERSEDE, source=source, confidence=confidence, title=f"{newer} supersedes {', '.join(older)}",
        rationale=_clean(p.rationale), evidence=evidence, retire=older, survivor=newer,
    )  # fmt: skip


def _declared_later(older: Note, newer: Note) -> str | None:
    """When both notes declare the same date key, the one called newer must not be earlier."""
    for key in ("updated_at", "created_at"):
        a, b = older.meta_time(key), newer.meta_time(key)
        if a is not None and b is not None:
            return f"its {key} {b.date()} is before {older.path}'s {a.date()}" if b < a else None
    return None


def _survivor_data(note: Note, body: str) -> bytes:
    """The survivor's own frontmatter block, byte for byte, then the merged body, ending
    in a newline and in the note's own line endings."""
    text = body.replace("\r\n", "\n")
    text = text if text.endswith("\n") else text + "\n"
    if b"\r\n" in note.data:
        text = text.replace("\n", "\r\n")
    return note.parts.header + text.encode("utf-8")


def _clean(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_RATIONALE else flat[: MAX_RATIONALE - 1] + "…"


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
