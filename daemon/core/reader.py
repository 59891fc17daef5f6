"""How an agent reads its memory folder: the shape of a reader model, and what follows from it.

A preset declares, for its agent, which files the agent lists as notes (``Listing``), its
index (``daemon.core.index_spec.IndexSpec``: how it is written, how much of it is loaded, its
sections), and which link syntaxes mean "this note refers to that one". The facts for each agent, with the source each comes from, live in
``daemon.stores.readers``; this module only says what those facts mean. Pure: no I/O.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from daemon.core.index_spec import IndexSpec

# Link syntaxes (see daemon.core.links for how each is found, resolved and rewritten).
MARKDOWN = "markdown"  # [text](other.md), relative to the linking note's folder
MEM = "mem"  # `mem:NAME`, NAME = the note's path without ".md" (Serena)
WIKI = "wiki"  # [[name]]: the note whose frontmatter name is "name", else whose file stem is
TASK_ID = "task-id"  # [TASK012]: the task file tasks/TASK012-*.md (Cline's memory bank)
LINK_SYNTAXES = (MARKDOWN, MEM, WIKI, TASK_ID)

# How dreamd retires a note: it stays where it is, marked (``in-place``), or moves to the
# archive folder the agent does not list (``archive``).
IN_PLACE = "in-place"
ARCHIVE = "archive"
RETIRE_MODES = (IN_PLACE, ARCHIVE)


class Listing(NamedTuple):
    """Which files under the notes root an agent lists as notes (paths are store-relative)."""

    recursive: bool  # False: only files directly in the notes root
    dot_dirs: bool  # whether files inside dot-folders are listed
    suffixes: tuple[str, ...] | None = (".md",)  # None: every file, whatever its name
    skip_names: tuple[str, ...] = ()  # base names never listed as notes, at any depth
    ignored: tuple[str, ...] = ()  # regexes that hide a note, matched in full against its name

    def sees(self, path: str) -> bool:
        """Whether the agent's own listing shows this file as a note."""
        name = path
        if "/" in path:
            if not self.recursive:
                return False
            *folders, name = path.split("/")
            if not self.dot_dirs and any(part.startswith(".") for part in folders):
                return False
        if name in self.skip_names:
            return False
        if self.suffixes is not None and not name.endswith(self.suffixes):
            return False
        return not self.ignored or not any(pattern.fullmatch(note_name(path)) for pattern in _compiled(self.ignored))


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


def note_name(path: str) -> str:
    """A note's name as agents that name notes by path say it: the path without ".md"."""
    return path.removesuffix(".md")


class ReaderModel(NamedTuple):
    """How one agent lists, loads and links its memory: what dreamd must keep right for it."""

    agent: str
    listing: Listing
    links: tuple[str, ...]
    index: IndexSpec | None = None
    required: tuple[str, ...] = ()  # notes the agent's convention needs: never retired
    instructions: tuple[str, ...] = ()  # notes telling the agent how to keep memory: their links are examples
    reads_status: bool = False  # the agent hides notes whose frontmatter says they are retired
    frontmatter: bool = False  # the agent's notes carry YAML frontmatter it parses as metadata: a key added there is not read as text
    one_text: bool = False  # a note is one item the agent shows as written (a record's content): a merge keeps one text whole, never lines of two glued
    name_prefix: str = ""  # a note is named in merged_from by its path without this prefix (a record by its id, not its key)
    sources: tuple[str, ...] = ()  # where each fact above comes from (version, document, source path)

    def sees(self, path: str) -> bool:
        return self.listing.sees(path)


# A store with no agent of its own: markdown notes at any depth outside dot-folders, whose
# frontmatter status is the reading rule.
PLAIN = ReaderModel(agent="a reader of frontmatter", listing=Listing(recursive=True, dot_dirs=False), links=(MARKDOWN, WIKI), reads_status=True, frontmatter=True)
