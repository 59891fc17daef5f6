"""Path globs for store settings: exclude, pinned, protected, index scope, note glob.

Gitignore-like, because that is what users already write:

- a pattern without "/" matches the last path component at any depth ("*.md");
- a pattern with "/" (or a leading "/") is anchored at the store root ("tasks/*.md");
- "*", "?" and "[...]" never cross "/"; a "**" component spans any number of folders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


def matches(path: str, patterns: Iterable[str]) -> bool:
    """True if the store-relative POSIX ``path`` matches any of ``patterns``."""
    return any(_compile(pattern).match(path) for pattern in patterns)


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    parts = pattern.strip("/").split("/")
    if not anchored:
        return re.compile(r"(?:.*/)?" + _component(parts[0]) + r"\Z", re.S)
    regex = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]+/)*")
        else:
            regex.append(_component(part) + ("" if last else "/"))
    return re.compile("".join(regex) + r"\Z", re.S)


def _component(part: str) -> str:
    """Regex for one path component of a glob."""
    out = []
    i = 0
    while i < len(part):
        char = part[i]
        end = part.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif end != -1:
            body = part[i + 1 : end].replace("\\", "\\\\").replace("^", "\\^")
            out.append("[^/" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)
