"""Checks every model proposal passes before it is a Draft (on top of core validation)."""

from __future__ import annotations

import pytest

from daemon.core.changes import build
from daemon.core.proposals import Draft, Evidence
from daemon.core.validate import refusal
from daemon.planners.llm.checks import Refusal, check

from ..factory import note, view
from .store import NOW, PINNED, proposal, sent_for, store

SOURCE = "model:openai/test-model"
BOTH = [
    {"note": "n1", "quote": "Run make test before pushing because CI only checks lint."},
    {"note": "n2", "quote": "CI only checks lint, so run make test before pushing."},
]
FULL_MERGE = "# Build checks\nRun make test before pushing because CI only checks lint.\nIntegration tests need postgres listening on port 5433.\n"


def merge(**fields: object) -> Draft | Refusal:
    v = store()
    sent = sent_for(v, "notes/build.md", "notes/build-howto.md")
    base: dict[str, object] = {"survivor": "n1", "merged_body": FULL_MERGE, "evidence": BOTH}
    base.update(fields)
    return check(proposal("merge", **base), sent, SOURCE)


def test_a_lossless_merge_becomes_a_draft_with_line_spans_and_the_survivor_header() -> None:
    draft = merge()
    assert isinstance(draft, Draft)
    assert (draft.kind, draft.survivor, draft.retire, draft.lossy) == ("merge", "notes/build.md", ("notes/build-howto.md",), False)
    assert draft.source == SOURCE and draft.confidence == 0.8
    assert [(e.path, e.start, e.end) for e in draft.evidence] == [("notes/build.md", 6, 6), ("notes/build-howto.md", 5, 5)]
    header = b"---\ntitle: Build checks\ntags: [ci]\n---\n"
    assert draft.survivor_data == header + FULL_MERGE.encode()
    v = store()
    assert refusal(draft, build(draft, v, NOW), v) is None  # and the foundation accepts it


def test_survivor_data_ends_with_a_newline_and_keeps_crlf() -> None:
    crlf = note("a.md", "---\r\ntags: [x]\r\n---\r\nOne fact here.\r\n")
    v = view(crlf, note("b.md", "One fact here.\nA second fact.\n"))
    quotes = [{"note": "n1", "quote": "One fact here."}]
    sent = sent_for(v, "a.md", "b.md")
    draft = check(proposal("merge", survivor="n1", merged_body="One fact here.\nA second fact.", evidence=quotes), sent, SOURCE)
    assert isinstance(draft, Draft) and not draft.lossy
    assert draft.survivor_data == b"---\r\ntags: [x]\r\n---\r\nOne fact here.\r\nA second fact.\r\n"
    same = check(proposal("merge", notes=["n1", "n2"], survivor="n1", merged_body="One fact here.", evidence=quotes), sent, SOURCE)
    assert isinstance(same, Draft) and same.survivor_data is None and same.lossy  # survivor unchanged; b's 2nd fact lost


def test_unknown_note_is_refused() -> None:
    result = merge(notes=["n1", "n7"])
    assert isinstance(result, Refusal) and "'n7'" in result.reason and "not a note sent" in result.reason
    assert result.notes == ("notes/build.md", "n7") and result.raw["notes"] == ["n1", "n7"]


def test_a_path_never_sent_is_refused_even_if_it_exists() -> None:
    result = merge(notes=["n1", "notes/fonts.md"])
    assert isinstance(result, Refusal) and "notes/fonts.md" in result.reason


def test_a_quote_not_in_the_note_gives_derived_evidence_at_a_lower_confidence() -> None:
    """The right notes with a misquote: the note's best-matching line, marked derived, at most 0.5."""
    draft = merge(evidence=[{"note": "n1", "quote": "Integration tests need MySQL on port 3306."}], confidence=0.9)
    assert isinstance(draft, Draft) and draft.confidence == 0.5
    assert draft.evidence == (Evidence("notes/build.md", 7, 7, "Integration tests need postgres on port 5433.", derived=True),)
    assert draft.rationale.endswith(
        " Evidence derived by dreamd: the model's quote from notes/build.md is not in the note; the lines shown are those that best match the rationale."
    )


def test_an_echoed_schema_description_is_not_taken_as_a_quote() -> None:
    """The literal "text copied exactly" (an older schema's description) is never evidence: derived lines replace it."""
    draft = merge(evidence=[{"note": "n2", "quote": "text copied exactly"}], rationale="Both say CI only checks lint, so run make test before pushing.")
    assert isinstance(draft, Draft)
    assert [(e.path, e.start, e.quote, e.derived) for e in draft.evidence] == [("notes/build-howto.md", 5, "CI only checks lint, so run make test before pushing.", True)]


def test_a_misquote_matching_no_line_of_its_note_is_refused() -> None:
    result = merge(evidence=[{"note": "n1", "quote": "Gardening tomatoes every weekend."}])
    assert isinstance(result, Refusal)
    assert result.reason == "evidence quote 'Gardening tomatoes every weekend.' from notes/build.md is not in the note, and no line of it matches the rationale; quotes must be verbatim"


def test_a_verbatim_quote_is_not_marked_derived() -> None:
    draft = merge()
    assert isinstance(draft, Draft) and [e.derived for e in draft.evidence] == [False, False] and "derived" not in draft.rationale


def test_a_quote_rewrapped_by_the_model_is_found_and_recorded_as_the_note_has_it() -> None:
    """A line break quoted as a space (or spaces as a break) is the same text; the evidence
    keeps the note's own bytes, so what a reviewer reads is verbatim."""
    v = view(note("a.md", "Run make test\nbefore pushing.\n"), note("b.md", "Run make test before   pushing, always.\n"))
    sent = sent_for(v, "a.md", "b.md")
    quotes = [{"note": "n1", "quote": "Run make test before pushing."}, {"note": "n2", "quote": "make test before\npushing"}]
    draft = check(proposal("merge", survivor="n1", merged_body="Run make test\nbefore pushing.", evidence=quotes), sent, SOURCE)
    assert isinstance(draft, Draft)
    assert [(e.path, e.start, e.end, e.quote) for e in draft.evidence] == [
        ("a.md", 1, 2, "Run make test\nbefore pushing."),
        ("b.md", 1, 1, "make test before   pushing"),
    ]


def test_other_words_in_a_rewrapped_quote_are_derived_not_trusted() -> None:
    draft = merge(evidence=[{"note": "n1", "quote": "Run make test\nbefore merging because CI only checks lint."}])
    assert isinstance(draft, Draft)
    assert [(e.start, e.quote, e.derived) for e in draft.evidence] == [(6, "Run make test before pushing because CI only checks lint.", True)]


def test_a_quote_from_the_wrong_note_gives_that_notes_own_line() -> None:
    """Quoting n1's line as n2's: the evidence is n2's matching line, not the misattributed text."""
    draft = merge(evidence=[{"note": "n2", "quote": "Integration tests need postgres on port 5433."}])
    assert isinstance(draft, Draft)
    assert [(e.path, e.start, e.quote, e.derived) for e in draft.evidence] == [("notes/build-howto.md", 6, "The integration tests need postgres listening on port 5433.", True)]


def test_a_merged_text_that_adds_a_fact_is_refused() -> None:
    """Invented content stays refused even when the notes and quotes are right: a number no note has."""
    result = merge(merged_body=FULL_MERGE + "Integration tests need postgres 16 or newer.\n")
    assert isinstance(result, Refusal) and result.reason == "merged_body states what none of the merged notes says: “Integration tests need postgres 16 or newer.”"


def test_a_merged_sentence_of_mostly_new_words_is_refused() -> None:
    result = merge(merged_body=FULL_MERGE + "Deploys require a VPN token from the security desk.\n")
    assert isinstance(result, Refusal) and "Deploys require a VPN token" in result.reason


def test_a_lossy_merge_is_marked_not_refused() -> None:
    draft = merge(merged_body="# Build checks\nRun make test before pushing because CI only checks lint.\n")
    assert isinstance(draft, Draft) and draft.lossy
    assert "Lossy: 2 sentences" in draft.rationale and "5433" in draft.rationale


def test_dropped_with_a_reason_is_not_lossy_and_without_one_is() -> None:
    body = "# Build checks\nRun make test before pushing because CI only checks lint.\n"
    gone = ["Integration tests need postgres on port 5433.", "The integration tests need postgres listening on port 5433."]
    kept = merge(merged_body=body, dropped=[{"text": t, "reason": "the suite moved to sqlite"} for t in gone])
    assert isinstance(kept, Draft) and not kept.lossy
    silent = merge(merged_body=body, dropped=[{"text": t, "reason": " "} for t in gone])
    assert isinstance(silent, Draft) and silent.lossy


def test_rewording_and_joining_sentences_is_not_loss() -> None:
    body = "CI only checks lint: run make test before pushing. Integration tests need postgres listening on port 5433.\n"
    draft = merge(merged_body=body)
    assert isinstance(draft, Draft) and not draft.lossy


def test_a_redaction_marker_in_merged_body_is_refused() -> None:
    result = merge(merged_body=FULL_MERGE + "Password: [REDACTED:secret-keyword]\n")
    assert isinstance(result, Refusal) and "redaction marker" in result.reason


def test_merge_needs_survivor_evidence_and_two_notes() -> None:
    assert "survivor" in _reason(merge(survivor="n3"))
    assert "quote" in _reason(merge(evidence=[]))
    assert "two" in _reason(merge(notes=["n1", "n1"]))
    assert "frontmatter" in _reason(merge(merged_body="---\ntitle: x\n---\nbody\n"))


@pytest.mark.parametrize("body", [None, "  "])
def test_a_merge_without_a_body_is_dreamds_lossless_union_of_the_notes(body) -> None:
    """An edit script ("keep every line of these notes"): the survivor's bytes stay, each line of
    the other note it lacks is added after them, nothing is lost and the rationale says so."""
    from daemon.planners.llm.checks import UNION

    v = store()
    draft = merge(merged_body=body)
    assert isinstance(draft, Draft) and not draft.lossy and UNION in draft.rationale
    survivor, other = v.notes["notes/build.md"], v.notes["notes/build-howto.md"]
    assert draft.survivor_data is not None and draft.survivor_data.startswith(survivor.data)
    text = draft.survivor_data.decode()
    assert all(line in text for line in other.body.splitlines() if line.strip())
    assert refusal(draft, build(draft, v, NOW), v) is None


def test_a_merge_into_a_new_note_without_a_body_holds_every_line_of_both() -> None:
    v = store()
    sent = sent_for(v, "notes/build.md", "notes/build-howto.md")
    draft = check(proposal("merge", survivor=None, new_path="notes/build-guide.md", new_title="Build guide", merged_body=None, evidence=BOTH), sent, SOURCE)
    assert isinstance(draft, Draft) and draft.create and draft.create[0][0] == "notes/build-guide.md"
    text = draft.create[0][1].decode()
    for path in ("notes/build.md", "notes/build-howto.md"):
        assert all(line in text for line in v.notes[path].body.splitlines() if line.strip()), path


def test_pinned_survivor_passes_the_checks_but_the_foundation_refuses_the_change() -> None:
    """The planner's checks do not duplicate core validation: a merge that rewrites a pinned
    note is a Draft here and is refused by ``core.validate`` later, like any detector's."""
    v = store(note("notes/pinned.md", PINNED))
    sent = sent_for(v, "notes/pinned.md", "notes/build.md")
    quotes = [{"note": "n1", "quote": "Never push without make test"}, {"note": "n2", "quote": "CI only checks lint."}]
    draft = check(proposal("merge", survivor="n1", merged_body=FULL_MERGE, evidence=quotes), sent, SOURCE)
    assert isinstance(draft, Draft)
    reason = refusal(draft, build(draft, v, NOW), v)
    assert reason is not None and "pinned" in reason
    retire = check(proposal("merge", survivor="n2", merged_body=FULL_MERGE, evidence=quotes), sent, SOURCE)
    assert isinstance(retire, Draft) and "pinned" in (refusal(retire, build(retire, v, NOW), v) or "")


def supersede(**fields: object) -> Draft | Refusal:
    v = store()
    sent = sent_for(v, "status/week-10-complete.md", "status/week-10-next.md")
    quotes = [{"note": "n1", "quote": "Tests: 131 passing."}, {"note": "n2", "quote": "Tests: 112 passing."}]
    base: dict[str, object] = {"notes": ["n1", "n2"], "newer": "n1", "evidence": quotes}
    base.update(fields)
    return check(proposal("supersede", **base), sent, SOURCE)


def test_supersede_names_the_newer_note_and_quotes_both() -> None:
    draft = supersede()
    assert isinstance(draft, Draft)
    assert (draft.survivor, draft.retire) == ("status/week-10-complete.md", ("status/week-10-next.md",))
    assert "newer note" in _reason(supersede(newer=None))
    assert "nothing is quoted from status/week-10-next.md" in _reason(supersede(evidence=[{"note": "n1", "quote": "Tests: 131 passing."}]))


def test_supersede_with_the_older_note_called_newer_is_refused() -> None:
    reason = _reason(supersede(newer="n2"))
    assert "updated_at 2026-05-01 is before" in reason


def test_soft_expire_quotes_its_evidence() -> None:
    v = store()
    sent = sent_for(v, "status/week-10-next.md", "status/week-10-complete.md")
    bare = check(proposal("soft-expire", notes=["n1"]), sent, SOURCE)
    assert isinstance(bare, Refusal) and "evidence" in bare.reason
    quoted = check(
        proposal("soft-expire", notes=["n1"], rationale="The exporter work is done. More text.", evidence=[{"note": "n2", "quote": "The exporter is wired to the queue."}]),
        sent,
        SOURCE,
    )
    assert isinstance(quoted, Draft) and quoted.retire == ("status/week-10-next.md",)
    assert quoted.reason == "The exporter work is done"


def test_quotes_are_checked_against_the_redacted_text_the_model_saw() -> None:
    secret = note("a.md", "Deploy key AKIAIOSFODNN7EXAMPLE lives in the vault.\n")
    v = view(secret, note("b.md", "Deploy key lives in the vault.\n"))
    sent = sent_for(v, "a.md", "b.md")
    seen = check(proposal("soft-expire", notes=["n1"], evidence=[{"note": "n1", "quote": "Deploy key [REDACTED:aws-access-key] lives"}]), sent, SOURCE)
    assert isinstance(seen, Draft)
    real = check(proposal("soft-expire", notes=["n1"], evidence=[{"note": "n1", "quote": "Deploy key AKIAIOSFODNN7EXAMPLE"}]), sent, SOURCE)
    assert isinstance(real, Refusal)


def test_confidence_is_kept_within_bounds_and_short_quotes_are_refused() -> None:
    assert "too short" in _reason(merge(evidence=[{"note": "n1", "quote": "CI"}]))
    draft = merge(confidence=1.0)
    assert isinstance(draft, Draft) and draft.confidence == 1.0


def _reason(result: Draft | Refusal) -> str:
    assert isinstance(result, Refusal), result
    return result.reason


def test_the_store_not_the_model_chooses_which_note_keeps_the_merged_text() -> None:
    """A model naming the note other notes cite as the one to retire has its merged text put into that cited note instead, and the rationale says why."""
    cited = note("b.md", "One fact here.\n")
    other = note("a.md", "One fact here.\nA second fact.\n")
    citer = note("c.md", "See [the fact](b.md).\n")
    sent = sent_for(view(other, cited, citer), "a.md", "b.md")
    quotes = [{"note": "n1", "quote": "One fact here."}]
    draft = check(proposal("merge", survivor="n1", merged_body="One fact here.\nA second fact.", evidence=quotes), sent, SOURCE)
    assert isinstance(draft, Draft)
    assert (draft.survivor, draft.retire) == ("b.md", ("a.md",))
    assert "The merged text goes into b.md, not a.md as the model said: it is the most referenced" in draft.rationale
    assert draft.survivor_data == b"One fact here.\nA second fact.\n"


def test_the_models_survivor_stands_where_only_a_tie_break_would_choose_another() -> None:
    """Dates and path lengths only break ties: with no reference deciding, the note the model keeps is kept."""
    import datetime as dt

    older = note("decisions/queue-choice.md", "We use SQS, not Kafka.\n", mtime=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    newer = note("adr/adr-009-queues.md", "We use SQS, not Kafka.\nKafka was too much to run.\n", mtime=dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc))
    sent = sent_for(view(older, newer), "decisions/queue-choice.md", "adr/adr-009-queues.md")
    quotes = [{"note": "n1", "quote": "We use SQS, not Kafka."}]
    draft = check(proposal("merge", survivor="n1", merged_body="We use SQS, not Kafka.\nKafka was too much to run.", evidence=quotes), sent, SOURCE)
    assert isinstance(draft, Draft) and (draft.survivor, draft.retire) == ("decisions/queue-choice.md", ("adr/adr-009-queues.md",))
    assert "as the model said" not in draft.rationale


UNRELATED_MERGE = (
    "# Deploying\nRun make release, then push the new tag.\nThe fern by the window is watered on Mondays.\n"
)


def _lumped(related: tuple[frozenset[str], ...] = ()) -> Draft | Refusal:
    v = view(
        note("deploy.md", "# Deploying\nRun make release, then push the new tag.\n"),
        note("deploy-api.md", "# API deployment\nRun make release, then push the new tag.\n"),
        note("plants.md", "# Office plants\nThe fern by the window is watered on Mondays.\n"),
    )
    sent = sent_for(v, "deploy.md", "deploy-api.md", "plants.md")
    if related:
        from dataclasses import replace

        sent = replace(sent, related=related)
    quotes = [{"note": "n1", "quote": "Run make release, then push the new tag."}, {"note": "n2", "quote": "Run make release, then push the new tag."}]
    return check(proposal("merge", notes=["n1", "n2", "n3"], survivor="n1", merged_body=UNRELATED_MERGE, evidence=quotes, confidence=0.95), sent, SOURCE)


def test_a_merge_that_lumps_in_an_unrelated_note_is_kept_for_a_person_only() -> None:
    """A note sharing no word and no candidate group with the rest caps the merge's confidence at 0.5 and says why."""
    draft = _lumped()
    assert isinstance(draft, Draft) and not draft.lossy
    assert draft.confidence == 0.5
    assert draft.rationale.endswith("plants.md shares no word and no candidate group with the other notes: only a person can tell whether it belongs.")


def test_the_trusting_policy_does_not_accept_such_a_merge() -> None:
    """The shipped trusting policy accepts confident non-lossy model merges, but not one capped as unrelated."""
    from daemon.policies.load import load_policy, shipped_policy

    policy = load_policy(shipped_policy("trusting"))
    rule = next(r for r in policy.rules if r.sources and any(s.startswith("model:") for s in r.sources))
    assert rule.min_confidence is not None and rule.min_confidence > _lumped().confidence


def test_notes_sharing_no_word_but_a_candidate_group_keep_the_models_confidence() -> None:
    """Notes a candidate group put together (shared rare terms, names, a series) are related: the confidence stands."""
    draft = _lumped(related=(frozenset({"deploy.md", "deploy-api.md", "plants.md"}),))
    assert isinstance(draft, Draft) and draft.confidence == 0.95


def test_a_merged_body_over_a_notes_limit_is_refused_in_one_line() -> None:
    from daemon.planners.llm.checks import MAX_BODY_BYTES

    reason = _reason(merge(merged_body=FULL_MERGE + "x" * MAX_BODY_BYTES))
    assert reason.startswith("merged_body is ") and reason.endswith(f"over the {MAX_BODY_BYTES:,} a note may be")


def test_a_union_merge_of_notes_that_are_no_near_copies_is_held_for_a_person() -> None:
    """A model pairing notes at random gets a lossless union; without a text of its own, only
    near copies keep the model's confidence (no shipped policy accepts 0.5)."""
    v = store()
    sent = sent_for(v, "notes/build.md", "notes/fonts.md")
    quotes = [{"note": "n1", "quote": "Never push without make test"}]
    draft = check(proposal("merge", survivor="n1", merged_body=None, evidence=quotes, confidence=0.95), sent, SOURCE)
    assert isinstance(draft, Draft) and not draft.lossy and draft.confidence == 0.5
    assert "notes/build.md is no near copy of the others, and the model wrote no merged text" in draft.rationale
    alike = merge(merged_body=None, confidence=0.95)  # build.md and build-howto.md say the same
    assert isinstance(alike, Draft) and alike.confidence == 0.95
