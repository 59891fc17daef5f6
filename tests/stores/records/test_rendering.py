"""A record's note form: exact both ways for what Dexto writes, and refused for anything else."""

from __future__ import annotations

import pytest

import dexto_db
from conftest import STANDARD
from daemon.core.hashing import hash_bytes
from daemon.core.notes import Note
from daemon.stores.records.rendering import NotRenderable, render, value_of
from test_dexto_facts import TRICKY


def test_every_value_dexto_writes_comes_back_byte_for_byte():
    """value_of(render(v)) == v for Node-serialised memories with tags, metadata, emoji and control characters."""
    values = dexto_db.stringify(STANDARD + TRICKY)
    assert [value_of(render(v)) for v in values] == values


def test_rendering_shows_fields_then_metadata_then_the_exact_content():
    """The header holds id, times, tags and each metadata key as JSON; the body is the content itself."""
    (value,) = dexto_db.stringify([STANDARD[2]])
    assert render(value).decode() == (
        '---\nid: "pInNeD000001"\ncreatedAt: 1733000002000\nupdatedAt: 1733000002000\n'
        'source: "system"\npinned: true\nteam: "ops"\n---\n'
        "Déjà vu: the café's API key lives in 1Password 🔑, never in the repo.\n"
    )


def test_metadata_pinned_true_makes_the_note_pinned_for_dreamd():
    """A record with metadata.pinned true is a pinned note; pinned false is not."""
    pinned, loose = dexto_db.stringify([STANDARD[2], TRICKY[2]])
    assert [Note("memory:item:x", d, hash_bytes(d)).pinned for d in (render(pinned), render(loose))] == [True, False]


def test_empty_metadata_is_kept_apart_from_absent_metadata():
    """``metadata: {}`` renders as its own line and comes back as an empty object."""
    value = '{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{}}'
    assert (render(value).decode(), value_of(render(value))) == ('---\nid: "x"\ncreatedAt: 1\nupdatedAt: 1\nmetadata: {}\n---\nc\n', value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("{not json", "invalid-json"),
        ('{"id":"x","content":"c","createdAt":1,"updatedAt":1,"id":"y"}', "invalid-json"),
        ('{"id":"x","content":"","createdAt":1,"updatedAt":1}', "breaks-dexto-rules"),
        ('{"id": "x", "content": "c", "createdAt": 1, "updatedAt": 1}', "not-dexto-serialisation"),
        ('{"content":"c","id":"x","createdAt":1,"updatedAt":1}', "not-dexto-serialisation"),
        ('{"id":"x","content":"\\ud800","createdAt":1,"updatedAt":1}', "not-dexto-serialisation"),
        ('{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{"tags":1}}', "metadata-keys"),
        ('{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{"two words":1}}', "metadata-keys"),
    ],
    ids=["not-json", "duplicate-key", "empty-content", "spaces", "key-order", "lone-surrogate", "colliding-key", "odd-key"],
)
def test_values_that_would_not_come_back_exactly_are_not_rendered(value, reason):
    """Invalid JSON, rule breaks, other serialisations and awkward metadata keys raise NotRenderable with their reason."""
    with pytest.raises(NotRenderable) as caught:
        render(value)
    assert caught.value.reason == reason


def test_value_of_refuses_a_rendering_whose_record_breaks_dexto_rules():
    """A header line Dexto's strict schema would refuse (source 'agent') is no value at all."""
    (value,) = dexto_db.stringify([STANDARD[0]])
    edited = render(value).replace(b'source: "user"', b'source: "agent"')
    with pytest.raises(ValueError, match="metadata.source must be one of user, system"):
        value_of(edited)


def test_value_of_refuses_bytes_without_a_record_header():
    """A plain markdown note is not a record."""
    with pytest.raises(ValueError, match="no header"):
        value_of(b"# a note\n")


def test_content_ending_in_a_newline_keeps_it_beside_the_renderings_own():
    """Content that ends with a line end renders with two, and comes back with its one."""
    value = '{"id":"x","content":"line\\n","createdAt":1,"updatedAt":1}'
    assert (render(value).endswith(b"---\nline\n\n"), value_of(render(value))) == (True, value)


def test_value_of_refuses_a_rendering_without_its_final_line_end():
    """Bytes whose content has no line end after it are not a rendering dreamd made."""
    (value,) = dexto_db.stringify([STANDARD[3]])
    with pytest.raises(ValueError, match="does not end with the line end"):
        value_of(render(value)[:-1])


def test_a_header_edited_as_yaml_stands_for_the_same_record_and_comes_back_in_json():
    """A planner's set_keys writes ``merged_from: [a, '123']`` as one-line YAML: value_of reads it
    (a quoted number stays a string), and canonical gives the rendering back in JSON form."""
    from daemon.core import frontmatter
    from daemon.stores.records.rendering import canonical

    value = '{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{}}'
    edited = frontmatter.set_keys(render(value), {"merged_from": ["abcdefghijkl", "123456789012"]})
    assert b"merged_from: [abcdefghijkl, '123456789012']\n" in edited
    assert value_of(edited) == '{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{"merged_from":["abcdefghijkl","123456789012"]}}'
    assert canonical(edited).decode() == '---\nid: "x"\ncreatedAt: 1\nupdatedAt: 1\nmerged_from: ["abcdefghijkl", "123456789012"]\n---\nc\n'
    assert canonical(canonical(edited)) == canonical(edited)


@pytest.mark.parametrize("line", ["when: 2026-01-01", "when: {a: 2026-01-01}", "when: [a, b", "metadata: {a: 1}"])
def test_a_header_value_that_is_no_json_value_is_refused(line):
    """YAML dates, broken flow and a 'metadata' line with keys stand for no record: ValueError."""
    data = f'---\nid: "x"\ncreatedAt: 1\nupdatedAt: 1\n{line}\n---\nc\n'.encode()
    with pytest.raises(ValueError, match="not a record's rendering"):
        value_of(data)


def _nested(levels: int, inner: str = "1") -> str:
    return '{"id":"x","content":"c","createdAt":1,"updatedAt":1,"metadata":{"x":' + "[" * (levels - 2) + inner + "]" * (levels - 2) + "}}"


def test_a_value_nested_up_to_the_limit_renders_and_one_level_more_is_too_deep():
    """100 levels of arrays and objects render and come back exactly (brackets inside strings do
    not count); 101, or 50,000, are ``too-deep``, refused before any parser recurses into them."""
    from daemon.stores.records.rendering import MAX_DEPTH

    at_limit = _nested(MAX_DEPTH, '"[[[{{{"')
    assert value_of(render(at_limit)) == at_limit
    for levels in (MAX_DEPTH + 1, 50_000):
        with pytest.raises(NotRenderable, match=f"nested {levels:,} levels deep, more than the {MAX_DEPTH} dreamd reads") as caught:
            render(_nested(levels))
        assert caught.value.reason == "too-deep"


def test_a_header_value_nested_too_deep_is_refused_before_it_is_parsed():
    """A rendering whose header line nests 50,000 levels (an edit a model wrote) stands for no record: ValueError, no RecursionError."""
    data = ('---\nid: "x"\ncreatedAt: 1\nupdatedAt: 1\nx: ' + "[" * 50_000 + "]" * 50_000 + "\n---\nc\n").encode()
    with pytest.raises(ValueError, match="nested more than 100 levels deep"):
        value_of(data)
