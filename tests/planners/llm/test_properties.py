"""Property: whatever the model sends, parsing plus checks never crash and never yield an
unvalidated Draft - every Draft names only sent notes and cites verbatim evidence."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.core.changes import build
from daemon.core.errors import ModelBadOutputError, ValidationError
from daemon.core.proposals import MERGE, SUPERSEDE, Draft
from daemon.core.validate import refusal
from daemon.planners.llm.checks import Refusal, check
from daemon.planners.llm.redact import has_marker
from daemon.planners.llm.schema import parse_reply

from ..factory import note
from .store import NOW, sent_for, store

SECRET = note("notes/keys.md", "# Keys\nThe deploy key is AKIAIOSFODNN7EXAMPLE for staging.\nRotate it monthly.\n")
VIEW = store(SECRET)
SENT = sent_for(VIEW, "notes/build.md", "notes/build-howto.md", "status/week-10-next.md", "notes/keys.md")
LINES = sorted({line for text in SENT.texts.values() for line in text.split("\n") if line.strip()})
NAMES = ["n1", "n2", "n3", "n4", "n5", "n0", "", "notes/build.md", "notes/fonts.md", "notes/private.md", "../etc/passwd"]

SENT_IDS = ["n1", "n2", "n3", "n4"]
# weighted towards the plausible (sent ids, whole lines) so that drafts do come out
names = st.sampled_from(SENT_IDS * 6 + NAMES) | st.text(max_size=6)
quotes = st.sampled_from(LINES) | st.sampled_from(LINES).map(lambda s: s[2:30]) | st.text(max_size=40)
bodies = st.lists(st.sampled_from(LINES), max_size=8).map("\n".join) | st.none() | st.text(max_size=80)
proposal = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["merge", "supersede", "soft-expire"]),
        "notes": st.lists(names, min_size=1, max_size=4),
        "survivor": names | st.none(),
        "newer": names | st.none(),
        "merged_body": bodies,
        "rationale": st.text(max_size=40),
        "confidence": st.floats(0, 1),
        "evidence": st.lists(st.fixed_dictionaries({"note": names, "quote": quotes}), min_size=1, max_size=4),
        "dropped": st.lists(st.fixed_dictionaries({"text": quotes, "reason": st.text(max_size=10)}), max_size=3),
    }
)
LINES_OF = {i: [ln for ln in SENT.texts[p].split("\n") if len(ln.strip()) >= 4] for i, p in SENT.ids.items()}


@st.composite
def plausible(draw: st.DrawFn) -> dict[str, Any]:
    """A proposal that could pass (sent ids, real quotes), then maybe one field spoiled."""
    ids = draw(st.lists(st.sampled_from(SENT_IDS), min_size=1, max_size=3, unique=True))
    item: dict[str, Any] = {
        "kind": draw(st.sampled_from(["merge", "supersede", "soft-expire"])),
        "notes": ids,
        "survivor": draw(st.sampled_from(ids)),
        "newer": draw(st.sampled_from(ids)),
        "merged_body": "\n".join(draw(st.lists(st.sampled_from([ln for i in ids for ln in LINES_OF[i]]), max_size=10))),
        "rationale": draw(st.text(max_size=40)),
        "confidence": draw(st.floats(0, 1)),
        "evidence": [{"note": i, "quote": draw(st.sampled_from(LINES_OF[i]))} for i in ids],
        "dropped": [],
    }
    spoil = draw(st.sampled_from([None, "notes", "survivor", "newer", "merged_body", "evidence", "dropped"]))
    if spoil is not None:
        item[spoil] = draw(proposal)[spoil]
    return item


replies = st.fixed_dictionaries({"v": st.just(1), "proposals": st.lists(proposal | plausible(), max_size=3)})
FOUND: dict[str, int] = {}


def assert_validated(draft: Draft) -> None:
    sent = set(SENT.ids.values())
    assert set(draft.notes) <= sent
    assert draft.evidence, "every model draft cites evidence"
    for e in draft.evidence:
        assert e.path in sent
        text = SENT.texts[e.path]
        assert e.quote in text and len(e.quote.strip()) >= 4
        lines = text.split("\n")
        assert e.quote.split("\n")[0] in lines[e.start - 1] and e.end >= e.start
    if draft.kind == MERGE:
        assert draft.survivor in draft.notes and len(draft.notes) >= 2
        assert draft.survivor_data is None or not has_marker(draft.survivor_data.decode())
    if draft.kind == SUPERSEDE:
        assert {e.path for e in draft.evidence} >= set(draft.notes)
    assert 0.0 <= draft.confidence <= 1.0
    try:
        change = build(draft, VIEW, NOW)
    except ValidationError:
        return
    refusal(draft, change, VIEW)  # core validation runs on it without crashing


def run(text: str) -> None:
    try:
        reply = parse_reply(text)
    except ModelBadOutputError:
        return
    for p in reply.proposals:
        result = check(p, SENT, "model:test")
        assert isinstance(result, (Draft, Refusal))
        if isinstance(result, Draft):
            assert_validated(result)
        else:
            assert result.reason
        FOUND[type(result).__name__] = FOUND.get(type(result).__name__, 0) + 1


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies)
def _near_valid(value: dict[str, Any]) -> None:
    run(json.dumps(value))


def test_near_valid_replies_yield_only_validated_drafts() -> None:
    """The property, then proof that it was not vacuous: drafts did come out (and refusals)."""
    FOUND.clear()
    _near_valid()
    assert FOUND.get("Draft", 0) >= 5 and FOUND.get("Refusal", 0) >= 5, FOUND


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | st.sampled_from(NAMES + LINES),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["v", "proposals", "kind", "notes", "evidence", "quote", "note"]) | st.text(max_size=6), children, max_size=5),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_through_parse_and_checks_never_crashes(value: Any) -> None:
    run(json.dumps(value))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_through_parse_and_checks_never_crashes(text: str) -> None:
    run(text)
