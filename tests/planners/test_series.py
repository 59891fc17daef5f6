"""No merges of distinct records: notes of a numbered or dated series are not duplicates
however alike their words; the detectors and the model's checks hold such a merge for a
person, naming the identifiers that differ, unless the texts are copies."""

from __future__ import annotations

import pytest

from daemon.core.changes import build
from daemon.core.proposals import MERGE, ReadFacts
from daemon.planners.detectors.exact import ExactDuplicates
from daemon.planners.detectors.near import NearDuplicates
from daemon.planners.llm.checks import check
from daemon.planners.series import CONFIDENCE, distinct_records
from daemon.policies.engine import evaluate
from daemon.policies.load import load_policy, shipped_policy
from daemon.policies.model import HOLD, Facts

from .factory import BUILD_NOTES, NOW, context, note, view
from .llm.store import proposal, sent_for

# a template filled in twice: the words are alike, the records are not
ADR = "# {title}\n\nStatus: accepted.\n\nContext: the team needs a store for jobs and their results.\nDecision: use Postgres with SKIP LOCKED for the queue and keep results in the same database.\nConsequences: one database to back up; no broker to run; throughput capped near 2,000 jobs a second.\n{extra}"

DISTINCT = {
    "ADR numbers in file names": ("adr-017.md", "adr_021.md", "", "", "adr-017 against adr_021"),
    "ADR numbers in titles": ("decisions/queue.md", "decisions/queue-results.md", "ADR-017: Use Postgres", "ADR-021: Use Postgres for results", "ADR-017 against ADR-021"),
    "a PR's comments and its review": ("pr-123-comments.md", "pr-123-review.md", "", "", "distinct parts of pr-123 (comments against review)"),
    "two sprints' retrospectives": ("sprint-4-retro.md", "sprint-5-retro.md", "", "", "sprint-4 against sprint-5"),
    "two weeks": ("notes_week7.md", "notes_week8.md", "", "", "week7 against week8"),
    "two dates": ("standup-2026-03-01.md", "standup-2026-03-08.md", "", "", "2026-03-01 against 2026-03-08"),
    "leading numbers": ("0017-use-postgres.md", "0021-use-postgres.md", "", "", "0017 against 0021"),
}

ALIKE = {
    "one numbered, one not": ("gpu-setup.md", "gpu-setup-2.md"),
    "copies numbered as copies": ("notes-copy-2.md", "notes-copy-3.md"),
    "one record spelled twice": ("adr-017.md", "ADR_17.md"),
    "no identifiers": ("deploy.md", "shipping-a-release.md"),
}


def adr(path: str, title: str = "", extra: str = "") -> object:
    return note(path, ADR.format(title=title or path.removesuffix(".md"), extra=extra))


@pytest.mark.parametrize("case", DISTINCT)
def test_distinct_records_are_named_by_the_identifiers_that_differ(case: str):
    """Two notes of one series with other numbers, dates or parts are distinct records, and the sentence names both identifiers."""
    a, b, ta, tb, said = DISTINCT[case]
    sentence = distinct_records(adr(a, ta), adr(b, tb, "Superseded parts: none.\n"))
    assert sentence is not None and said in sentence and a in sentence and b in sentence


@pytest.mark.parametrize("case", ALIKE)
def test_notes_that_are_not_records_of_one_series_are_not_held(case: str):
    """A numbered copy beside its note, copy markers, one record in two spellings and names with no identifier are not distinct records."""
    a, b = ALIKE[case]
    assert distinct_records(adr(a), adr(b, extra="One more line.\n")) is None


def test_exact_copies_are_not_distinct_records():
    """The same body byte for byte under two series names is a copy: nothing held."""
    assert distinct_records(note("adr-017.md", "Same.\n"), note("adr-021.md", "---\nname: x\n---\nSame.\n")) is None


def test_a_near_duplicate_merge_of_two_adrs_is_held_with_the_identifiers_named():
    """ADR-017 and ADR-021 filled from one template are proposed at most at 0.5, with a hold fact no policy accepts past."""
    store = view(adr("adr-017.md"), adr("adr-021.md", extra="Superseded parts: none.\n"))
    (draft,) = NearDuplicates().detect(context(store))
    assert draft.kind == MERGE and draft.confidence <= CONFIDENCE
    assert "Held: adr-017.md and adr-021.md are distinct records of one series (adr-017 against adr-021)" in draft.rationale
    holds = build(draft, store, NOW).reads.holds
    assert holds == ("merges distinct records: adr-017.md and adr-021.md are distinct records of one series (adr-017 against adr-021)",)


def test_near_duplicates_without_identifiers_are_merged_as_before():
    """Two look-alike notes that name no series keep their Jaccard confidence and no hold."""
    store = view(note("build.md", BUILD_NOTES), note("build-notes.md", BUILD_NOTES + "One more remark.\n"))
    (draft,) = NearDuplicates().detect(context(store))
    assert draft.confidence > CONFIDENCE and draft.held == () and build(draft, store, NOW).reads.holds == ()


def test_exact_copies_of_two_records_are_still_merged_with_full_confidence():
    """ADR notes with byte-identical bodies are copies: an exact-duplicate merge at 1.0, not held."""
    store = view(adr("adr-017.md", "ADR"), adr("adr-021.md", "ADR"))
    (draft,) = ExactDuplicates().detect(context(store))
    assert (draft.confidence, draft.held) == (1.0, ())


def test_records_alike_but_for_case_and_spaces_are_held_by_the_exact_detector():
    """Bodies equal only once case and whitespace are folded are not copies: the exact merge of two records is held."""
    store = view(adr("adr-017.md", "ADR"), note("adr-021.md", ADR.format(title="ADR", extra="").upper()))
    (draft,) = ExactDuplicates().detect(context(store))
    assert draft.confidence == CONFIDENCE and draft.held and "adr-017 against adr-021" in draft.rationale


def _model_merge(store, *paths: str):  # noqa: ANN001, ANN202
    body = ADR.format(title="ADR", extra="")
    quotes = [{"note": "n1", "quote": "Status: accepted."}, {"note": "n2", "quote": "Status: accepted."}]
    return check(proposal("merge", survivor="n1", merged_body=body, evidence=quotes, confidence=0.95), sent_for(store, *paths), "model:test")


def test_the_models_merge_of_two_sprints_retrospectives_is_held_and_no_policy_accepts_it():
    """A confident model merge of sprint 4's and sprint 5's retrospectives is capped at 0.5, says which sprints, and the trusting policy holds it."""
    store = view(adr("sprint-4-retro.md", "ADR"), adr("sprint-5-retro.md", "ADR", "Superseded parts: none.\n"))
    draft = _model_merge(store, "sprint-4-retro.md", "sprint-5-retro.md")
    assert draft.kind == MERGE and draft.confidence == CONFIDENCE and "sprint-4 against sprint-5" in draft.rationale
    reads = ReadFacts.from_dict(build(draft, store, NOW).reads.as_dict())  # as a stored proposal gives them back
    facts = Facts(kind=MERGE, source="model:test", confidence=0.95, lossy=False, notes=draft.notes, retire=draft.retire, holds=reads.holds)
    assert evaluate(load_policy(shipped_policy("trusting")), facts).decision == HOLD


def test_the_models_supersede_of_a_checkpoint_series_is_not_held():
    """A newer status note superseding an older one of its series is a supersede: no hold, its own confidence."""
    store = view(note("status-week7.md", "---\nupdated_at: 2026-05-01\n---\nTests: 112 passing.\n"), note("status-week8.md", "---\nupdated_at: 2026-05-08\n---\nTests: 131 passing.\n"))
    quotes = [{"note": "n1", "quote": "Tests: 131 passing."}, {"note": "n2", "quote": "Tests: 112 passing."}]
    draft = check(proposal("supersede", newer="n1", evidence=quotes, confidence=0.9), sent_for(store, "status-week8.md", "status-week7.md"), "model:test")
    assert (draft.kind, draft.confidence, draft.held) == ("supersede", 0.9, ())
