"""References between notes: find them in each syntax a reader model declares, resolve them,
and rewrite them to point at another note.

A reference is where a note names another (``[x](a.md)``, `` `mem:a` ``, ``[[a]]``,
``[TASK012]``). Retiring a note must not leave references to it dangling, so the change
builder rewrites them to the surviving note, and checks on the result that every reference
that resolved to a live note still does. Only the target token's characters are replaced:
the rest of the note stays byte for byte. Pure: no I/O.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Iterable, Mapping
import dataclasses
from dataclasses import dataclass, field
from urllib.parse import unquote

from daemon.core.index import LINK_PATTERN, WIKI_PATTERN, task_id
from daemon.core.reader import MARKDOWN, MEM, TASK_ID, WIKI, note_name
from daemon.core.spelling import fold  # noqa: F401 (offered here too)

_MARKDOWN = re.compile(LINK_PATTERN)  # [text](target.md#anchor "title"): the target is group "t"
# Serena's name characters: letters, digits, "_", "-" and "/" (no "."), prefixed by mem:
_MEM_CHARS = r"A-Za-z0-9_\-/"
_MEM = re.compile(rf"(?<![{_MEM_CHARS}])mem:(?P<t>[{_MEM_CHARS}]+)")
_MEM_NAME = re.compile(rf"[{_MEM_CHARS}]+")
# [[name]], [[name#heading]], [[name|shown text]]
_WIKI = re.compile(WIKI_PATTERN)
# [TASK012] (not a markdown link's text); ranges [TASK052..054] name the file TASK052-054-*.md
_TASK = re.compile(r"\[(?P<t>TASK[0-9A-Za-z_]+?)(?:(?:\.\.|-)[0-9A-Za-z_]+)?\](?!\()")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_NEWLINE = re.compile("\n")
_PATTERNS = ((MARKDOWN, _MARKDOWN), (MEM, _MEM), (WIKI, _WIKI), (TASK_ID, _TASK))


@dataclass(frozen=True)
class Reference:
    """One place where a note refers to another."""

    source: str  # the note that refers
    syntax: str
    line: int  # 1-based line of the note
    start: int  # offsets of the target token in the note's text (what a rewrite replaces)
    end: int
    written: str  # the target as written: a path, a name or a task id
    target: str | None  # the note it means; None when no single note of the store matches
    candidates: int  # how many notes it could mean (0: missing, >1: ambiguous)
    named: str | None = None  # the store path it names, present or not (markdown, mem)
    whole: tuple[int, int] = (0, 0)  # offsets of the whole reference (what unlinking replaces)
    label: str = ""  # the words it shows, kept when it is unlinked

    @property
    def key(self) -> str:
        """What the reference points at, as a relink names it: a path, or the name as written."""
        return self.named or f"{self.syntax}:{self.written}"

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "line": self.line, "syntax": self.syntax, "written": self.written, "target": self.target or self.named}


@dataclass(frozen=True)
class Names:
    """What references resolve against: the notes present, and the names they answer to.

    ``without`` gives the same names with some notes gone (as a change leaves the store),
    sharing the lookup tables, so asking it costs nothing per proposal.
    """

    paths: frozenset[str]
    titles: Mapping[str, str]  # path -> frontmatter ``name`` (for [[name]])
    task_folder: str = "tasks"
    gone: frozenset[str] = frozenset()
    _tables: dict[str, dict[str, list[str]]] = field(default_factory=dict, compare=False, repr=False)

    def without(self, gone: set[str]) -> Names:
        return dataclasses.replace(self, gone=self.gone | frozenset(gone)) if gone else self

    def has(self, path: str) -> bool:
        return path in self.paths and path not in self.gone

    def _table(self, kind: str) -> dict[str, list[str]]:
        if kind not in self._tables:
            self._tables[kind] = self._by_wiki() if kind == "wiki" else self._by_task()
        return self._tables[kind]

    def _by_wiki(self) -> dict[str, list[str]]:
        """[[x]] names: a frontmatter name wins over a file stem of the same spelling."""
        named: dict[str, list[str]] = {}
        stems: dict[str, list[str]] = {}
        for path in sorted(self.paths):
            if not path.endswith(".md"):
                continue
            if self.titles.get(path):
                named.setdefault(self.titles[path], []).append(path)
            stems.setdefault(posixpath.basename(note_name(path)), []).append(path)
            if "/" in path:  # [[folder/name]] names a nested note by its path
                stems.setdefault(note_name(path), []).append(path)
        return {**stems, **named}

    def _by_task(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        prefix = f"{self.task_folder}/" if self.task_folder else ""
        for path in sorted(self.paths):
            ident = task_id(path)
            if ident and path.startswith(prefix):
                found.setdefault(ident, []).append(path)
        return found

    def wiki(self, name: str) -> list[str]:
        return [p for p in self._table("wiki").get(name, ()) if p not in self.gone]

    def task(self, ident: str) -> list[str]:
        return [p for p in self._table("task").get(ident, ()) if p not in self.gone]

    def wiki_name(self, path: str, like: str = "") -> str | None:
        """How to write [[...]] so that it means exactly ``path``, or None when nothing does;
        of the names that do, one spelled like ``like`` (what was written) once folded."""
        names = [n for n in (self.titles.get(path), posixpath.basename(note_name(path)), note_name(path)) if n and self.wiki(n) == [path]]
        return next((n for n in names if fold(n) == fold(like)), names[0] if names else None)


def resolve_markdown(source: str, written: str) -> str | None:
    """Store path of a markdown link target, relative to the linking note; None when it is a
    URL, absolute, or leaves the notes root."""
    target = unquote(written.strip())
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    return None if joined == ".." or joined.startswith("../") else joined


def _code_lines(text: str) -> set[int]:
    """0-based numbers of lines inside fenced code blocks (their links are examples, not links)."""
    inside: str | None = None
    found = set()
    for number, line in enumerate(text.split("\n")):
        fence = _FENCE.match(line)
        if inside is None and fence:
            inside = fence.group(1)[0]
            found.add(number)
        elif inside is not None:
            found.add(number)
            if fence and fence.group(1)[0] == inside:
                inside = None
    return found


def find(source: str, text: str, body_start: int, syntaxes: Iterable[str], names: Names) -> list[Reference]:
    """Every reference in ``text`` (a note's decoded bytes) after offset ``body_start`` (the
    frontmatter is not searched), in the given syntaxes, in text order."""
    wanted = set(syntaxes)
    matches = [(syntax, m) for syntax, pattern in _PATTERNS if syntax in wanted for m in pattern.finditer(text, body_start)]
    if not matches:
        return []  # most notes: no line bookkeeping at all
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
    code = _code_lines(text) if "```" in text or "~~~" in text else set()
    found: list[Reference] = []
    for syntax, match in matches:
        number = bisect.bisect_right(line_starts, match.start()) - 1
        if syntax != MEM and number in code:
            continue
        written = match.group("t")
        named = _named(syntax, source, written)
        if named == "":
            continue
        targets = ([named] if names.has(named) else []) if named else (names.wiki(written.strip()) if syntax == WIKI else names.task(written))
        target = targets[0] if len(targets) == 1 else None
        label = (match.groupdict().get("label") or "").strip() or (written if syntax != MARKDOWN else "")
        found.append(Reference(source, syntax, number + 1, match.start("t"), match.end("t"), written, target, len(targets), named, (match.start(), match.end()), label))
    return sorted(found, key=lambda r: r.start)


def _named(syntax: str, source: str, written: str) -> str | None:
    """The store path a reference names (None: it names by name or id; "": not a store note)."""
    if syntax == MARKDOWN:
        return resolve_markdown(source, written) or ""
    if syntax == MEM:
        if written == "global" or written.startswith("global/") or written.endswith("/"):
            return ""  # Serena's global memories live outside the project's store
        return f"{written}.md"
    return None


def spelled(ref: Reference, new: str, names: Names) -> str | None:
    """How ``ref`` must be written to mean the note at ``new``; None when its syntax cannot say it."""
    if ref.syntax == MARKDOWN:
        rel = posixpath.relpath(new, posixpath.dirname(ref.source) or ".")
        return rel.replace(" ", "%20")
    if ref.syntax == MEM:
        name = note_name(new)
        return name if new.endswith(".md") and _MEM_NAME.fullmatch(name) else None
    if ref.syntax == WIKI:
        return names.wiki_name(new, ref.written)
    ident = task_id(new)
    return ident if ident and names.task(ident) == [new] else None


def rewrite(text: str, spell: Mapping[Reference, str | None]) -> str:
    """``text`` with each reference's target respelled (a None spelling unlinks it: its words
    stay, the link goes); nothing else moves."""
    out, last = [], 0
    for ref in sorted(spell, key=lambda r: r.start):
        new = spell[ref]
        start, end = (ref.start, ref.end) if new is not None else ref.whole
        out.append(text[last:start])
        out.append(new if new is not None else ref.label)
        last = end
    out.append(text[last:])
    return "".join(out)
