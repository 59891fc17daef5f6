"""A record's reviewable form: frontmatter of its fields and metadata, then its content.

Planners, detectors and diffs read notes, so each record is shown to them as one:

    ---
    id: "V1StGXR8_Z5j"
    createdAt: 1733000000000
    updatedAt: 1733000000000
    tags: ["build", "ci"]
    source: "user"
    pinned: true
    ---
    <content, exactly>
    (a line end)

Every header value is JSON on one line (an edit may write one-line YAML there, e.g. a merge's
``merged_from: [a, b]``: ``canonical`` gives it back in this form); the one line end after the content is the
rendering's, not the content's (so a note's usual last newline never reaches the prompt); metadata keys sit at the top level (so ``pinned:
true`` pins the note for dreamd too). The rendering is exact both ways for every value
Dexto writes: ``value_of(render(v)) == v``. A value that does not come back byte for byte
(not Dexto's serialisation, a metadata key that would collide with a field) is not
rendered: it is reported and never touched. Nor is a value nested deeper than ``MAX_DEPTH``
(JSON Dexto may store, which Python's parsers and dreamd's frontmatter would read only by
recursing past their limits): ``too-deep``, before any parser sees it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from daemon.stores.records import dexto

_OPEN = "---\n"
_CLOSE = "\n---\n"
_FIELD_LINES = ("id", "createdAt", "updatedAt", "tags")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_YAML_BREAKS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029", "\ufeff": "\\ufeff"}
MAX_DEPTH = 100  # arrays and objects in one another: far past any memory, far below a recursion limit
_STRINGS = re.compile(r'"(?:[^"\\]++|\\.)*+"')
_BRACKETS = re.compile(r"[\[\]{}]")


class NotRenderable(ValueError):
    """A stored value dreamd cannot show as a note without changing it; ``reason`` says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def parse_value(value: Any) -> dict[str, Any]:
    """The record a stored value holds; NotRenderable when it is not JSON or breaks Dexto's rules."""
    if not isinstance(value, str):
        raise NotRenderable("invalid-json", "the value is not text")
    deepest = nesting(value)
    if deepest > MAX_DEPTH:
        raise NotRenderable("too-deep", f"arrays and objects nested {deepest:,} levels deep, more than the {MAX_DEPTH} dreamd reads")
    try:
        record = json.loads(value, object_pairs_hook=_no_duplicates)
    except ValueError as exc:
        raise NotRenderable("invalid-json", f"{exc}; while this row is there Dexto's prompt shows no memory at all") from None
    breaks = dexto.rule_breaks(record)
    if breaks:
        raise NotRenderable("breaks-dexto-rules", "; ".join(breaks))
    return record


def nesting(text: str) -> int:
    """How deep the arrays and objects of a JSON (or one-line YAML) text nest, its strings
    skipped, or ``MAX_DEPTH`` when they are too few to nest deeper: found with two regular
    expressions, without parsing (nor recursing)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return MAX_DEPTH  # at most: too few to go deeper (the common case, counted in C)
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def render(value: Any) -> bytes:
    """The note form of a stored value; NotRenderable when it would not come back exactly."""
    record = parse_value(value)
    if dexto.serialise(record) != value:
        raise NotRenderable("not-dexto-serialisation", "the value is not what Dexto's JSON.stringify writes for it")
    lines = [f"{key}: {_json(record[key])}" for key in _FIELD_LINES if key in record]
    metadata = record.get("metadata")
    if metadata == {}:
        lines.append("metadata: {}")
    elif metadata is not None:
        odd = [k for k in metadata if k in dexto.FIELDS or not _PLAIN_KEY.match(k)]
        if odd:
            raise NotRenderable("metadata-keys", f"metadata keys {odd!r} cannot be shown beside the record's fields")
        lines += [f"{key}: {_json(item)}" for key, item in metadata.items()]
    text = _OPEN + "\n".join(lines) + _CLOSE + record["content"] + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise NotRenderable("not-dexto-serialisation", "the value holds a lone UTF-16 surrogate") from None


def value_of(data: bytes) -> str:
    """The value Dexto would store for a rendering (ValueError when it is not one)."""
    text = data.decode("utf-8")
    end = text.find(_CLOSE, len(_OPEN) - 1)
    if not text.startswith(_OPEN) or end < 0:
        raise ValueError("not a record's rendering: no header")
    if not text.endswith("\n"):
        raise ValueError("not a record's rendering: its content does not end with the line end dreamd adds")
    fields: dict[str, Any] = {}
    for line in text[len(_OPEN) : end].split("\n"):
        key, sep, raw = line.partition(": ")
        if not sep or key in fields or key == "content":
            raise ValueError(f"not a record's rendering: header line {line!r}")
        fields[key] = _header_value(raw)
    record: dict[str, Any] = {"id": fields.pop("id", None), "content": text[end + len(_CLOSE) : -1]}
    record |= {key: fields.pop(key) for key in ("createdAt", "updatedAt", "tags") if key in fields}
    if "metadata" in fields:
        if fields.pop("metadata") != {}:
            raise ValueError("not a record's rendering: its only 'metadata' line is 'metadata: {}'")
        record["metadata"] = fields  # an empty metadata, and whatever keys an edit added to it
    elif fields:
        record["metadata"] = fields
    breaks = dexto.rule_breaks(record)
    if breaks:
        raise ValueError(f"breaks Dexto's rules: {'; '.join(breaks)}")
    return dexto.serialise(record)


def _header_value(raw: str) -> Any:
    """A header line's value: JSON as ``render`` writes it, or the one-line YAML an edit of
    the header writes (a planner's ``merged_from: [a, b]``), as long as it is JSON's kind of
    value; ``canonical`` turns the latter back into the former."""
    if nesting(raw) > MAX_DEPTH:
        raise ValueError(f"not a record's rendering: a header value nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ValueError(f"not a record's rendering: header value {raw!r} ({exc.__class__.__name__})") from None
    if not _plain(value):
        raise ValueError(f"not a record's rendering: header value {raw!r} is not a JSON value")
    return value


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return value is None or isinstance(value, (str, int, float, bool))


def canonical(data: bytes) -> bytes:
    """A rendering as ``render`` writes it for the value it stands for (ValueError, or
    NotRenderable, when it stands for none): an edited header back in dreamd's own form."""
    return render(value_of(data))


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    for char, escaped in _YAML_BREAKS.items():
        text = text.replace(char, escaped)
    return text


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise ValueError("a key appears twice")
    return found
