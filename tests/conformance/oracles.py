"""Each agent's reading rule, restated from the research notes as a test oracle.

These oracles do not import dreamd's reader models (``daemon.core.reader``,
``daemon.stores.readers``, ``daemon.core.links``): they are written again from what each
agent does, with the source of each rule, so that a mistake in dreamd's model of an agent
is caught by a second, independent reading of the same facts. They read folders on disk
and answer four questions, the same for every agent:

- ``visible_notes(root)``: the store paths the agent lists as notes;
- ``index_entries(root)``: the index's entries, and whether each resolves to a note the
  agent sees and that is live;
- ``loaded(root)``: whether the index is within what the agent loads, and which entries
  lie beyond that;
- ``references(root)``: every reference between notes in the agent's syntaxes, and
  whether it resolves to a visible live note.

"Live": the note's frontmatter has no ``status: superseded`` or ``status: expired``. No
agent reads that status (none of the four parses frontmatter for it), which is why a
retired note must leave what the agent lists; the oracles use it only to tell which of
the notes the agent sees say they are retired.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

import yaml

T = TypeVar("T")
RETIRED_STATUSES = ("superseded", "expired")
ARCHIVE_DIR = ".dreamd-archive"


# Shared reading ------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexEntry:
    """One entry of an index: what it names, the note it lands on, and whether that note is
    one the agent sees and that is live."""

    line: int  # 1-based line of the index file
    written: str  # the path or task id as written
    target: str | None  # the store path it resolves to (None: nothing the agent sees)
    resolves: bool  # target is a visible live note
    section: str | None = None  # Cline: the heading the entry sits under
    status: str | None = None  # Cline: the task file's **Status:** value

    @property
    def key(self) -> str:
        """What the entry is about: the note it lands on, else what it names."""
        return self.target or self.written


@dataclass(frozen=True)
class Loaded:
    """How much of the index the agent loads."""

    within_limit: bool  # the agent loads all of it
    unseen: frozenset[str]  # entry keys none of whose lines the agent loads whole
    seen: frozenset[str] = frozenset()  # entry keys the agent loads


@dataclass(frozen=True)
class Ref:
    """A reference from one note to another, as the agent would follow it."""

    source: str
    syntax: str
    written: str
    target: str | None
    resolves: bool  # lands on a visible live note


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def frontmatter(data: bytes) -> dict:
    """The YAML mapping between a leading ``---`` line and the next ``---`` line, else {}
    (do not change the mapping returned: it is shared by every caller with the same bytes)."""
    return _frontmatter(data)


@functools.lru_cache(maxsize=4096)
def _frontmatter(data: bytes) -> dict:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    for number, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            try:
                found = yaml.load("\n".join(lines[1:number]), Loader=_LOADER)
            except yaml.YAMLError:
                return {}
            return found if isinstance(found, dict) else {}
    return {}


def body(data: bytes) -> str:
    """The text after the frontmatter (all of it when there is none)."""
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return text
    for number, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            return "".join(lines[number + 1 :])
    return text


def is_live(data: bytes) -> bool:
    return frontmatter(data).get("status") not in RETIRED_STATUSES


_PINNED: dict[str, dict[str, object]] = {}


@contextlib.contextmanager
def pinned(root: Path) -> Iterator[None]:
    """Within this block ``root`` is read once and its answers kept: one reading of a store
    that does not change meanwhile (outside such a block every question reads the disk)."""
    _PINNED[str(root)] = {}
    try:
        yield
    finally:
        del _PINNED[str(root)]


def _memo(method: Callable[[Any, Path], T]) -> Callable[[Any, Path], T]:
    """Keep an oracle method's answer for the pinned reading of its root."""

    @functools.wraps(method)
    def cached(self: Any, root: Path) -> T:
        memo = _PINNED.get(str(root))
        if memo is None:
            return method(self, root)
        key = f"\0{type(self).__name__}.{method.__name__}"
        if key not in memo:
            memo[key] = method(self, root)
        return memo[key]  # type: ignore[return-value]

    return cached


def _read(root: Path, rel: str) -> bytes | None:
    """The bytes of a regular file of the store (None: absent or unreadable)."""
    memo = _PINNED.get(str(root))
    if memo is not None and rel in memo:
        return memo[rel]  # type: ignore[return-value]
    path = os.path.join(root, rel)
    try:
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                data = handle.read()
        else:
            data = None
    except OSError:
        data = None
    if memo is not None:
        memo[rel] = data
    return data


def _walk_files(root: Path, *, skip_dot_dirs: bool, follow: bool = False) -> list[str]:
    """Every regular file below ``root`` as a relative POSIX path (``os.walk``, top-down;
    ``follow``: into symlinked folders too)."""
    found = []
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(top, followlinks=follow):
        if skip_dot_dirs:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, top).replace(os.sep, "/")
        for name in filenames:
            if os.path.isfile(os.path.join(dirpath, name)):
                found.append(name if rel == "." else f"{rel}/{name}")
    return found


_MD_LINK = re.compile(r"\[(?P<label>[^\]\n]*)\]\(\s*<?(?P<target>[^)\s>]+?\.md)(?:#[^)\s>]*)?>?(?:\s+\"[^\"]*\")?\s*\)")


def _markdown_targets(text: str) -> Iterable[tuple[int, str]]:
    """(1-based line, target) of every markdown link to a ``.md`` file."""
    for number, line in enumerate(text.split("\n"), 1):
        for match in _MD_LINK.finditer(line):
            yield number, match.group("target")


def _join(source: str, written: str) -> str | None:
    """A link target relative to the linking file's folder, as a store path; None outside."""
    target = unquote(written.strip())
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    return None if joined == ".." or joined.startswith("../") else joined


class Oracle:
    """What every agent oracle answers; subclasses give the agent's own rules."""

    agent = "?"
    index_path: str | None = None

    def archive_root(self, root: Path) -> Path:
        raise NotImplementedError

    def visible_notes(self, root: Path) -> set[str]:
        raise NotImplementedError

    def index_entries(self, root: Path) -> list[IndexEntry]:
        return []

    def loaded(self, root: Path) -> Loaded:
        entries = self.index_entries(root)
        return Loaded(True, frozenset(), frozenset(e.key for e in entries))

    def references(self, root: Path) -> list[Ref]:
        return []

    # derived -----------------------------------------------------------------------

    @_memo
    def visible_live(self, root: Path) -> set[str]:
        return {p for p in self.visible_notes(root) if p != self.index_path and is_live(_read(root, p) or b"")}

    def retired_visible(self, root: Path) -> set[str]:
        """Notes the agent lists whose frontmatter says they are retired."""
        return {p for p in self.visible_notes(root) if not is_live(_read(root, p) or b"")}

    def archived_visible(self, root: Path) -> set[str]:
        """Files of the archive root that the agent lists (only possible when it is inside)."""
        archive = self.archive_root(root)
        if archive.parent != root:
            return set()
        prefix = archive.name + "/"
        return {p for p in self.visible_notes(root) if p.startswith(prefix)}


# Serena ------------------------------------------------------------------------------


class Serena(Oracle):
    """Serena v1.7.0 (oraios/serena 949a27ef), src/serena/memories/memory_manager.py.

    - ``_iter_memory_files`` walks the memories folder with ``os.walk(followlinks=True)`` and
      yields every file whose name ends with ``.md`` (case-sensitive): every depth, dot-folders
      and dot-files included (nothing filters them).
    - ``_list_memories``: a memory's name is its path relative to the folder without ``.md``,
      ``/`` as separator.
    - ``_is_ignored_memory``: ``ignored_memory_patterns`` (regexes) hide a memory when one
      matches its name in full (``pattern.fullmatch(name)``); ignored memories cannot be read
      through the tools either (``_check_not_ignored``).
    - memory_reference_analysis.py: references are ``mem:NAME`` (``MEMORY_REF_PREFIX``), NAME
      made of ``[A-Za-z0-9_\\-/]`` (``NAME_CHAR_CLASS``), matched by
      ``(?<!NAME)mem:(NAME+?)(?!NAME)``; the agent follows one with ``read_memory(NAME)``, which
      reads ``NAME.md``. ``global/...`` names are the user's global memories, outside the project.
    - No index file (the activation message lists memory names).
    """

    agent = "Serena"

    def __init__(self, ignored: Iterable[str] = (), archive_inside: bool = False) -> None:
        self.ignored = tuple(re.compile(p) for p in ignored)
        self.archive_inside = archive_inside

    def archive_root(self, root: Path) -> Path:
        return root / ARCHIVE_DIR if self.archive_inside else root.parent / f"{root.name}.dreamd-archive"

    @staticmethod
    def name_of(path: str) -> str:
        return path[: -len(".md")]

    @_memo
    def visible_notes(self, root: Path) -> set[str]:
        found = set()
        for path in _walk_files(root, skip_dot_dirs=False, follow=True):
            if path.endswith(".md") and not any(p.fullmatch(self.name_of(path)) for p in self.ignored):
                found.add(path)
        return found

    _NAME = r"A-Za-z0-9_\-/"
    _MEM = re.compile(rf"(?<![{_NAME}])mem:([{_NAME}]+?)(?![{_NAME}])")

    def references(self, root: Path) -> list[Ref]:
        visible = self.visible_notes(root)
        live = self.visible_live(root)
        refs = []
        for source in sorted(live):
            text = body(_read(root, source) or b"")
            for match in self._MEM.finditer(text):
                name = match.group(1)
                if name == "global" or name.startswith("global/"):
                    continue  # the user's global memories, not this store
                target = f"{name}.md"
                refs.append(Ref(source, "mem", name, target if target in visible else None, target in live))
        return refs


# Generic -----------------------------------------------------------------------------


class Generic(Oracle):
    """Any tool that reads frontmatter (dreamd's generic preset; no agent of its own).

    - It lists every ``*.md`` under the folder, at any depth, except what is inside a
      dot-folder, and reads each note's frontmatter: a note whose ``status`` is ``superseded``
      or ``expired`` is read as retired, wherever it sits. So a note retired in place is not
      read as current, and is not "in sight" as a live one.
    - References are markdown links ``[x](a.md)`` relative to the linking note, and
      ``[[name]]`` by frontmatter ``name``, else by file stem.
    - An index, when the store names one (``index_path``), is read whole: its markdown links
      are its entries, relative to the index.
    """

    agent = "a frontmatter-reading tool"

    def __init__(self, index_path: str | None = None) -> None:
        self.index_path = index_path

    def archive_root(self, root: Path) -> Path:
        return root / ARCHIVE_DIR

    @_memo
    def visible_notes(self, root: Path) -> set[str]:
        return {p for p in _walk_files(root, skip_dot_dirs=True) if p.endswith(".md")}

    def retired_visible(self, root: Path) -> set[str]:
        return set()  # it reads the status: a retired note in sight is read as retired

    def index_entries(self, root: Path) -> list[IndexEntry]:
        data = _read(root, self.index_path) if self.index_path else None
        if data is None:
            return []
        live = self.visible_live(root)
        found = []
        for number, written in _markdown_targets(data.decode("utf-8", errors="replace")):
            target = _join(self.index_path, written)  # type: ignore[arg-type]
            found.append(IndexEntry(number, written, target if target in self.visible_notes(root) else None, target in live))
        return found

    def references(self, root: Path) -> list[Ref]:
        live = self.visible_live(root)
        stems = {posixpath.basename(p)[: -len(".md")]: p for p in sorted(live)}
        names = {n.strip(): p for p in sorted(live) if isinstance(n := frontmatter(_read(root, p) or b"").get("name"), str)}
        refs = []
        for source in sorted(live):
            text = body(_read(root, source) or b"")
            for _, written in _markdown_targets(text):
                target = _join(source, written)
                refs.append(Ref(source, "markdown", written, target, target in live))
            for match in ClaudeCode._WIKI.finditer(text):
                written = match.group(1).strip()
                target = names.get(written) or stems.get(written)
                refs.append(Ref(source, "wiki", written, target, target is not None))
        return refs


# Claude Code -------------------------------------------------------------------------


class ClaudeCode(Oracle):
    """Claude Code auto memory (docs at code.claude.com/docs/en/memory; CHANGELOG to 2.1.240).

    - Recall (client 2.1.88, src/memdir/memoryScan.ts ``scanMemoryFiles``):
      ``readdir(memoryDir, {recursive: true})`` filtered to names ending in ``.md`` whose base
      name is not ``MEMORY.md``: every depth, hidden folders too (Node lists them). Recall
      then keeps the 200 newest (``MAX_MEMORY_FILES``); the fixtures stay below that.
    - MEMORY.md (docs: "The first 200 lines of MEMORY.md, or the first 25KB, whichever comes
      first"; CHANGELOG 2.1.83 added the 25KB; client 2.1.88 memdir.ts ``MAX_ENTRYPOINT_LINES =
      200``, ``MAX_ENTRYPOINT_BYTES = 25_000``): the text is trimmed first, cut after 200 lines,
      then, when longer than 25,000 characters, at the last newline before that.
    - Entries (system prompt 2.1.224 "memory-index-pointer-instructions"):
      ``- [Title](file.md) — one-line hook``; one MEMORY.md indexes private notes as
      ``file.md`` and team notes as ``team/file.md`` (prompt 2.1.173+, "combined memory index"),
      so paths are relative to the memory folder.
    - Links (system prompt 2.1.139+, "memory-instructions"): "Link related memories with
      [[their-name]]", ``name`` being the frontmatter slug; a note with no such name is
      found by its file name (the research notes' fallback: the file stem).
    """

    agent = "Claude Code"
    index_path = "MEMORY.md"
    LINES = 200
    CHARS = 25_000

    def archive_root(self, root: Path) -> Path:
        return root.parent / f"{root.name}.dreamd-archive"

    @_memo
    def visible_notes(self, root: Path) -> set[str]:
        return {p for p in _walk_files(root, skip_dot_dirs=False) if p.endswith(".md") and posixpath.basename(p) != "MEMORY.md"}

    def _entries_in(self, root: Path, text: str) -> list[IndexEntry]:
        visible, live = self.visible_notes(root), self.visible_live(root)
        found = []
        for number, written in _markdown_targets(text):
            target = _join(self.index_path, written)
            found.append(IndexEntry(number, written, target if target in visible else None, target in live))
        return found

    def index_entries(self, root: Path) -> list[IndexEntry]:
        data = _read(root, self.index_path)
        return [] if data is None else self._entries_in(root, data.decode("utf-8", errors="replace"))

    def loaded_text(self, text: str) -> tuple[str, str]:
        """(what the agent loads, the trimmed text it counts)."""
        trimmed = text.strip()
        lines = trimmed.split("\n")
        kept = "\n".join(lines[: self.LINES])
        if len(kept) > self.CHARS:
            cut = kept.rfind("\n", 0, self.CHARS)
            kept = kept[: cut if cut > 0 else self.CHARS]
        return kept, trimmed

    def loaded(self, root: Path) -> Loaded:
        data = _read(root, self.index_path)
        if data is None:
            return Loaded(True, frozenset())
        kept, trimmed = self.loaded_text(data.decode("utf-8", errors="replace"))
        seen = {e.key for e in self._entries_in(root, kept)}  # the loaded lines are whole lines
        unseen = {e.key for e in self._entries_in(root, trimmed)} - seen
        return Loaded(kept == trimmed, frozenset(unseen), frozenset(seen))

    _WIKI = re.compile(r"\[\[([^\[\]|#\n]+?)\s*(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")

    def references(self, root: Path) -> list[Ref]:
        visible = self.visible_notes(root)
        live = self.visible_live(root)
        names: dict[str, set[str]] = {}
        stems: dict[str, set[str]] = {}
        for path in visible:
            name = frontmatter(_read(root, path) or b"").get("name")
            if isinstance(name, str) and name.strip():
                names.setdefault(name.strip(), set()).add(path)
            stems.setdefault(posixpath.basename(path)[: -len(".md")], set()).add(path)
        refs = []
        for source in sorted(live):
            for match in self._WIKI.finditer(body(_read(root, source) or b"")):
                written = match.group(1).strip()
                candidates = names.get(written) or stems.get(written) or set()
                landing = sorted(candidates & live)
                target = landing[0] if landing else (sorted(candidates)[0] if candidates else None)
                refs.append(Ref(source, "wiki", written, target, bool(landing)))
        return refs


# DeepCode ----------------------------------------------------------------------------


class DeepCode(Oracle):
    """DeepCode (HKUDS/DeepCode main 4c5ab71a; v2.0.0 and v2.1.0 alike), core/harness/memory.py.

    - ``MemoryTool.execute`` action ``list``: ``sorted(p.name for p in self._dir.iterdir() if
      p.is_file())``: every regular file directly in the folder, any extension, dot-files too,
      never a subfolder or what is inside one. ``_resolve`` refuses names with a folder part
      (``name != Path(name).name``), so only those flat files can be read.
    - ``memory_index`` / ``_read_capped``: MEMORY.md enters the prompt as ``text[:8000]`` of
      the untrimmed text (``_MAX_INJECT_CHARS = 8000``, code points), the rest cut off.
    - No entry or link format in code; dreamd writes markdown links ``[x](a.md)`` in
      MEMORY.md, which the agent follows with ``memory read a.md`` (a flat name).
    """

    agent = "DeepCode"
    index_path = "MEMORY.md"
    CHARS = 8000

    def archive_root(self, root: Path) -> Path:
        return root / ARCHIVE_DIR

    @_memo
    def visible_notes(self, root: Path) -> set[str]:
        return {p.name for p in root.iterdir() if p.is_file()}

    def _land(self, root: Path, source: str, written: str) -> tuple[str | None, bool]:
        target = _join(source, written)
        if target is None or "/" in target or target not in self.visible_notes(root):
            return None, False
        return target, target != self.index_path and is_live(_read(root, target) or b"")

    def _entries_in(self, root: Path, text: str) -> list[IndexEntry]:
        found = []
        for number, written in _markdown_targets(text):
            target, resolves = self._land(root, self.index_path, written)
            found.append(IndexEntry(number, written, target, resolves))
        return found

    def index_entries(self, root: Path) -> list[IndexEntry]:
        data = _read(root, self.index_path)
        return [] if data is None else self._entries_in(root, data.decode("utf-8", errors="replace"))

    def loaded(self, root: Path) -> Loaded:
        data = _read(root, self.index_path)
        if data is None:
            return Loaded(True, frozenset())
        text = data.decode("utf-8", errors="replace")
        kept = text[: self.CHARS]
        seen = {e.key for e in self._entries_in(root, kept)}  # a link cut in half is not seen
        unseen = {e.key for e in self._entries_in(root, text)} - seen
        return Loaded(len(text) <= self.CHARS, frozenset(unseen), frozenset(seen))

    def references(self, root: Path) -> list[Ref]:
        refs = []
        for source in sorted(self.visible_notes(root)):
            data = _read(root, source) or b""
            if not source.endswith(".md") or not is_live(data):
                continue
            for _, written in _markdown_targets(body(data)):
                target, resolves = self._land(root, source, written)
                refs.append(Ref(source, "markdown", written, target, resolves))
        return refs


# Cline -------------------------------------------------------------------------------


class Cline(Oracle):
    """Cline's memory bank.

    - docs.cline.bot/best-practices/memory-bank (cline/cline 21cb8d25,
      docs/best-practices/memory-bank.mdx): "I MUST read ALL memory bank files at the start of
      EVERY task"; the files are Markdown; extra files and folders are allowed. The agent
      finds them with ``list_files`` recursively, which ignores ``**/.*/**`` (what is inside
      hidden folders; apps/vscode/src/services/glob/list-files.ts ``buildIgnorePatterns``).
      Nothing is cut: no load limit.
    - The tasks convention (github/awesome-copilot instructions/memory-bank.instructions.md,
      55bee93 / 0fa87ab): ``tasks/_index.md`` holds ``- [TASKnnn] Name - note`` lines under
      ``## In Progress``, ``## Pending``, ``## Completed``, ``## Abandoned`` ("sorted by
      status"); task files are ``tasks/TASKID-taskname.md`` with a ``**Status:**`` line; the
      index is joined to files only by the bracketed id (also in subfolders of tasks/, as
      real banks file them). Tasks are referred to by id elsewhere (``[TASK003]``, not a
      link); markdown links ``[x](file.md)`` are relative to the linking file.
    """

    agent = "Cline"
    index_path = "tasks/_index.md"

    def archive_root(self, root: Path) -> Path:
        return root / ARCHIVE_DIR

    @_memo
    def visible_notes(self, root: Path) -> set[str]:
        return {p for p in _walk_files(root, skip_dot_dirs=True) if p.endswith(".md")}

    _ENTRY = re.compile(r"^\s*[-*]\s*\[(TASK[0-9A-Za-z_]+)\]")
    _HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
    _STATUS = re.compile(r"^\s*\*\*Status:\*\*\s*(.+?)\s*$", re.MULTILINE)
    _TASK_REF = re.compile(r"\[(TASK[0-9A-Za-z_]+)\](?!\()")

    def task_files(self, root: Path, ident: str) -> list[str]:
        """Visible files tasks/**/ID-*.md (or tasks/**/ID.md)."""
        return sorted(
            p for p in self.visible_notes(root)
            if p.startswith("tasks/") and re.fullmatch(rf"{re.escape(ident)}(?:-.*)?\.md", posixpath.basename(p))
        )  # fmt: skip

    def status_of(self, data: bytes) -> str | None:
        match = self._STATUS.search(body(data))
        return match.group(1).strip() if match else None

    def _task(self, root: Path, ident: str) -> tuple[str | None, bool, str | None]:
        files = self.task_files(root, ident)
        live = [p for p in files if is_live(_read(root, p) or b"")]
        target = (live or files or [None])[0]
        status = self.status_of(_read(root, target) or b"") if target else None
        return target, bool(live), status

    def index_entries(self, root: Path) -> list[IndexEntry]:
        data = _read(root, self.index_path)
        if data is None:
            return []
        found, section = [], None
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
            heading = self._HEADING.match(line.strip())
            if heading:
                section = heading.group(1)
                continue
            match = self._ENTRY.match(line)
            if match:
                target, resolves, status = self._task(root, match.group(1))
                found.append(IndexEntry(number, match.group(1), target, resolves, section, status))
        return found

    def references(self, root: Path) -> list[Ref]:
        visible, live = self.visible_notes(root), self.visible_live(root)
        refs = []
        for source in sorted(live):
            text = body(_read(root, source) or b"")
            for _, written in _markdown_targets(text):
                target = _join(source, written)
                refs.append(Ref(source, "markdown", written, target if target in visible else None, target in live))
            for match in self._TASK_REF.finditer(text):
                target, resolves, _ = self._task(root, match.group(1))
                refs.append(Ref(source, "task-id", match.group(1), target, resolves))
        return refs

    @staticmethod
    def section_matches(entry: IndexEntry) -> bool:
        """Whether the entry sits in the section its task file's **Status:** names."""
        if entry.section is None or entry.status is None:
            return True
        return entry.section.strip().casefold() == entry.status.strip().casefold()


# Snapshots ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """Every file below a folder (bytes, mode, mtime) and every folder, by relative path."""

    files: dict[str, tuple[bytes, int, int]] = field(default_factory=dict)
    dirs: frozenset[str] = frozenset()

    def without(self, *prefixes: str) -> Tree:
        """The same tree without what lies at or below the given relative paths."""

        def keep(path: str) -> bool:
            return not any(path == p or path.startswith(p + "/") for p in prefixes)

        return Tree({p: v for p, v in self.files.items() if keep(p)}, frozenset(d for d in self.dirs if keep(d)))

    def contents(self) -> dict[str, bytes]:
        """Path -> bytes of the files alone (empty folders ignored)."""
        return {p: v[0] for p, v in self.files.items()}


def snapshot(top: Path) -> Tree:
    """Every regular file and folder below ``top`` (hidden ones too), symlinks as files of
    their target text; a missing folder is an empty tree."""
    files: dict[str, tuple[bytes, int, int]] = {}
    dirs: set[str] = set()
    if not top.exists():
        return Tree()
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames:
            dirs.add((Path(dirpath) / name).relative_to(top).as_posix())
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(top).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                files[rel] = (os.readlink(path).encode(), info.st_mode, 0)
            else:
                files[rel] = (path.read_bytes(), info.st_mode, info.st_mtime_ns)
    return Tree(files, frozenset(dirs))


def store_bytes(oracle: Oracle, root: Path) -> dict[str, bytes]:
    """Bytes of every file of the store's two roots, the archive's files under its folder name."""
    found = {f"notes/{p}": data for p, data in snapshot(root).contents().items()}
    archive = oracle.archive_root(root)
    if archive.parent != root:
        found |= {f"archive/{p}": data for p, data in snapshot(archive).contents().items()}
    return found


def outside_roots(oracle: Oracle, root: Path) -> Tree:
    """Everything under the notes root's parent except the notes root and the archive root."""
    parent = root.parent
    archive = oracle.archive_root(root)
    return snapshot(parent).without(root.name, archive.relative_to(parent).as_posix())
