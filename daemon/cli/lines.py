"""Text from stores and configs made safe to print, without click (the no-op ``pass`` prints
with it before click is imported: cli/noop_pass.py).

C0 and C1 control characters but newline and tab: a note's name or text could otherwise move
the cursor, rewrite the screen or set the window title of whoever reads dreamd's output.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_IN_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # newline and tab too
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab shown as an escape (``\\x1b``)."""
    return _CONTROL.sub(_escape, text)


def one_line(text: str) -> str:
    """A field shown on one line (a title, a rationale, a path): a newline or tab in it, as in
    a note named ``new\\nline.md``, is shown as ``\\n`` or ``\\t`` so it cannot fake a line."""
    return _CONTROL_IN_LINE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"
