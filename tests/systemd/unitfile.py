"""systemd unit files read the way systemd reads them, as far as these tests need.

Not configparser: systemd allows a key many times (``SystemCallFilter=``, ``Environment=``)
and a later assignment may add to, reset or override an earlier one, so every assignment
is kept, in order.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple


class Directive(NamedTuple):
    section: str
    key: str
    value: str


def parse(path: Path) -> list[Directive]:
    """Every assignment of a unit file (or drop-in), in file order; comments dropped."""
    section, out = "", []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text[0] in "#;":
            continue
        if text.startswith("[") and text.endswith("]"):
            section = text[1:-1]
            continue
        key, sep, value = text.partition("=")
        if not sep or not section or text.endswith("\\"):
            raise ValueError(f"{path.name}:{number}: not a plain assignment in a section: {line!r}")
        out.append(Directive(section, key.strip(), value.strip()))
    return out


def values(directives: list[Directive], section: str, key: str) -> list[str]:
    """All values assigned to a key, in order ([] when it is never set)."""
    return [d.value for d in directives if d.section == section and d.key == key]


def value(directives: list[Directive], section: str, key: str) -> str | None:
    """The value that counts for a single-valued key: the last one assigned."""
    found = values(directives, section, key)
    return found[-1] if found else None


_UNITS_S = {
    "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip


def timespan_s(text: str) -> float:
    """A systemd time span ("180", "3min", "1h 30min") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", text.strip())
    if not parts or re.sub(r"[\d.\sa-z]", "", text.strip()):
        raise ValueError(f"not a time span: {text!r}")
    return sum(float(n) * _UNITS_S[unit] for n, unit in parts)
