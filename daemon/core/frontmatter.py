"""YAML frontmatter: read it, and edit it one line at a time.

Notes are owned by people and agents, so a rewrite must not reformat them: setting a key
replaces that key's line (or adds one before the closing ``---``); unknown keys, comments,
key order and line endings survive byte for byte. Every edit is checked by parsing the
result: the edited key has the new value and every other key is unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from daemon.core.errors import ValidationError

try:  # the C loader is ~10x faster; fall back when libyaml is absent
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

BOM = b"\xef\xbb\xbf"  # Windows editors start a file with it; it must not hide the frontmatter
_OPEN = re.compile(rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?\n")
_CLOSE = re.compile(rb"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
MAX_FRONTMATTER = 64 * 1024  # bytes of YAML dreamd parses at all; a larger block is an error


@dataclass(frozen=True)
class Split:
    """A note's bytes cut into frontmatter block and body.

    ``header`` is everything from the opening ``---`` through the closing line (empty when
    the note has none); ``inner`` is the YAML between the fences. ``whole`` is the note's
    bytes, of which the body is what follows the header: cut when asked for, so a note read
    keeps its body's bytes once (in the note), not twice.
    """

    header: bytes
    inner: bytes
    whole: bytes = field(repr=False)

    @property
    def has_frontmatter(self) -> bool:
        return bool(self.header)

    @property
    def body(self) -> bytes:
        return self.whole[len(self.header) :]  # the whole bytes themselves when there is no header


def split(data: bytes) -> Split:
    """Separate frontmatter from body; a note without a closed ``---`` block has none.
    A leading UTF-8 byte order mark belongs to the header, kept byte for byte."""
    opening = _OPEN.match(data)
    if not opening:
        return Split(b"", b"", data)
    close = _CLOSE.search(data, opening.end())
    if not close:
        return Split(b"", b"", data)
    end = close.end()
    if data[end : end + 2] == b"\r\n":
        end += 2
    elif data[end : end + 1] == b"\n":
        end += 1
    return Split(data[:end], data[opening.end() : close.start()], data)


def parse(inner: bytes) -> dict[str, Any]:
    """Parse frontmatter YAML into a mapping; raise ValueError when it is not one.

    Work is bounded: a block over MAX_FRONTMATTER bytes, or one using anchors and aliases
    (a few hundred bytes of aliases expand to gigabytes: "billion laughs"), is refused
    before any node is built.
    """
    if not inner.strip():
        return {}
    if len(inner) > MAX_FRONTMATTER:
        raise ValueError(f"frontmatter is over {MAX_FRONTMATTER // 1024} KB")
    text = inner.decode("utf-8")
    simple = _simple(text)
    if simple is not None:
        return simple
    if "&" in text or "*" in text:
        for token in yaml.scan(text, Loader=_Loader):  # tokens only: linear, nothing expanded
            if isinstance(token, (yaml.AnchorToken, yaml.AliasToken)):
                raise ValueError("frontmatter uses YAML anchors or aliases")
    value = yaml.load(text, Loader=_Loader)  # noqa: S506 - safe loader
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("frontmatter is not a mapping")
    return {str(k): v for k, v in value.items()}


# ``key: value`` where the key is a plain word and the value a plain one-line scalar of
# letters, digits and a little punctuation starting with a letter (YAML reads it as that very
# string unless it is one of the words below), a date written YYYY-MM-DD, or a decimal number
_SIMPLE_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):[ ]+(?:([A-Za-z][A-Za-z0-9 ,.()/_+'-]*?)|([0-9]{4})-([0-9]{2})-([0-9]{2})|(0|[1-9][0-9]{0,17}))[ ]*")
# the plain words YAML resolves to a boolean or null (any case: others fall back to YAML)
_NOT_STRINGS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})
# a string YAML writes and reads as it is: a letter first, then letters, digits, _ . / -
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")


def _simple(text: str) -> dict[str, Any] | None:
    """The mapping of a block that is nothing but simple ``key: value`` lines, as the YAML
    loader reads it, without building the loader's nodes (most of a large store's reading
    time went there); None when any line is more than that, for the loader to read."""
    found: dict[str, Any] = {}
    for line in text.split("\n"):
        if not line:
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key, value, year, number = match.group(1, 2, 3, 6)
        if key.lower() in _NOT_STRINGS:
            return None
        if number is not None:
            found[key] = int(number)
        elif value is None:
            try:
                found[key] = dt.date(int(year), int(match.group(4)), int(match.group(5)))
            except ValueError:
                return None  # the loader says why
        elif value.lower() in _NOT_STRINGS:
            return None
        else:
            found[key] = value
    return found


def render_scalar(value: Any) -> str:
    """One-line YAML for a scalar or a flat list, as a person would write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_scalar(v) for v in value) + "]"
    if isinstance(value, str) and _PLAIN.fullmatch(value) and value.lower() not in _NOT_STRINGS:
        return value  # what the dumper writes too, at a hundredth of its cost (a retired note's paths)
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _newline(block: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in block else b"\n"


def _continues(line: bytes) -> bool:
    """Indented lines and column-0 ``- item`` lines belong to the key above them."""
    return line[:1] in (b" ", b"\t") or line.rstrip(b"\r\n") == b"-" or line.startswith(b"- ")


def _key_extent(lines: list[bytes], key: str) -> tuple[int, int] | None:
    """Index range of a top-level key's line plus its continuation lines."""
    pattern = re.compile(rb"^" + re.escape(key.encode()) + rb"[ \t]*:")
    for i, line in enumerate(lines):
        if not pattern.match(line):
            continue
        j = i + 1
        while j < len(lines):
            if _continues(lines[j]):
                j += 1
                continue
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k > j and k < len(lines) and _continues(lines[k]):
                j = k
                continue
            break
        return i, j
    return None


def set_keys(data: bytes, values: dict[str, Any]) -> bytes:
    """Return ``data`` with each key set to its value, touching nothing else.

    A note without frontmatter gets a minimal block holding just these keys.
    Raises ValidationError when the existing frontmatter cannot be edited safely.
    """
    parts = split(data)
    if not parts.has_frontmatter:
        lines = b"".join(f"{k}: {render_scalar(v)}\n".encode() for k, v in values.items())
        bom = BOM if data.startswith(BOM) else b""
        result = bom + b"---\n" + lines + b"---\n" + data[len(bom) :]
        _check(result, {}, values)
        return result
    try:
        before = parse(parts.inner)
    except (ValueError, yaml.YAMLError) as exc:
        raise ValidationError(f"frontmatter is not valid YAML ({exc.__class__.__name__})") from exc
    nl = _newline(parts.header)
    lines = parts.inner.splitlines(keepends=True)
    for key, value in values.items():
        new_line = f"{key}: {render_scalar(value)}".encode() + nl
        extent = _key_extent(lines, key)
        if extent is None:
            if lines and not lines[-1].endswith(b"\n"):
                lines[-1] += nl
            lines.append(new_line)
        else:
            lines[extent[0] : extent[1]] = [new_line]
    opening = _OPEN.match(parts.header)
    assert opening is not None
    closing = parts.header[opening.end() + len(parts.inner) :]
    result = parts.header[: opening.end()] + b"".join(lines) + closing + parts.body
    _check(result, before, values)
    return result


def _check(result: bytes, before: dict[str, Any], values: dict[str, Any]) -> None:
    """The edit did exactly what was asked: new values in, every other key unchanged."""
    after = parse(split(result).inner)
    expected = {**before, **{k: _normalise(v) for k, v in values.items()}}
    actual = {k: _normalise(v) for k, v in after.items()}
    if actual != {k: _normalise(v) for k, v in expected.items()}:
        raise ValidationError("frontmatter edit would change keys it was not asked to change")


def _normalise(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return value.astimezone(dt.timezone.utc).replace(microsecond=0)
    if isinstance(value, tuple):
        return [_normalise(v) for v in value]
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    return value
