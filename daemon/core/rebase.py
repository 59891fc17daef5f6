"""A proposal's small edit of a shared note, placed again by what it means on the note as
dreamd's own later applies left it.

The proposals of one pass are made from one state of the store: each edits the index, and
merges whose retired notes one note refers to each rewrite links in that note. Applied one
after the other, each finds those notes changed by the ones applied before it. Its edit is
then placed by what it means, never by line numbers:

- a line it removes or rewords is found by its bytes (of several equal lines, the one in the
  same section, nearest where it was). An index line an earlier apply reworded is still the
  entry's line when it names the same notes: removing the entry removes it, and two
  rewordings merge when they change different words. A note's line reworded by an earlier
  apply (a link rewritten) merges the same way;
- a new index entry goes into the section the reviewed diff showed it in: at the section's
  end when it was shown there (after the entries earlier applies added), else right after
  the line it was shown after; an entry the index already holds there is not added twice;
- a note's added line goes after the line it was shown after.

When that meaning no longer holds the edit is refused with the reason (``StaleError``): its
section is gone, the entry it removes or rewords is gone, the words it changes were changed,
the note it lists is listed already elsewhere. Every added line is checked to sit in the
section it was reviewed in, and an index the agent loaded whole stays so. Pure: no I/O.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from daemon.core.errors import StaleError
from daemon.core.index import LINK_PATTERN, LINKS, IndexSpec, entries
from daemon.core.notes import Note
from daemon.core.lines import newlines_before
from daemon.core.patch import LARGE, Block

_HEADING = re.compile(rb"#{1,6}[ \t]+\S")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_LINK = re.compile(LINK_PATTERN)
_TASK = re.compile(r"\[(TASK[0-9A-Za-z_]+)")
_WHOLE_BELOW = 256 * 1024  # bytes: an index an agent loads whole is far smaller; larger ones are not decoded to check


_SPLIT: dict[int, tuple[bytes, list[bytes]]] = {}  # the last large bytes objects split, by identity
_SPLIT_KEPT = 4


def lines_of(data: bytes) -> list[bytes]:
    """``data``'s lines with their ends; lines end at ``\\n`` only, as in a diff. The lines of
    a large bytes object are kept for the next call with the very same object (do not change
    the list): every proposal of a pass has the same index as its base, held once by the run."""
    kept = _SPLIT.pop(id(data), None)
    if kept is not None and kept[0] is data:
        _SPLIT[id(data)] = kept  # the newest again: a run's shared base stays while each apply's file comes and goes
        return kept[1]
    if b"\r" not in data:
        found = data.splitlines(keepends=True)
    else:
        split = data.split(b"\n")
        found = [line + b"\n" for line in split[:-1]] + ([split[-1]] if split[-1] else [])
    if len(data) >= LARGE:
        _SPLIT[id(data)] = (data, found)
        while len(_SPLIT) > _SPLIT_KEPT:
            del _SPLIT[next(iter(_SPLIT))]
    return found


def _heads_of(data: bytes) -> list[int]:
    """The lines of ``data`` that are markdown headings (each ``#`` at a line's start, checked)."""
    heads: list[int] = []
    line = pos = 0
    at = 0 if data[:1] == b"#" else _next_hash(data, 0)
    while at >= 0:
        if _HEADING.match(data, at):
            line += data.count(b"\n", pos, at)
            pos = at
            heads.append(line)
        at = _next_hash(data, at)
    return heads


def _next_hash(data: bytes, at: int) -> int:
    """Where the next line starting with ``#`` after offset ``at`` starts, -1 when none does
    (``#`` is rare in an index: found alone, its line start checked)."""
    found = data.find(b"#", at + 1)
    while found > 0 and data[found - 1] != 0x0A:
        found = data.find(b"#", found + 1)
    return found


def shared(files: Mapping[str, tuple[str | None, str | None]], data: Mapping[str, bytes], index: str | None) -> set[str]:
    """The files of a proposal whose edit is a small edit of a note it neither merges nor
    retires: the index, and every note it only rewords (links rewritten), which other
    proposals of the pass may edit too. Not: a note it removes, creates, only reads (a
    merged note left as it is), marks retired, or names as what replaces a retired note
    (``superseded_by``: the merge's survivor). ``data``: the bytes of the proposal's files by hash."""
    owned: set[str] = set()
    for path, (base, result) in files.items():
        if base is None or result is None or base == result:
            owned.add(path)
        elif path != index and not (note := Note(path, data[result], result)).live:
            owned.add(path)  # marked retired where it is
            survivor = note.meta.get("superseded_by")
            if isinstance(survivor, str):
                owned.add(survivor.strip())
        if base is None and result is not None:  # a retired note's copy in the archive names what replaces it
            survivor = Note(path, data[result], result).meta.get("superseded_by")
            if isinstance(survivor, str):
                owned.add(survivor.strip())
    return {p for p, (base, result) in files.items() if base is not None and result is not None and base != result and p not in owned}


class _Lines:
    """A file's lines, its headings, and which of its lines an edit has placed already; lines
    and headings are found when first asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.taken: set[int] = set()

    @cached_property
    def lines(self) -> list[bytes]:
        return lines_of(self.data)

    @cached_property
    def heads(self) -> list[int]:
        return _heads_of(self.data)

    def at_offset(self, offset: int) -> int:
        """The line holding byte ``offset``."""
        return newlines_before(self.data, offset) if len(self.data) >= LARGE else self.data.count(b"\n", 0, offset)

    def section(self, i: int) -> tuple[bytes, int] | None:
        """The heading line ``i`` sits under (its text and which of the equal headings it is)."""
        k = bisect.bisect_right(self.heads, i) - 1
        if k < 0:
            return None
        text = self.lines[self.heads[k]].rstrip()
        return text, sum(1 for h in self.heads[:k] if self.lines[h].rstrip() == text)

    def heading(self, section: tuple[bytes, int]) -> int | None:
        """The line of ``section``'s heading, None when the file has no such heading."""
        equal = [h for h in self.heads if self.lines[h].rstrip() == section[0]]
        return equal[section[1]] if section[1] < len(equal) else None

    def section_end(self, head: int | None) -> tuple[int, int]:
        """(just past the last non-blank line, the line the next heading starts at) of the
        section whose heading is at ``head`` (None: the part before the first heading)."""
        start = -1 if head is None else head
        k = bisect.bisect_right(self.heads, start)
        stop = self.heads[k] if k < len(self.heads) else len(self.lines)
        last = stop - 1
        while last > start and not self.lines[last].strip():
            last -= 1
        return last + 1, stop

    def find(self, run: Sequence[bytes], near: int, section: tuple[bytes, int] | None) -> int | None:
        """Where ``run`` sits, not over lines placed already: in ``section`` if it is there,
        nearest ``near``."""
        places: list[int] = []
        at = -1
        while True:
            try:
                at = self.lines.index(run[0], at + 1)
            except ValueError:
                break
            end = at + len(run)
            if self.lines[at:end] == list(run) and self.taken.isdisjoint(range(at, end)):
                places.append(at)
        if not places:
            return None
        return min(places, key=lambda p: (self.section(p) != section, abs(p - near), p))

    def holding(self, words: Sequence[bytes]) -> list[int]:
        """The lines holding any of ``words``, in order."""
        found: set[int] = set()
        for word in words:
            at = self.data.find(word)
            while at >= 0:
                line = self.at_offset(at)
                found.add(line)
                at = self.data.find(word, at + len(word))
        return sorted(found)


@dataclass(frozen=True)
class _Placed:
    """An edit placed on the current lines: ``lines[start:stop]`` becomes ``new``; ``added``
    are the reviewed added lines among ``new`` with their line in the result."""

    start: int
    stop: int
    new: tuple[bytes, ...]
    added: tuple[tuple[int, int], ...] = ()  # (index in new, line of the result)


def rebase(blocks: Sequence[Block], base: bytes, result: bytes, current: bytes, spec: IndexSpec | None = None) -> bytes:
    """``current`` with the edit ``blocks`` make from ``base`` to ``result`` placed by what it
    means (see above); ``spec``: the file is that index. StaleError says why it cannot be."""
    old, new, now = _Lines(base), _Lines(result), _Lines(current)
    placed: list[_Placed] = []
    shift = 0
    for block in blocks:
        if tuple(old.lines[block.at : block.at + len(block.removed)]) != block.removed:
            raise StaleError("its diff does not match the bytes it was made from")
        found = _rewording(block, old, now, spec, shift) if block.removed else _insertion(block, old, now, spec, shift)
        placed += found
        shift = found[0].start - block.at
    lines = list(now.lines)
    inserted: list[tuple[int, int]] = []  # (line of the output, line of the result) of every added line
    for _, item in sorted(enumerate(placed), key=lambda n: (n[1].start, n[1].stop, n[0]), reverse=True):
        lines[item.start : item.stop] = item.new
        moved = len(item.new) - (item.stop - item.start)
        inserted = [(at + moved, to) for at, to in inserted] + [(item.start + j, to) for j, to in item.added]
    data = b"".join(lines)
    if inserted:
        out = _Lines(data)
        for at, to in inserted:
            if out.section(at) != new.section(to):
                raise StaleError(f"{_shown(new.lines[to])} would land under {_named(out.section(at))}, not under {_named(new.section(to))} where it was reviewed")
        data = _without_repeats(spec, out, sorted(inserted)).data if spec is not None else data
    if spec is not None and spec.limit is not None and len(result) < _WHOLE_BELOW and len(data) < _WHOLE_BELOW:
        if spec.limit.fits(result.decode("utf-8", "replace")) and not spec.limit.fits(data.decode("utf-8", "replace")):
            raise StaleError(f"with what earlier applies changed, {spec.path} would pass what its agent loads ({spec.limit.describe()})")
    return data


def _insertion(block: Block, old: _Lines, now: _Lines, spec: IndexSpec | None, shift: int) -> list[_Placed]:
    """Where lines the edit only adds go: an index's in their section (at its end when they
    were shown there), a note's after the line they were shown after."""
    added = tuple((j, block.to + j) for j in range(len(block.added)))
    if spec is not None:
        k = bisect.bisect_right(old.heads, block.at - 1) - 1
        section = old.section(block.at - 1) if k >= 0 else None
        head = now.heading(section) if section is not None else None
        if section is not None and head is None:
            raise StaleError(f"the section {_named(section)}, where it adds {_shown(block.added[0])}, is no longer there")
        last, stop = old.section_end(old.heads[k] if k >= 0 else None)
        if block.at >= last:  # shown at the section's end: after whatever earlier applies put there
            now_last, now_stop = now.section_end(head)
            at = now_stop if block.at >= stop else now_last
            if at == len(now.lines) and at and not now.lines[-1].endswith(b"\n"):
                raise StaleError(f"{spec.path} no longer ends with a line end, where it adds {_shown(block.added[0])}")
            return [_Placed(at, at, block.added, added)]
    if not block.at:
        if now.lines[:1] != old.lines[:1]:
            raise StaleError(f"the first line, before which it adds {_shown(block.added[0])}, was changed since")
        return [_Placed(0, 0, block.added, added)]
    at = now.find([old.lines[block.at - 1]], block.at - 1 + shift, old.section(block.at - 1))
    if at is None:
        raise StaleError(f"the line it adds {_shown(block.added[0])} after, {_shown(old.lines[block.at - 1])}, is no longer there")
    return [_Placed(at + 1, at + 1, block.added, added)]


def _rewording(block: Block, old: _Lines, now: _Lines, spec: IndexSpec | None, shift: int) -> list[_Placed]:
    """Where the lines the edit removes or rewords are now, and what they become: the run of
    them where it is whole; else each line found alone, or the line standing for it now
    (``_counterpart``) with the two rewordings merged."""
    section = old.section(block.at)
    added = tuple((j, block.to + j) for j in range(len(block.added)))
    whole = now.find(block.removed, block.at + shift, section)
    if whole is not None:
        now.taken.update(range(whole, whole + len(block.removed)))
        return [_Placed(whole, whole + len(block.removed), block.added, added)]
    paired = len(block.removed) == len(block.added)
    if block.added and not paired:
        raise StaleError(f"the lines it rewrites, from {_shown(block.removed[0])} on, were changed since")
    found: list[_Placed] = []
    previous: int | None = None
    for j, line in enumerate(block.removed):
        at = now.find([line], block.at + j + shift, section)
        theirs = line
        if at is None:
            at = _counterpart(line, block.at + j, old, now, spec, shift, previous)
            theirs = now.lines[at]
        now.taken.add(at)
        previous = at
        if not paired:  # the entry's line goes, however an earlier apply worded it
            found.append(_Placed(at, at + 1, ()))
            continue
        merged = block.added[j] if theirs == line else merge_line(line, block.added[j], theirs)
        if merged is None:
            raise StaleError(f"the words it changes in {_shown(line)} were changed since")
        found.append(_Placed(at, at + 1, (merged,), ((0, block.to + j),)))
    return found


def _counterpart(line: bytes, at: int, old: _Lines, now: _Lines, spec: IndexSpec | None, shift: int, previous: int | None) -> int:
    """The current line that stands for base line ``at`` when its bytes changed: for an
    index entry, the line in its section naming the same notes; else the line after the one
    that stands for the line above it (``previous``: the block's line before), or before the
    one that stands for the line below it."""
    if spec is not None and (named := _named_paths(spec, line)):
        section = old.section(at)
        for i in now.holding(_written(spec, line)):
            if i not in now.taken and now.section(i) == section and _named_paths(spec, now.lines[i]) == named:
                return i
        raise StaleError(f"its entry for {', '.join(sorted(named))} is no longer in {spec.path} as it was")
    if previous is None and at:
        previous = now.find([old.lines[at - 1]], at - 1 + shift, old.section(at - 1))
    if previous is not None and previous + 1 < len(now.lines) and previous + 1 not in now.taken:
        return previous + 1
    below = now.find([old.lines[at + 1]], at + 1 + shift, old.section(at + 1)) if at + 1 < len(old.lines) else None
    if below is not None and below - 1 >= 0 and below - 1 not in now.taken:
        return below - 1
    raise StaleError(f"the line {_shown(line)} was changed since, and the lines around it too")


def merge_line(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """``theirs`` with the words ``ours`` changed in ``base`` changed the same way, when the
    two changed different words (or the same words alike); None when they overlap."""
    b, o, t = (_tokens(x) for x in (base, ours, theirs))
    mine, others = _changes(b, o), _changes(b, t)
    for i1, i2, new in mine:
        for j1, j2, other in others:
            if (i1, i2, new) == (j1, j2, other):
                continue
            overlap = max(i1, j1) < min(i2, j2) or i1 == i2 == j1 == j2 or (i1 == i2 and j1 < i1 < j2) or (j1 == j2 and i1 < j1 < i2)
            if overlap:
                return None
    merged: list[str] = []
    pos = 0
    for i1, i2, new in sorted({*mine, *others}, key=lambda c: (c[0], c[1])):
        merged += b[pos:i1] + list(new)
        pos = max(pos, i2)
    merged += b[pos:]
    return "".join(merged).encode("utf-8", "surrogateescape")


def _tokens(line: bytes) -> list[str]:
    return _TOKEN.findall(line.decode("utf-8", "surrogateescape"))


def _changes(a: list[str], b: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [(i1, i2, tuple(b[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _without_repeats(spec: IndexSpec, out: _Lines, inserted: list[tuple[int, int]]) -> _Lines:
    """``out`` without the added entries it held already: one the index holds as this very
    line in the same section is not added again; one it lists elsewhere refuses the edit."""
    repeats: set[int] = set()
    for at, _ in inserted:
        named = _named_paths(spec, out.lines[at])
        others = [i for i in out.holding(_written(spec, out.lines[at])) if i != at and i not in repeats and _named_paths(spec, out.lines[i]) & named] if named else []
        if any(out.lines[i] == out.lines[at] and out.section(i) == out.section(at) for i in others):
            repeats.add(at)
        elif others:
            raise StaleError(f"{spec.path} lists {', '.join(sorted(named))} already (under {_named(out.section(others[0]))}), as earlier applies left it")
    if not repeats:
        return out
    return _Lines(b"".join(line for i, line in enumerate(out.lines) if i not in repeats))


def _named_paths(spec: IndexSpec, line: bytes) -> frozenset[str]:
    """The notes an index line has entries for."""
    return frozenset(e.path for e in entries(spec, line.decode("utf-8", "replace"), ()))


def _written(spec: IndexSpec, line: bytes) -> list[bytes]:
    """What an index line writes to name its notes (link targets, task ids): what any other
    line naming them holds too."""
    text = line.decode("utf-8", "replace")
    found = [m.group("t") for m in _LINK.finditer(text)] if spec.format == LINKS else _TASK.findall(text)
    return [w.encode("utf-8") for w in dict.fromkeys(found)]


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _named(section: tuple[bytes, int] | None) -> str:
    return "the top of the file" if section is None else repr(section[0].decode("utf-8", "replace"))
