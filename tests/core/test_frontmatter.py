"""Frontmatter edits change one line (or add one) and keep everything else byte for byte."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.core import frontmatter
from daemon.core.errors import ValidationError

NOTE = (
    b"---\n"
    b"# a comment the owner wrote\n"
    b"name: Build   # trailing comment\n"
    b"tags:\n"
    b"  - build\n"
    b"  - ci\n"
    b"status: active\n"
    b"custom_key: {nested: [1, 2]}\n"
    b"---\n"
    b"Body text.\n"
)


def _diff_lines(before: bytes, after: bytes) -> tuple[set[bytes], set[bytes]]:
    a, b = before.splitlines(), after.splitlines()
    return set(a) - set(b), set(b) - set(a)


def test_setting_an_existing_key_changes_exactly_that_line():
    """Replacing ``status`` rewrites its line and nothing else."""
    after = frontmatter.set_keys(NOTE, {"status": "superseded"})
    assert after == NOTE.replace(b"status: active\n", b"status: superseded\n")


def test_setting_a_new_key_adds_one_line_before_the_fence():
    """A new key is one added line just before the closing ``---``."""
    after = frontmatter.set_keys(NOTE, {"superseded_by": "b.md"})
    assert after == NOTE.replace(b"custom_key: {nested: [1, 2]}\n", b"custom_key: {nested: [1, 2]}\nsuperseded_by: b.md\n")


def test_a_block_value_is_replaced_whole():
    """A key whose value spans indented lines is replaced by one line."""
    after = frontmatter.set_keys(NOTE, {"tags": ["x"]})
    assert after == NOTE.replace(b"tags:\n  - build\n  - ci\n", b"tags: [x]\n")


def test_note_without_frontmatter_gets_a_minimal_block():
    """Only the keys asked for are added; the body is untouched."""
    assert frontmatter.set_keys(b"just text\n", {"status": "expired"}) == b"---\nstatus: expired\n---\njust text\n"


def test_crlf_frontmatter_keeps_crlf():
    """A Windows-edited note keeps its line endings."""
    note = b"---\r\nname: x\r\n---\r\nbody\r\n"
    assert frontmatter.set_keys(note, {"status": "expired"}) == b"---\r\nname: x\r\nstatus: expired\r\n---\r\nbody\r\n"


def test_datetimes_render_as_utc_z():
    """Stamps are written as ISO UTC with a Z."""
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert b"valid_to: 2026-01-02T03:04:05Z\n" in frontmatter.set_keys(b"x\n", {"valid_to": when})


def test_invalid_yaml_frontmatter_is_refused_not_rewritten():
    """Frontmatter that does not parse cannot be marked safely."""
    with pytest.raises(ValidationError):
        frontmatter.set_keys(b"---\nname: [unclosed\n---\nbody\n", {"status": "expired"})


def test_split_without_closing_fence_is_all_body():
    """An opening ``---`` with no closing fence is not frontmatter."""
    parts = frontmatter.split(b"---\nno close\n")
    assert not parts.has_frontmatter and parts.body == b"---\nno close\n"


_keys = st.sampled_from(["alpha", "beta", "gamma", "delta", "owner_x"])
_values = st.one_of(st.integers(-5, 5), st.sampled_from(["plain", "two words", "a: colon", "#hash", "yes"]))


@settings(max_examples=150, deadline=None)
@given(existing=st.dictionaries(_keys, _values, max_size=4), key=st.sampled_from(["status", "alpha", "superseded_by"]), value=st.sampled_from(["expired", "b.md", "x y"]))
def test_any_edit_touches_at_most_one_line(existing, key, value):
    """For arbitrary simple frontmatter, one edit removes at most one line and adds one."""
    inner = "".join(f"{k}: {frontmatter.render_scalar(v)}\n" for k, v in existing.items())
    note = f"---\n{inner}---\nbody\n".encode()
    after = frontmatter.set_keys(note, {key: value})
    removed, added = _diff_lines(note, after)
    assert len(removed) <= 1 and len(added) == 1
    assert frontmatter.parse(frontmatter.split(after).inner)[key] == value
