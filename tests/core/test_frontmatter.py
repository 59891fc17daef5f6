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


_WORDS = ["a", "Build", "yes", "No", "ON", "off", "Null", "tRUE", "y", "~", "x y", "don't", "a,b", "(c)", "d/e", "f.g", "h-i", "j_k", "l+m",
          "0", "7", "730", "007", "1_0", "+1", "1.5", "2026-05-02", "2026-13-02", "0000-01-01", "2026-5-2", "2026-05-02 10:00:00",
          "a: b", "a #c", "#x", "-a", "a -", "é", "a\tb", "'q'", '"q"', "a  b", ".inf", "a:b", "[a]", "{a}", "&a", "*a", "!t", "|", "@"]  # fmt: skip
_KEYS = ["name", "type", "status", "updated_at", "ttl_days", "Yes", "on", "NULL", "a-b", "_x", "k1", "x y", "1", "-k"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_KEYS), st.sampled_from([": ", ":  ", ":"]), st.lists(st.sampled_from(_WORDS), min_size=1, max_size=2), st.sampled_from(["", " ", "\t"])), min_size=1, max_size=5), st.booleans())
def test_simple_lines_are_read_as_the_yaml_loader_reads_them(lines, newline_at_end):
    text = "\n".join(k + sep + " ".join(words) + tail for k, sep, words, tail in lines) + ("\n" if newline_at_end else "")
    fast = frontmatter._simple(text)
    if fast is None:
        return  # left to the loader
    loaded = frontmatter.yaml.load(text, Loader=frontmatter._Loader)
    assert isinstance(loaded, dict)
    assert list(fast.items()) == [(str(k), v) for k, v in loaded.items()]
    assert [type(v) for v in fast.values()] == [type(v) for v in loaded.values()]


def test_simple_lines_cover_the_usual_frontmatter_and_leave_the_rest_to_yaml():
    assert frontmatter.parse(b"name: A a\ntype: feedback\nupdated_at: 2026-05-02\nttl_days: 730\n") == {
        "name": "A a", "type": "feedback", "updated_at": dt.date(2026, 5, 2), "ttl_days": 730}  # fmt: skip
    for text in ("status: yes\n", "name: a: b\n", "d: 2026-13-02\n", "n: 010\n", "tags:\n  - a\n", "name: Build   # c\n"):
        assert frontmatter._simple(text) is None, text


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.from_regex(r"[A-Za-z][A-Za-z0-9_./-]{0,30}", fullmatch=True), st.sampled_from(["yes", "No", "TRUE", "off", "On", "null", "Null", "y", "n", "e1", "a/b.md", "x-"]), st.text(max_size=12)))
def test_a_string_is_rendered_as_the_yaml_dumper_renders_it_and_read_back_as_itself(value):
    """Plain strings skip the dumper: what they render to must be what it writes (and, for
    them, what a reader reads back)."""
    import yaml

    dumped = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True).removesuffix("\n").removesuffix("\n...").strip()
    rendered = frontmatter.render_scalar(value)
    assert rendered == dumped
    if rendered == value:  # written plain, by the dumper or without it
        assert yaml.safe_load(f"k: {rendered}") == {"k": value}
