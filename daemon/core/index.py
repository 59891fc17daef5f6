"""Index notes: which notes an index lists, and edits that add or drop entries.

Two formats cover the presets:

- ``links``: markdown links to ``.md`` files (MEMORY.md of DeepCode and Claude Code,
  Serena's memory-index.md). A line may hold several links; dropping one keeps the rest.
- ``cline-tasks``: Cline's ``tasks/_index.md``, whose lines name task ids (``[TASK011]``)
  matching files ``tasks/TASK011-*.md``, also in subfolders (``tasks/COMPLETED/``).

Lines that are not entries (headings, prose) are never touched.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

LINKS = "links"
CLINE_TASKS = "cline-tasks"
FORMATS = (LINKS, CLINE_TASKS)

_LINK = re.compile(r"\[([^\]\n]*)\]\(\s*<?([^)\s>]+?\.md)(?:#[^)\s]*)?>?(?:\s+\"[^\"]*\")?\s*\)")
# a link plus the decoration around it in list-of-links lines: "[a](a.md) (123), "
_LINK_TOKEN = r"\[[^\]\n]*\]\(\s*<?{target}(?:#[^)\s]*)?>?(?:\s+\"[^\"]*\")?\s*\)(?:\s*\(\d+\))?"
# "[TASK011]", and ranges "[TASK052..054]" / "[TASK052-054]" naming the file TASK052-054-*.md
_TASK = re.compile(r"\[(TASK[0-9A-Za-z_]+?)(?:(?:\.\.|-)[0-9A-Za-z_]+)?\]")


@dataclass(frozen=True)
class Entry:
    line: int  # 1-based
    path: str  # the note it points at (store-relative)


@dataclass(frozen=True)
class IndexSpec:
    """Where a store's index is and how to read it."""

    path: str
    format: str


def _resolve(index_path: str, target: str) -> str | None:
    """Store-relative path of a link target, or None when it leaves the store."""
    target = unquote(target.strip())
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(index_path), target))
    if joined.startswith("../") or joined == "..":
        return None
    return joined


def _task_id(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    match = re.match(r"(TASK[0-9A-Za-z_]+?)(?:[-_. ].*)?\.md$", name)
    return match.group(1) if match else None


def entries(spec: IndexSpec, text: str, notes: Iterable[str]) -> list[Entry]:
    """Every entry of the index, in line order.

    For ``cline-tasks`` a task id with no matching note resolves to ``tasks/<id>.md``
    (a path that does not exist, so it shows up as a dangling entry).
    """
    found: list[Entry] = []
    if spec.format == LINKS:
        for number, line in enumerate(text.splitlines(), 1):
            for match in _LINK.finditer(line):
                path = _resolve(spec.path, match.group(2))
                if path is not None:
                    found.append(Entry(number, path))
        return found
    folder = posixpath.dirname(spec.path)
    by_id = {}
    for path in notes:
        task = _task_id(path)
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
    """An index split into lines and parsed, with its entries by path and by line."""

    lines: list[str]
    by_path: dict[str, list[Entry]]
    by_line: dict[int, list[Entry]]

    @classmethod
    def of(cls, spec: IndexSpec, text: str, notes: Iterable[str]) -> Parsed:
        by_path: dict[str, list[Entry]] = {}
        by_line: dict[int, list[Entry]] = {}
        for entry in entries(spec, text, notes):
            by_path.setdefault(entry.path, []).append(entry)
            by_line.setdefault(entry.line, []).append(entry)
        return cls(text.splitlines(keepends=True), by_path, by_line)


def drop(spec: IndexSpec, text: str, paths: set[str], notes: Iterable[str]) -> str:
    """The index without entries for ``paths``; lines left with no entry are removed."""
    return "".join(drop_lines(spec, Parsed.of(spec, text, notes), paths))


def drop_lines(spec: IndexSpec, parsed: Parsed, paths: set[str]) -> list[str]:
    """``drop`` on an index parsed once (a pass edits the same index for every proposal):
    the work is in the entries dropped, not in the size of the index."""
    lines = parsed.lines
    doomed = {e.line for path in paths for e in parsed.by_path.get(path, ())}
    if not doomed:
        return lines
    out = list(lines)
    for number in sorted(doomed, reverse=True):
        kept = [e for e in parsed.by_line[number] if e.path not in paths]
        if kept and spec.format == LINKS:
            out[number - 1] = _drop_links(spec, lines[number - 1], paths)
        else:
            del out[number - 1]
    return out


def _drop_links(spec: IndexSpec, line: str, paths: set[str]) -> str:
    """Remove individual links from a line that lists several notes."""
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


def add(spec: IndexSpec, text: str, items: list[tuple[str, str, str]]) -> str:
    """Append one entry line per ``(path, title, description)``."""
    if not items:
        return text
    lines = []
    for path, title, description in items:
        if spec.format == LINKS:
            rel = posixpath.relpath(path, posixpath.dirname(spec.path) or ".")
            target = rel.replace(" ", "%20")
            hook = f" — {description}" if description else ""
            lines.append(f"- [{_flat(title)}]({target}){hook}\n")
        else:
            task = _task_id(path) or path.rsplit("/", 1)[-1].removesuffix(".md")
            hook = f" - {description}" if description else ""
            lines.append(f"- [{task}] {_flat(title)}{hook}\n")
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(lines)


def _flat(text: str) -> str:
    return " ".join(text.replace("[", "(").replace("]", ")").split())
