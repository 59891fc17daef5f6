"""The reply schema and parser: strict on the wire, one error type for every bad reply."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.core.errors import ModelBadOutputError
from daemon.planners.llm.schema import Reply, parse_reply, reply_json_schema

from .store import reply

VALID = reply(
    {
        "kind": "merge",
        "notes": ["n1", "n2"],
        "survivor": "n1",
        "merged_body": "One fact.\n",
        "evidence": [{"note": "n1", "quote": "One fact."}],
    }
)


def _objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [o for item in node for o in _objects(item)]
    if not isinstance(node, dict):
        return []
    found = [node] if node.get("type") == "object" else []
    return found + [o for value in node.values() for o in _objects(value)]


def test_schema_is_strict_compatible() -> None:
    schema = reply_json_schema()
    objects = _objects(schema)
    assert len(objects) == 4  # reply, proposal, quote, dropped
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    text = json.dumps(schema)
    for unsupported in ('"minimum"', '"maximum"', '"default"', '"const"', '"title"'):
        assert unsupported not in text
    proposal = schema["$defs"]["ModelProposal"]["properties"]
    assert {"type": "null"} in proposal["survivor"]["anyOf"]
    assert proposal["kind"]["enum"] == ["merge", "supersede", "soft-expire"]
    assert schema["properties"]["v"]["enum"] == [1]


def test_parses_a_valid_reply_and_a_fenced_one() -> None:
    parsed = parse_reply(VALID)
    assert parsed.proposals[0].survivor == "n1"
    assert parse_reply(f"```json\n{VALID}\n```") == parsed


def test_missing_nullable_keys_are_tolerated() -> None:
    parsed = parse_reply('{"v": 1, "proposals": [{"kind": "soft-expire", "notes": ["n1"], "rationale": "old", "confidence": 1}]}')
    assert parsed.proposals[0].evidence == [] and parsed.proposals[0].merged_body is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("Sure! Here are my proposals:", "not JSON"),
        ("[]", "not an object"),
        ('{"v": 2, "proposals": []}', "version 2"),
        ('{"v": true, "proposals": []}', "version True"),
        ('{"v": 1, "proposals": [], "note": "extra"}', "Extra inputs"),
        ('{"v": 1, "proposals": [{"kind": "delete", "notes": ["n1"], "rationale": "x", "confidence": 1}]}', "kind"),
        ('{"v": 1, "proposals": [{"kind": "merge", "notes": ["n1"], "rationale": "x", "confidence": 1.5}]}', "confidence"),
        ('{"v": 1, "proposals": [{"kind": "merge", "notes": ["n1"], "rationale": "x", "confidence": NaN}]}', "finite"),
        ('{"v": 1, "proposals": [{"kind": "merge", "notes": [1], "rationale": "x", "confidence": 1}]}', "notes.0"),
        ("[" * 100_000, "JSON"),
    ],
)
def test_bad_replies_raise_one_error_with_a_one_line_reason(text: str, reason: str) -> None:
    with pytest.raises(ModelBadOutputError) as caught:
        parse_reply(text)
    message = str(caught.value)
    assert reason in message
    assert "\n" not in message and len(message) <= 240


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_never_crashes_the_parser(value: Any) -> None:
    try:
        parsed = parse_reply(json.dumps(value))
    except ModelBadOutputError:
        return
    assert isinstance(parsed, Reply)


@settings(max_examples=300)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes_the_parser(text: str) -> None:
    try:
        parse_reply(text)
    except ModelBadOutputError:
        pass


def test_a_reply_over_its_byte_limit_is_not_parsed_at_all() -> None:
    """A 16 MB reply is refused on its size, before any JSON is read, and no repair turn is asked."""
    from daemon.planners.llm.schema import MAX_REPLY_BYTES, ReplyTooLargeError

    body = "x" * (MAX_REPLY_BYTES + 1)
    text = json.dumps({"v": 1, "proposals": [{"kind": "merge", "notes": ["n1", "n2"], "merged_body": body, "rationale": "r", "confidence": 0.5}]})
    with pytest.raises(ReplyTooLargeError, match=r"^the reply is [\d,]+ bytes, over the [\d,]+ a reply may be; none of it is read$"):
        parse_reply(text)


def test_proposals_past_the_limit_are_not_read_and_are_counted() -> None:
    """10,000 proposals: the first MAX_PROPOSALS are read (fast), the rest counted, not validated."""
    import time

    from daemon.planners.llm.schema import MAX_PROPOSALS, read_reply

    one = {"kind": "soft-expire", "notes": ["n1"], "rationale": "old", "confidence": 0.5}
    text = json.dumps({"v": 1, "proposals": [one] * 10_000})
    started = time.monotonic()
    reply, unread = read_reply(text)
    assert len(reply.proposals) == MAX_PROPOSALS and unread == 10_000 - MAX_PROPOSALS
    assert time.monotonic() - started < 5
