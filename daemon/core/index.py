"""Index notes: which notes an index lists, how much of it its agent loads, and edits that
add or drop entries.

Two formats cover the presets:

- ``links``: markdown links to ``.md`` files (MEMORY.md of DeepCode and Claude Code,
  Serena's memory-index.md). A line may hold several links; dropping one keeps the rest.
  Where the agent follows ``[[name]]`` links (``IndexSpec.wiki``: Claude Code), such a link
  is an entry too, for the one note it names: by frontmatter name, file stem or path
  without ``.md``, exactly, else spelled alike once case and ``_``/``-``/space are set aside.
  One that names no note, or several, is no entry (it is never dropped, never counted).
- ``cline-tasks``: Cline's ``tasks/_index.md``, whose lines name task ids (``[TASK011]``)
  matching files ``tasks/TASK011-*.md``, also in subfolders (``tasks/COMPLETED/``).

Lines that are not entries (headings, prose) are never touched. New entries go into the
section their note belongs to (``sections``), else at the end, and are never cut mid-word.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from daemon.core.index_spec import BY_STATUS, BY_TYPE, CLINE_TASKS, FORMATS, LINKS, IndexSpec, LoadLimit  # noqa: F401 (offered here too)
from daemon.core.spelling import fold

# [text](target.md#anchor "title"): label group 1 ("label"), target group 2 ("t"). No class
# crosses a "[" or a line end, so a hostile line ("[[[[…", "[a]([a]([a](…") is matched in
# linear time: one failed attempt never rescans what the next one will.
LINK_PATTERN = r"\[(?P<label>[^\[\]\n]*)\]\(\s*<?(?P<t>[^()\[\]\s>]+?\.md)(?:#[^()\s>]*)?>?(?:\s+\"[^\"\n]*\")?\s*\)"
_LINK = re.compile(LINK_PATTERN)
# a link plus the decoration around it in list-of-links lines: "[a](a.md) (123), "
_LINK_TOKEN = r"\[[^\[\]\n]*\]\(\s*<?{target}(?:#[^()\s>]*)?>?(?:\s+\"[^\"\n]*\")?\s*\)(?:\s*\(\d+\))?"
# [[name]], [[name#heading]], [[name|label]]: the name group "t", the label group "label"
WIKI_PATTERN = r"\[\[(?P<t>[^\[\]|#\n]+?)\s*(?:#[^\[\]|\n]*)?(?:\|(?P<label>[^\[\]\n]*))?\]\]"
_WIKI = re.compile(WIKI_PATTERN)
# "[TASK011]", and ranges "[TASK052..054]" / "[TASK052-054]" naming the file TASK052-054-*.md
_TASK = re.compile(r"\[(TASK[0-9A-Za-z_]+?)(?:(?:\.\.|-)[0-9A-Za-z_]+)?\]")


@dataclass(frozen=True)
class Entry:
    line: int  # 1-based
    path: str  # the note it points at (store-relative)


@functools.lru_cache(maxsize=16384)  # an index is parsed again after each edit, with the same links
def _resolve(index_path: str, target: str) -> str | None:
    """Store-relative path of a link target, or None when it leaves the store."""
    target = unquote(target.strip())
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(index_path), target))
    if joined.startswith("../") or joined == "..":
        return None
    return joined


_TASK_FILE = re.compile(r"(TASK[0-9A-Za-z_]+?)(?:[-_. ].*)?\.md$")


def task_id(path: str) -> str | None:
    """The task id a file name starts with (``tasks/TASK012-login.md`` -> ``TASK012``)."""
    match = _TASK_FILE.match(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


class WikiNames:
    """The notes a ``[[name]]`` on an index line can name, by how it may be written."""

    def __init__(self, spec: IndexSpec, notes: Iterable[str]) -> None:
        self.exact: dict[str, set[str]] = {}
        self.folded: dict[str, set[str]] = {}
        folder = posixpath.dirname(spec.path)
        titled = notes if isinstance(notes, Mapping) else {}
        for path in notes:
            if not path.endswith(".md") or path == spec.path:
                continue
            meta = getattr(titled.get(path), "meta", None)  # a view's notes: their frontmatter names count
            title = meta.get("name") if isinstance(meta, dict) else None
            below = path[len(folder) + 1 :] if folder and path.startswith(folder + "/") else path
            for name in {posixpath.basename(path)[:-3], below[:-3], *([title.strip()] if isinstance(title, str) and title.strip() else [])}:
                self.exact.setdefault(name, set()).add(path)
                self.folded.setdefault(fold(name), set()).add(path)

    def of(self, written: str) -> str | None:
        """The one note ``[[written]]`` names, or None (none, or several)."""
        name = written.strip()
        name = name[:-3] if name.casefold().endswith(".md") else name
        found = self.exact.get(name) or self.folded.get(fold(name)) or set()
        return next(iter(found)) if len(found) == 1 else None


def wiki_names(spec: IndexSpec, text: str, notes: Iterable[str]) -> WikiNames | None:
    """The names ``[[...]]`` entries of ``text`` resolve against; None when it can have none."""
    return WikiNames(spec, notes) if spec.format == LINKS and spec.wiki and "[[" in text else None


def entries(spec: IndexSpec, text: str, notes: Iterable[str], wiki: WikiNames | None = None) -> list[Entry]:
    """Every entry of the index, in line order. ``wiki``: ``wiki_names`` of this text, when
    the caller has it already.

    For ``cline-tasks`` a task id with no matching note resolves to ``tasks/<id>.md``
    (a path that does not exist, so it shows up as a dangling entry).
    """
    found: list[Entry] = []
    if spec.format == LINKS:
        wiki = wiki if wiki is not None else wiki_names(spec, text, notes)
        for number, line in enumerate(text.splitlines(), 1):
            for match in _LINK.finditer(line):
                path = _resolve(spec.path, match.group(2))
                if path is not None:
                    found.append(Entry(number, path))
            if wiki is not None and "[[" in line:
                found += [Entry(number, path) for match in _WIKI.finditer(line) if (path := wiki.of(match.group("t"))) is not None]
        return found
    folder = posixpath.dirname(spec.path)
    by_id = {}
    for path in notes:
        task = task_id(path)
        # Cline files finished tasks in subfolders (tasks/COMPLETED/...): any depth counts
        if task and (path.startswith(f"{folder}/") if folder else True):
            by_id.setdefault(task, path)
    for number, line in enumerate(text.splitlines(), 1):
        for match in _TASK.finditer(line):
            task = match.group(1)
            found.append(Entry(number, by_id.get(task, posixpath.join(folder, f"{task}.md"))))
    return found


@dataclass(frozen=True)
class Parsed:
    """An index split into lines and parsed, with its entries by path and by line.

    ``data``: the bytes the lines decode from exactly (None when they do not: invalid UTF-8
    was replaced), so that an edit keeps the bytes of every line it leaves alone.
    """

    lines: list[str]
    by_path: dict[str, list[Entry]]
    by_line: dict[int, list[Entry]]
    data: bytes | None = None
    wiki: WikiNames | None = None  # what its [[name]] entries resolve against, if it can have any

    @classmethod
    def of(cls, spec: IndexSpec, text: str, notes: Iterable[str], data: bytes | None = None) -> Parsed:
        by_path: dict[str, list[Entry]] = {}
        by_line: dict[int, list[Entry]] = {}
        wiki = wiki_names(spec, text, notes)
        for entry in entries(spec, text, notes, wiki):
            by_path.setdefault(entry.path, []).append(entry)
            by_line.setdefault(entry.line, []).append(entry)
        return cls(text.splitlines(keepends=True), by_path, by_line, data, wiki)

    @functools.cached_property
    def text(self) -> str:
        return "".join(self.lines)

    @functools.cached_property
    def _starts(self) -> list[int]:
        """Byte offset of each line in ``data``, and of its end."""
        return [0, *itertools.accumulate(len(line.encode("utf-8")) for line in self.lines)]

    @functools.cached_property
    def _ids(self) -> frozenset[int]:
        return frozenset(map(id, self.lines))

    def _pieces(self, lines: Sequence[str]) -> list[tuple[int, int] | str]:
        """``lines`` (edited from these) as runs ``(i, j)`` equal to ``self.lines[i:j]`` and the
        other lines between them. A run is found in C, a line at a time only where the edit is."""
        original, known = self.lines, self._ids
        pieces: list[tuple[int, int] | str] = []
        i = j = 0
        while j < len(lines):
            run = _same_run(lines, j, original, i) if i < len(original) and lines[j] == original[i] else 0
            if run:
                pieces.append((i, i + run))
                i, j = i + run, j + run
            elif i < len(original) and id(lines[j]) in known:
                i += 1  # original line i was dropped
            else:
                pieces.append(lines[j])
                j += 1
        return pieces

    def encode(self, lines: Sequence[str]) -> bytes:
        """``"".join(lines).encode("utf-8")`` for ``lines`` edited from these: runs of these
        lines are sliced from ``data`` and only other lines are encoded. A line equal to one
        of these encodes to its bytes (``data`` decodes to these lines exactly), so the bytes
        are right however the lines were edited. The runs are
        views of ``data``: a slice of a megabyte copied it once more, into fresh pages, for
        each proposal (0.6 ms, where the views cost 0.03 ms)."""
        if self.data is None:
            return "".join(lines).encode("utf-8")
        data, starts = memoryview(self.data), self._starts  # a run is joined from its place, not copied first
        pieces = lines.pieces if isinstance(lines, Spliced) and lines.base is self.lines else self._pieces(lines)
        return b"".join([p.encode("utf-8") if isinstance(p, str) else data[starts[p[0]] : starts[p[1]]] for p in pieces])


def _same_run(a: list[str], i: int, b: list[str], j: int) -> int:
    """How many items from ``a[i]`` on equal those from ``b[j]`` on (compared in C, in
    growing chunks, so a long run costs no Python loop and a short one no long slice; the
    very same objects compare without looking at their characters)."""
    run, step = 0, 16
    end = min(len(a) - i, len(b) - j)
    while run < end:
        size = min(step, end - run)
        if a[i + run : i + run + size] != b[j + run : j + run + size]:
            while size > 8:  # the first difference is among these ``size``: halve them
                half = size // 2
                if a[i + run : i + run + half] == b[j + run : j + run + half]:
                    run, size = run + half, size - half
                else:
                    size = half
            return run + next(k for k in range(size) if a[i + run + k] != b[j + run + k])
        run, step = run + size, step * 4
    return run


def drop(spec: IndexSpec, text: str, paths: set[str], notes: Iterable[str]) -> str:
    """The index without entries for ``paths``; lines left with no entry are removed."""
    return "".join(drop_lines(spec, Parsed.of(spec, text, notes), paths))


def drop_lines(spec: IndexSpec, parsed: Parsed, paths: set[str], lines: Sequence[str] | None = None) -> Sequence[str]:
    """``drop`` on an index parsed once (a pass edits the same index for every proposal):
    the work is in the entries dropped, not in the size of the index. ``lines``: the
    parsed lines as an edit that keeps their number left them (``repoint_lines``). Dropped
    from the parsed lines themselves, the result is ``Spliced``: it says which of them it is
    made of, so that its bytes are not found by comparing it with them again."""
    lines = parsed.lines if lines is None else lines
    doomed = {e.line for path in paths for e in parsed.by_path.get(path, ())}
    if not doomed:
        return lines
    rewritten = {n: _drop_links(spec, lines[n - 1], paths, parsed.wiki) for n in doomed if spec.format == LINKS and any(e.path not in paths for e in parsed.by_line[n])}
    out = list(lines)  # in C: a copy, then each cut from the end up
    for number in sorted(doomed, reverse=True):
        if number in rewritten:
            out[number - 1] = rewritten[number]
        else:
            del out[number - 1]
    if lines is not parsed.lines:
        return out
    pieces: list[tuple[int, int] | str] = []  # the same edit from the top down: runs of the lines, and lines rewritten
    at = 0  # the next line not in a piece
    for number in sorted(doomed):
        if at < number - 1:
            pieces.append((at, number - 1))
        if number in rewritten:
            pieces.append(rewritten[number])
        at = number
    if at < len(lines):
        pieces.append((at, len(lines)))
    return Spliced.of(out, parsed.lines, pieces)


class Spliced(tuple[str, ...]):
    """Lines edited from an index's parsed lines, with the pieces they are made of: runs
    ``(i, j)`` of those lines and the new lines between them. ``Parsed.encode`` takes the
    pieces as they are; finding them again cost a comparison of every line, per proposal,
    of an index of 10,000 lines. A tuple: its pieces cannot go out of date."""

    base: list[str]
    pieces: list[tuple[int, int] | str]

    @classmethod
    def of(cls, lines: list[str], base: list[str], pieces: list[tuple[int, int] | str]) -> Spliced:
        made = cls(lines)
        made.base, made.pieces = base, pieces
        return made


def repoint_lines(spec: IndexSpec, parsed: Parsed, moves: dict[str, str]) -> list[str]:
    """The index's lines with every link to a key of ``moves`` (a listed path) pointing at
    its value instead (a note's path): only the link's target changes, the line's words
    stay, and no line is added or removed. ``links`` indexes only (a task id is no path)."""
    if spec.format != LINKS or not moves:
        return parsed.lines
    out = list(parsed.lines)
    for number in sorted({e.line for old in moves for e in parsed.by_path.get(old, ())}):
        out[number - 1] = _LINK.sub(lambda m: _moved(spec, m, moves), out[number - 1])
    return out


def _moved(spec: IndexSpec, match: re.Match[str], moves: dict[str, str]) -> str:
    new = moves.get(_resolve(spec.path, match.group("t")) or "")
    if new is None:
        return match.group(0)
    target = posixpath.relpath(new, posixpath.dirname(spec.path) or ".").replace(" ", "%20")
    start, end = match.start("t") - match.start(), match.end("t") - match.start()
    return match.group(0)[:start] + target + match.group(0)[end:]


def _drop_links(spec: IndexSpec, line: str, paths: set[str], wiki: WikiNames | None = None) -> str:
    """Remove individual links from a line that lists several notes."""
    if wiki is not None:
        line = _drop_wiki(line, paths, wiki)
    for match in reversed(list(_LINK.finditer(line))):
        if _resolve(spec.path, match.group(2)) not in paths:
            continue
        token = re.compile(_LINK_TOKEN.format(target=re.escape(match.group(2))))
        span = token.match(line, match.start())
        start, end = match.start(), span.end() if span else match.end()
        rest = line[end:]
        if rest.startswith(", "):
            end += 2
        elif line[:start].endswith(", "):
            start -= 2
        line = line[:start] + line[end:]
    return line


def _drop_wiki(line: str, paths: set[str], wiki: WikiNames) -> str:
    """Remove the ``[[name]]`` links naming ``paths`` from a line, with a ", " beside them."""
    for match in reversed(list(_WIKI.finditer(line))):
        if wiki.of(match.group("t")) not in paths:
            continue
        start, end = match.start(), match.end()
        if line[end:].startswith(", "):
            end += 2
        elif line[:start].endswith(", "):
            start -= 2
        line = line[:start] + line[end:]
    return line


DEFAULT_LINE_CHARS = 150  # an entry line dreamd writes, when the agent documents no length
_MIN_HOOK = 20  # a hook shorter than this says nothing: leave it out instead
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_WORD = re.compile(r"[0-9a-z]+")
_ID_PREFIX = re.compile(r"^\[?TASK[0-9A-Za-z_]+(?:(?:\.\.|-)[0-9A-Za-z_]+)?\]?\s*(?:[-:–—]\s*)?")


@dataclass(frozen=True)
class NewEntry:
    """A note to add to an index, and the section it belongs in (a status or a type), if known."""

    path: str
    title: str
    description: str = ""
    section: str | None = None


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, marked with "…"."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)]
    space = cut.rfind(" ")
    cut = cut[:space] if space > 0 else ""
    return (cut.rstrip(" ,;:-–—") + "…") if cut else ""


@functools.lru_cache(maxsize=4096)  # ``fitting`` asks for the same lines once per trial
def entry_line(spec: IndexSpec, entry: NewEntry, *, hook: bool = True, newline: str = "\n") -> str:
    """The index line for ``entry``, within the line length the agent allows; the hook is
    shortened at a word boundary, or left out when ``hook`` is false or too little of it fits."""
    limit = spec.line_chars or DEFAULT_LINE_CHARS
    if spec.format == LINKS:
        target = posixpath.relpath(entry.path, posixpath.dirname(spec.path) or ".").replace(" ", "%20")
        title = _flat(entry.title)
        head = f"- [{shorten(title, max(limit - len(target) - 6, 10))}]({target})"
        sep = " — "
    else:
        task = task_id(entry.path) or entry.path.rsplit("/", 1)[-1].removesuffix(".md")
        title = _flat(_ID_PREFIX.sub("", entry.title.strip()) or entry.title)
        head = f"- [{task}] {shorten(title, max(limit - len(task) - 5, 10))}"
        sep = " - "
    room = limit - len(head) - len(sep)
    # a hook that repeats the title says nothing; one much longer than it cannot repeat it
    said = len(entry.description) > 4 * len(title) + 64 or _words(entry.description) != _words(title)
    text = shorten(entry.description, room) if hook and said and entry.description and room >= _MIN_HOOK else ""
    return head + (sep + text if text else "") + newline


def add(spec: IndexSpec, text: str, items: list[NewEntry], *, hooks: bool = True) -> str:
    """``text`` with one entry line per item, each in its section (else at the end)."""
    if not items:
        return text
    return "".join(add_lines(spec, text.splitlines(keepends=True), items, hooks=hooks))


def add_lines(spec: IndexSpec, lines: Sequence[str], items: list[NewEntry], *, hooks: bool = True) -> Sequence[str]:
    """``add`` on an index split into lines (a new list; ``lines`` is left as it is)."""
    if not items:
        return lines
    newline = "\r\n" if any(line.endswith("\r\n") for line in lines) else "\n"
    out = list(lines)
    if out and not out[-1].endswith("\n"):
        out[-1] += newline
    at_end: list[str] = []
    for item in items:
        line = entry_line(spec, item, hook=hooks, newline=newline)
        where = _section_end(spec, out, item.section)
        if where is None:
            at_end.append(line)
        else:
            out.insert(where, line)
    return out + at_end


def fitting(spec: IndexSpec, text: str, items: list[NewEntry]) -> tuple[list[NewEntry], list[NewEntry]]:
    """The entries that can join ``text`` with the whole index still loaded by the agent
    (with their hooks or, failing that, without), in order, and those that cannot."""
    if spec.limit is None or not items:
        return list(items), []
    if not spec.limit.fits(text):
        return [], list(items)  # already past the limit: bring it back first (index-limit)
    kept: list[NewEntry] = []
    left: list[NewEntry] = []
    for item in items:
        trial = [*kept, item]
        fits = spec.limit.fits(add(spec, text, trial)) or spec.limit.fits(add(spec, text, trial, hooks=False))
        (kept if fits else left).append(item)
    return kept, left


def _section_end(spec: IndexSpec, lines: list[str], section: str | None) -> int | None:
    """Where a new line of ``section`` goes: after the section's last non-blank line."""
    if spec.sections is None or not section:
        return None
    headings = [(i, _words(m.group(2))) for i, line in enumerate(lines) if (m := _HEADING.match(line.rstrip("\r\n")))]
    wanted = _words(section)
    chosen = next((i for i, words in headings if words == wanted), None)
    if chosen is None and spec.sections == BY_TYPE:
        chosen = next((i for i, words in headings if any(_same_word(w, wanted[0]) for w in words)), None) if len(wanted) == 1 else None
    if chosen is None:
        return None
    following = next((i for i, _ in headings if i > chosen), len(lines))
    last = chosen
    for i in range(chosen + 1, following):
        if lines[i].strip():
            last = i
    return last + 1


def take_over(spec: IndexSpec, lines: Sequence[str], at: int, ident: str, section: str | None) -> list[str]:
    """``lines`` with the Cline task line at ``at`` (0-based) naming task ``ident`` and filed in
    ``section``: only its bracketed id changes, its words stay, and it moves after that
    section's last line when it sits under another heading (stays when the section is not found)."""
    out = list(lines)
    line = out[at]
    match = _TASK.search(line)
    if match is not None and match.group(0) != f"[{ident}]":
        line = line[: match.start()] + f"[{ident}]" + line[match.end() :]
    out[at] = line
    above = next((m.group(2) for m in map(_HEADING.match, (x.rstrip("\r\n") for x in reversed(out[:at]))) if m), None)
    if not section or (above is not None and _words(above) == _words(section)):
        return out
    del out[at]
    where = _section_end(spec, out, section)
    out.insert(at if where is None else where, line)
    return out


def seen(spec: IndexSpec, text: str, notes: Iterable[str]) -> set[str]:
    """Notes with an entry on a line of ``text`` the agent loads whole (only that part is parsed)."""
    return {entry.path for entry in entries(spec, loaded(spec, text), notes)}


def loaded(spec: IndexSpec, text: str) -> str:
    """The lines of ``text`` the agent loads whole, from the start."""
    assert spec.limit is not None
    _, stop, _ = spec.limit.span(text)
    whole = stop if stop >= len(text) or text[stop] == "\n" else text.rfind("\n", 0, stop) + 1
    return text[:whole]


def unseen(spec: IndexSpec, text: str, notes: Iterable[str], every: set[str] | None = None) -> set[str]:
    """Notes whose every entry in ``text`` sits where the agent stops loading the index;
    ``every``: the notes ``text`` has entries for, when the caller knows them already."""
    if spec.limit is None:
        return set()
    listed = every if every is not None else {entry.path for entry in entries(spec, text, notes)}
    return listed - seen(spec, text, notes)


COMPACT_WIDTHS = (120, 90, 60, 0)  # entry line lengths tried, in turn, to fit a load limit


def compact(spec: IndexSpec, text: str, notes: Iterable[str], width: int, parsed: Parsed | None = None) -> tuple[str, int]:
    """``text`` with every entry line longer than ``width`` shortened after its entry, at a
    word boundary (``width`` 0: down to the entry itself), and runs of blank lines made one.
    Returns the text and how many entry lines were shortened; no entry is lost. ``parsed``:
    ``text`` parsed already (each width tried parses the same text)."""
    parsed = parsed if parsed is not None else Parsed.of(spec, text, notes)
    out: list[str] = []
    shortened = 0
    for number, line in enumerate(parsed.lines, 1):
        if not line.strip() and out and not out[-1].strip():
            continue
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        if number in parsed.by_line and len(parsed.by_line[number]) == 1 and len(body) > width:
            token = _ENTRY_TOKEN[spec.format].search(body)
            if token is not None:
                head, tail = body[: token.end()], body[token.end() :]
                room = max(width - len(head), 0)
                kept = shorten(tail.lstrip(" —–-:"), room - 3) if room > 3 + _MIN_HOOK else ""
                sep = tail[: len(tail) - len(tail.lstrip(" —–-:"))] or " — "
                new = head + (sep + kept if kept else "")
                if new != body:
                    shortened += 1
                    body = new
        out.append(body + ending)
    return "".join(out), shortened


_ENTRY_TOKEN = {LINKS: _LINK, CLINE_TASKS: re.compile(r"\[TASK[^\[\]\n]*\](?:[^-—–\n]*?(?=\s[-—–]\s)|[^\n]*$)")}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _same_word(word: str, wanted: str) -> bool:
    return word == wanted or word == wanted + "s" or word.removesuffix("s") == wanted


_STATUS_LINE = re.compile(r"^[ \t>*-]*\*\*(Overall )?Status:?\*\*:?[ \t]*(.+?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
STATUSES = {"In Progress": ("progress", "blocked", "active"), "Pending": ("pending", "not started", "todo", "planned"),
            "Completed": ("complete", "done", "finished"), "Abandoned": ("abandon", "cancel", "dropped")}  # fmt: skip
# each status's words at the start of a word: "Abandoned" holds "done", "Incomplete" "complete"
_STATUS_WORDS = {name: re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + ")") for name, words in STATUSES.items()}


def task_status(body: str) -> str | None:
    """The index section a Cline task file's ``**Status:**`` line names (its
    ``**Overall Status:**`` when it has no status line), or None when it has neither."""
    found = {bool(m.group(1)): m.group(2) for m in reversed(list(_STATUS_LINE.finditer(body)))}
    value = found.get(False) or found.get(True)
    return status_named(value) if value else None


def status_named(text: str) -> str | None:
    """The index section whose status words ``text`` (a status value, a heading) uses first."""
    value = text.casefold()
    found = [(m.start(), name) for name, words in _STATUS_WORDS.items() if (m := words.search(value))]
    return min(found)[1] if found else None


def _flat(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())
