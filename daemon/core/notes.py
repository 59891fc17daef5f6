"""Notes as dreamd sees them: bytes, parsed frontmatter, body, and what they declare.

A note's identity is its path relative to the store. Parsing never fails: a note whose
frontmatter is not valid YAML is still a note (``frontmatter_error`` says why), it just
cannot be marked, so proposals that would mark it are refused at validation.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import yaml

from daemon.core import frontmatter
from daemon.core.hashing import hash_text

ACTIVE = "active"
SUPERSEDED = "superseded"
EXPIRED = "expired"
STATUSES = (ACTIVE, SUPERSEDED, EXPIRED)

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
# lines that are structure, not a sentence about the note: "**Status:** Pending", tables, rules
_FIELD = re.compile(r"^(?:[-*]\s*)?\*\*[^*]+:?\*\*:?(?:\s|$)|^\||^(?:-{3,}|\*{3,}|_{3,})$|^<!--")
# frontmatter dates that say when a note's content last changed, most telling first
DATE_KEYS = ("updated_at", "modified", "updated", "created_at", "created", "date")


@dataclass(frozen=True)
class Note:
    """One markdown file of a store, parsed once."""

    path: str
    data: bytes
    hash: str
    mtime_ns: int = 0
    pinned_by_setting: bool = field(default=False, compare=False)
    unread: str | None = field(default=None, compare=False)  # why its content is not known: planning leaves it alone

    def left_unread(self, why: str) -> Note:
        """This note with nothing parsed: no frontmatter, no body, no links; pinned (in doubt)."""
        return Note(self.path, self.data, self.hash, self.mtime_ns, self.pinned_by_setting, unread=why)

    @cached_property
    def parts(self) -> frontmatter.Split:
        if self.unread is not None:
            return frontmatter.Split(b"", b"", b"")
        return frontmatter.split(self.data)

    @cached_property
    def _parsed(self) -> tuple[dict[str, Any], str | None]:
        if self.unread is not None:
            return {}, f"not read: {self.unread}"
        try:
            return frontmatter.parse(self.parts.inner), None
        except (ValueError, yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
            detail = str(exc) if isinstance(exc, ValueError) and not isinstance(exc, UnicodeDecodeError) else exc.__class__.__name__
            return {}, f"invalid frontmatter: {detail}"

    @property
    def meta(self) -> dict[str, Any]:
        return self._parsed[0]

    @property
    def frontmatter_error(self) -> str | None:
        return self._parsed[1]

    @property
    def body(self) -> str:
        """Decoded when asked (a few microseconds a note), not kept: a pass holds every note's
        bytes and normalised body already, and its bodies were the third copy of its text."""
        return self.parts.body.decode("utf-8", errors="replace")

    @cached_property  # asked of a note again and again: every pair the detectors weigh asks it of both
    def pinned(self) -> bool:
        """Untouchable: pinned by a store setting, by a ``pinned`` key of any case with any
        YAML-true value, or in doubt — frontmatter that does not parse, or a block that looks
        like it declares a pin that no parse confirms. A pin must never hide."""
        if self.pinned_by_setting or self.frontmatter_error or _says_pinned(self.meta):
            return True
        unclosed = not self.parts.has_frontmatter and self.data.removeprefix(frontmatter.BOM).startswith(b"---")
        return unclosed and _LOOKS_PINNED.search(self.data[:4096]) is not None

    @cached_property  # asked of every note by most detectors, some of them pair by pair
    def status(self) -> str:
        value = self.meta.get("status")
        return value if isinstance(value, str) and value in STATUSES else ACTIVE

    @cached_property
    def live(self) -> bool:
        return self.status == ACTIVE

    @cached_property
    def lines(self) -> list[str]:
        """The note's text split on ``\\n`` once (evidence quotes many lines of one note)."""
        if self.unread is not None:
            return []
        return self.data.decode("utf-8", errors="replace").split("\n")

    @cached_property
    def normalised_body(self) -> str:
        """Body with case and whitespace folded: the exact-duplicate identity."""
        return " ".join(self.body.casefold().split())  # str.split: C speed, Unicode whitespace

    def forget_normalised(self) -> None:
        """Let the normalised body go (it is made again if asked): only the detectors read
        it, and a large store's are as large as its notes, still held while proposals are built."""
        self.__dict__.pop("normalised_body", None)

    @cached_property
    def value_hash(self) -> str:
        """Hash of the normalised body; retiring a note tombstones it."""
        return hash_text(self.normalised_body)

    @property
    def title(self) -> str:
        for key in ("name", "title"):
            value = self.meta.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
        for line in self.body.splitlines():
            match = _HEADING.match(line.strip())
            if match:
                return match.group(1)
        return self.path.rsplit("/", 1)[-1].removesuffix(".md")

    @property
    def description(self) -> str:
        """The ``description`` frontmatter, else the body's first sentence-like line, whole
        (an index shortens it at a word boundary to what fits)."""
        value = self.meta.get("description")
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())
        for line in self.body.splitlines():
            text = line.strip()
            if text and not text.startswith("#") and not _FIELD.match(text):
                return " ".join(text.lstrip("-*> ").split())
        return ""

    @property
    def type(self) -> str | None:
        """The note's kind, as Claude Code writes it (``type``, or ``metadata.type`` since 2.1.139)."""
        meta = self.meta.get("metadata")
        for value in (self.meta.get("type"), meta.get("type") if isinstance(meta, dict) else None):
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None

    def dated(self) -> tuple[dt.datetime, str] | None:
        """When the note says its content last changed, and the frontmatter key that says so."""
        for key in DATE_KEYS:
            moment = self.meta_time(key)
            if moment is not None:
                return moment, key
        return None

    def meta_time(self, key: str) -> dt.datetime | None:
        """A frontmatter date or datetime as aware UTC; None when absent or unreadable."""
        return as_utc(self.meta.get(key))

    def declared_paths(self, key: str) -> list[str]:
        """Paths named by ``supersedes`` / ``superseded_by`` (a string or a list)."""
        value = self.meta.get(key)
        items = value if isinstance(value, list) else [value]
        return [str(v).strip() for v in items if isinstance(v, str) and v.strip()]


_PIN_KEYS = {"pinned", "pin"}
_FALSE = {"false", "no", "off", "n", "0", ""}
# a "pinned:" line near the top of a note whose frontmatter block never closed
_LOOKS_PINNED = re.compile(rb"(?im)^\s*[\"']?pin(?:ned)?[\"']?\s*:\s*(?![\"']?(?:false|no|off|0)[\"']?\s*$)")


def _says_pinned(meta: Mapping[str, Any]) -> bool:
    """Any key spelled pinned (any case) whose value is not plainly false."""
    for key, value in meta.items():
        if str(key).strip().casefold() in _PIN_KEYS:
            if value is False or value is None or value == 0:
                continue
            if isinstance(value, str) and value.strip().casefold() in _FALSE:
                continue
            return True
    return False


def as_utc(value: Any) -> dt.datetime | None:
    """Read a YAML date, datetime or ISO string as an aware UTC datetime; None when it is
    not one, or lies outside what a UTC datetime can hold (9999-12-31 at -12:00)."""
    try:
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
        if isinstance(value, str):
            return as_utc(dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except (ValueError, OverflowError):
        return None
    return None


def file_time(mtime_ns: int) -> dt.datetime | None:
    """A file's modification time as aware UTC; None when unknown (0) or out of range."""
    if mtime_ns <= 0:
        return None
    try:
        return dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def retired_notes(files: Mapping[str, tuple[str | None, str | None]], blobs: Mapping[str, bytes]) -> list[str]:
    """Notes a change retires: live in its base, and in its result removed (moved to the
    archive) or marked no longer live (retired in place). ``files``: path -> (base, result)
    hash; ``blobs`` holds the bytes of both sides."""
    found = []
    for path, (base, result) in sorted(files.items()):
        if base is None or base == result or not Note(path, blobs[base], base).live:
            continue
        if result is None or not Note(path, blobs[result], result).live:
            found.append(path)
    return found
