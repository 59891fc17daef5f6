"""A pin cannot hide: not behind a byte order mark, a quoted or capitalised value, broken YAML
or an alias bomb; and parsing a hostile frontmatter block is bounded."""

from __future__ import annotations

import time

import pytest

from daemon.core import frontmatter
from daemon.core.hashing import hash_bytes
from daemon.core.notes import Note

BOM = b"\xef\xbb\xbf"


def note(data: bytes, path: str = "a.md") -> Note:
    return Note(path, data, hash_bytes(data))


@pytest.mark.parametrize(
    "data",
    [
        BOM + b"---\npinned: true\n---\nKeep me.\n",
        b"---\npinned: \"true\"\n---\nKeep me.\n",
        b"---\nPinned: true\n---\nKeep me.\n",
        b"---\nPINNED: yes\n---\nKeep me.\n",
        b"---\npin: on\n---\nKeep me.\n",
        b"---\npinned: 1\n---\nKeep me.\n",
        b"---\ntags: [ops, deploy\npinned: true\n---\nKeep me.\n",  # YAML that does not parse
        b"---\npinned: true\nno closing fence ever\nKeep me.\n",  # a block that never closes
    ],
    ids=["bom", "quoted", "capitalised", "upper-yes", "pin-on", "one", "broken-yaml", "unclosed"],
)
def test_every_spelling_of_a_pin_pins(data):
    """A note that says it is pinned in any spelling, or whose frontmatter is in doubt, is pinned."""
    assert note(data).pinned


@pytest.mark.parametrize(
    "data",
    [b"---\npinned: false\n---\nx\n", b"---\nPinned: \"no\"\n---\nx\n", b"# Pinned: the versions we pin\nWe pin: everything.\n"],
    ids=["false", "quoted-no", "prose"],
)
def test_plainly_unpinned_notes_are_not_pinned(data):
    """pinned: false, and prose that merely uses the word, do not pin a note."""
    assert not note(data).pinned


def test_a_byte_order_mark_does_not_hide_the_frontmatter_and_survives_a_rewrite():
    """Frontmatter after a BOM is read as frontmatter, and an edit keeps the BOM first, byte for byte."""
    data = BOM + b"---\r\nname: Ports\r\nttl_days: 3\r\n---\r\nBody.\r\n"
    parsed = note(data)
    assert parsed.meta == {"name": "Ports", "ttl_days": 3} and parsed.body == "Body.\r\n"
    edited = frontmatter.set_keys(data, {"status": "expired"})
    assert edited == BOM + b"---\r\nname: Ports\r\nttl_days: 3\r\nstatus: expired\r\n---\r\nBody.\r\n"
    bare = frontmatter.set_keys(BOM + b"Body.\n", {"status": "expired"})
    assert bare == BOM + b"---\nstatus: expired\n---\nBody.\n"


def test_an_alias_bomb_is_refused_in_bounded_time_and_the_note_is_pinned():
    """A few hundred bytes of nested YAML aliases fail to parse at once instead of expanding, and the note stays untouchable."""
    rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    rows += [f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]" for i in range(8)]
    data = ("---\nttl_days: 1\nupdated_at: 2020-01-01\n" + "\n".join(rows) + "\n---\nBody.\n").encode()
    assert len(data) < 1024
    start = time.perf_counter()
    bomb = note(data)
    assert bomb.frontmatter_error == "invalid frontmatter: frontmatter uses YAML anchors or aliases"
    assert time.perf_counter() - start < 1.0
    assert bomb.pinned and bomb.meta == {}


def test_a_huge_or_deeply_nested_block_is_an_error_not_a_crash():
    """An oversized frontmatter block, or one nested thousands deep, is a frontmatter error (the note pinned), never an exception."""
    huge = note(b"---\nx: " + b"y" * (frontmatter.MAX_FRONTMATTER + 1) + b"\n---\nBody.\n")
    deep = note(b"---\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n---\nBody.\n")
    assert huge.frontmatter_error and huge.pinned
    assert deep.frontmatter_error and deep.pinned
