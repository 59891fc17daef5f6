"""Secrets never leave the machine: every note is redacted before it enters a prompt.

Agents paste keys, tokens and connection strings into their memory. Detection uses
detect-secrets' plugins (AWS, GitHub, Slack, Stripe, OpenAI, JWT, private keys, basic auth
in URLs, keyword assignments such as ``DATABASE_PASSWORD=...``, high-entropy strings), run
line by line. The plugins are instantiated here and called directly rather than through
``scan_line``: that keeps detect-secrets' process-wide settings untouched (passes may run in
threads), never enables its network verification, and lets us apply the entropy limits
its ad-hoc scan leaves to the caller.

Redaction preserves line structure: each secret becomes ``[REDACTED:<type>]`` on the same
line, and every line of a PEM private-key block becomes one marker. So line numbers in the
redacted text are line numbers in the file, and evidence quoted from the redacted text
can be located in the note. We err towards redacting: a commit hash or a public IP address
may be hidden from the model too; that costs a little context, never a leak.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|PuTTY-User-Key-File-\d")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_TOKEN_CHARS = re.compile(r"[A-Za-z0-9_\-+/.~]")
_ASSIGNED = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*=")  # NAME= glued to an entropy match
_CONFIG_NAME = "note.yaml"  # keyword rules for `key: value` and `KEY=value`, quotes optional
_WEAK = ("Base64 High Entropy String", "Hex High Entropy String")


def marker(secret_type: str) -> str:
    return f"[REDACTED:{re.sub(r'[^a-z0-9]+', '-', secret_type.casefold()).strip('-')}]"


@lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...]:
    """Every built-in detect-secrets plugin with its default settings, specific ones first."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    classes = get_mapping_from_secret_type_to_class().values()
    made = [cls() for cls in classes]
    return tuple(sorted(made, key=lambda p: (p.secret_type in _WEAK, p.secret_type)))


def _entropy_hits(plugin: Any, line: str) -> Iterator[str]:
    """Unquoted high-entropy tokens above the plugin's limit, minus the usual false
    positives (UUIDs, sequences, templates, ``$VARIABLES``)."""
    from detect_secrets.filters import heuristic

    # A string of n characters has at most log2(n) bits of entropy, so tokens no longer
    # than 2**limit can never exceed it: skipping them changes nothing and saves most of
    # the time (the entropy is computed in Python, for every word of every note).
    shortest = 2 ** plugin.entropy_limit
    for token in re.findall(f"[{re.escape(plugin.charset)}]+", line):
        token = _ASSIGNED.sub("", token)
        if len(token) <= shortest or plugin.calculate_shannon_entropy(token) <= plugin.entropy_limit:
            continue
        if heuristic.is_sequential_string(token) or heuristic.is_potential_uuid(token):
            continue
        if heuristic.is_templated_secret(token) or heuristic.is_prefixed_with_dollar_sign(token):
            continue
        yield token


def _hits(line: str) -> Iterator[tuple[str, str]]:
    """(secret value, type) pairs found on one line."""
    for plugin in _plugins():
        if hasattr(plugin, "entropy_limit"):
            values: Any = _entropy_hits(plugin, line)
        else:
            values = (s.secret_value for s in plugin.analyze_line(filename=_CONFIG_NAME, line=line, line_number=1))
        for value in values:
            if value and value.strip():
                yield value, plugin.secret_type


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    """Grow a span to the whole token around it: some plugins report only a prefix
    (``ghp`` of a GitHub token)."""
    while start > 0 and _TOKEN_CHARS.match(line[start - 1]):
        start -= 1
    while end < len(line) and _TOKEN_CHARS.match(line[end]):
        end += 1
    return start, end


def redact_line(line: str) -> tuple[str, int]:
    """One line with every secret replaced by its marker, and how many were replaced."""
    spans: list[tuple[int, int, int, str]] = []  # start, end, priority, type
    for priority, (value, kind) in enumerate(_hits(line)):
        at = line.find(value)
        while at >= 0:
            start, end = _widen(line, at, at + len(value))
            spans.append((start, end, priority, kind))
            at = line.find(value, at + len(value))
    if not spans:
        return line, 0
    merged: list[list[Any]] = []
    for start, end, priority, kind in sorted(spans):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if priority < last[2]:
                last[2], last[3] = priority, kind
        else:
            merged.append([start, end, priority, kind])
    out = line
    for start, end, _, kind in reversed(merged):
        out = out[:start] + marker(kind) + out[end:]
    return out, len(merged)


def redact(text: str) -> tuple[str, int]:
    """The text with secrets replaced by ``[REDACTED:<type>]`` markers, line for line,
    and the number of secrets replaced (a PEM block counts once)."""
    lines = text.split("\n")
    out: list[str] = []
    count = 0
    in_key = False
    for line in lines:
        if not in_key and _PEM_BEGIN.search(line):
            in_key, count = True, count + 1
        if in_key:
            ending = bool(_PEM_END.search(line))
            out.append(marker("private key") + ("\r" if line.endswith("\r") else ""))
            in_key = not ending
            continue
        cleaned, found = redact_line(line)
        out.append(cleaned)
        count += found
    return "\n".join(out), count


def has_marker(text: str) -> bool:
    return bool(MARKER.search(text))
