"""Bounded work on hostile note text: every pattern that reads references and index entries
runs in linear time, so a note made of "[[[[…" or "[a]([a](…" costs what its size costs.

Before the patterns were fixed, one 900 KB note of "[" took over 30 s (a pass over the store
never finished); here each 300 KB input must take well under a second, and the bound below is
loose enough (10 s for all of them) that only quadratic behaviour can reach it.
"""

from __future__ import annotations

import time

from daemon.core import index, links
from daemon.core.index import IndexSpec
from daemon.core.reader import MARKDOWN, MEM, TASK_ID, WIKI

SIZE = 300_000
HOSTILE = {
    "brackets": "[",
    "link openers": "[a](",
    "wiki openers": "[[",
    "titled links": '[a](b.md "',
    "mem prefixes": "`mem:",
    "task openers": "[TASK",
    "task ids": "[TASK1]",
    "status fields": "**Status:",
    "parentheses": "(",
    "link lookalikes": "[x](y ",
    "targets": "[a](x.md.md",
}


def _inputs() -> dict[str, str]:
    return {name: unit * (SIZE // len(unit)) for name, unit in HOSTILE.items()}


def test_reference_patterns_are_linear_on_hostile_lines() -> None:
    names = links.Names(paths=frozenset({"a.md", "b.md"}), titles={"a.md": "a"})
    started = time.perf_counter()
    for text in _inputs().values():
        links.find("note.md", text, 0, (MARKDOWN, MEM, WIKI, TASK_ID), names)
        links.find("note.md", text.replace("(", "(\n"), 0, (MARKDOWN, WIKI), names)
    assert time.perf_counter() - started < 10


def test_index_patterns_are_linear_on_hostile_lines() -> None:
    started = time.perf_counter()
    for text in _inputs().values():
        for spec in (IndexSpec("MEMORY.md", "links"), IndexSpec("tasks/_index.md", "cline-tasks", sections="status")):
            index.entries(spec, text, ["a.md"])
            index.compact(spec, text, ["a.md"], 150)
        index.task_status(text)
    assert time.perf_counter() - started < 10


def test_links_still_found_after_the_linear_rewrite() -> None:
    """The bounded patterns still read the links people write."""
    names = links.Names(paths=frozenset({"a.md", "dir/b.md"}), titles={"a.md": "alpha"})
    text = 'See [the port](a.md#ports "title"), [b](<dir/b.md>), [[alpha]] and [[alpha|shown]].\n'
    found = {(r.syntax, r.target) for r in links.find("note.md", text, 0, (MARKDOWN, WIKI), names)}
    assert found == {(MARKDOWN, "a.md"), (MARKDOWN, "dir/b.md"), (WIKI, "a.md")}
