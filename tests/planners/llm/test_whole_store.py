"""The whole-store route: a store that fits one call is sent whole; one that does not is packed in calls."""

from __future__ import annotations

import dataclasses

from daemon.core.changes import build
from daemon.core.validate import refusal
from daemon.llm.base import ModelSettings
from daemon.llm.fakes import FakeModel
from daemon.planners.llm.planner import LLMPlanner

from ..factory import note, view
from .store import NOW, SETTINGS, excluded, fixed_tokens, reply, store, tokens

SENDABLE = ("notes/build-howto.md", "notes/build.md", "notes/fonts.md", "status/week-10-complete.md", "status/week-10-next.md")


def plan(fake: FakeModel, changed: set[str], settings: ModelSettings = SETTINGS, v=None, due: set[str] | None = None):  # noqa: ANN001, ANN201
    return LLMPlanner(fake, settings, tokens).plan(v if v is not None else store(), NOW, changed, due or set(), excluded)


def test_a_store_that_fits_one_call_is_sent_whole_in_one_call() -> None:
    """One changed note: every sendable note goes in one call, keyed by all of them; private and excluded notes stay out."""
    fake = FakeModel().enqueue(reply())
    result = plan(fake, {"notes/build.md"})
    (request,) = fake.requests
    assert request.key == "|".join(SENDABLE) and result.whole_store
    assert sorted(result.calls[0].notes) == list(SENDABLE)
    assert "notes/private.md" not in request.user and "vendor/excluded.md" not in request.user
    assert all(f'path="{p}"' in request.user for p in SENDABLE)


def test_a_whole_store_call_names_every_note_as_one_group_first() -> None:
    """The whole store is the first group line: a small model reads the groups as what to examine, and the hints alone kept it from a clear pair they did not name."""
    fake = FakeModel().enqueue(reply())
    plan(fake, {"notes/fonts.md"})
    groups = fake.requests[0].user.split("Groups of related notes to examine:")[1].strip().splitlines()
    assert groups[0] == "- n1, n2, n3, n4, n5 (the whole store: any of its notes may belong together)"


def test_a_call_of_groups_names_no_whole_store() -> None:
    """A store cut into calls says nothing of the whole store: the model has not seen it."""
    fake = FakeModel().enqueue(reply())
    settings = dataclasses.replace(SETTINGS, tokens_per_call=fixed_tokens(SETTINGS) + 150)
    plan(fake, {"notes/build.md"}, settings)
    assert "the whole store" not in fake.requests[0].user


def test_the_first_ids_are_those_of_the_related_notes() -> None:
    """The changed note and its group come first (n1, n2), the rest after, so a reply names them as a group call would."""
    fake = FakeModel().enqueue(reply())
    plan(fake, {"notes/build.md"})
    user = fake.requests[0].user
    assert user.index('<note id="n1" path="notes/build.md">') < user.index('<note id="n2" path="notes/build-howto.md">')


def test_a_changed_note_related_to_nothing_still_reaches_the_model_in_a_whole_store_call() -> None:
    """A topical partner may share no word with it: sent whole, the model can still see both."""
    fake = FakeModel().enqueue(reply())
    result = plan(fake, {"notes/fonts.md"})
    assert len(fake.requests) == 1 and result.whole_store and "notes/fonts.md" in result.calls[0].notes


def test_an_unchanged_store_that_fits_makes_zero_calls() -> None:
    fake = FakeModel()  # any call would raise
    result = plan(fake, set())
    assert (fake.requests, result.calls, result.whole_store) == ([], [], False)


def test_a_store_over_the_call_budget_is_cut_into_groups() -> None:
    """When the whole store does not fit tokens_per_call, only the changed note's group is sent."""
    fake = FakeModel().enqueue(reply())
    settings = dataclasses.replace(SETTINGS, tokens_per_call=fixed_tokens(SETTINGS) + 150)
    result = plan(fake, {"notes/build.md"}, settings)
    assert [r.key for r in fake.requests] == ["notes/build-howto.md|notes/build.md"] and not result.whole_store


def test_a_pass_budget_too_small_for_one_call_is_one_clear_error() -> None:
    """A tokens_per_pass that cannot hold one call's prompt and reply is refused, naming the key; no call is made."""
    import pytest

    from daemon.core.errors import BudgetExceededError

    fake = FakeModel()
    settings = dataclasses.replace(SETTINGS, tokens_per_pass=fixed_tokens(SETTINGS) + 200)
    with pytest.raises(BudgetExceededError, match=r"^tokens_per_pass \d+ leaves no room for one call"):
        plan(fake, {"notes/build.md"}, settings)
    assert fake.requests == []


STACK = "---\nname: tech_stack\n---\nThe backend is Python 3.12 with FastAPI.\n"
STYLE = "---\nname: code_style\n---\nFormat Python with ruff.\n"
WEEK7 = "---\nupdated_at: 2026-04-10\n---\n# Checkpoint week 7 complete\nThe importer is done; 80 tests pass.\n"
STATUS = "---\nupdated_at: 2026-05-28\n---\n# Project status\nImporter and exporter are done; 131 tests pass.\n"


def small_store():  # noqa: ANN201 - StoreView
    return view(note("tech_stack.md", STACK), note("code_style.md", STYLE), note("checkpoint_week7_complete.md", WEEK7), note("project_status.md", STATUS))


def ids(request) -> dict[str, str]:  # noqa: ANN001
    import re

    return {path: i for i, path in re.findall(r'<note id="(n\d+)" path="([^"]+)"', request.user)}


def test_a_topical_merge_into_a_new_note_and_a_checkpoint_supersede_come_from_one_whole_store_call() -> None:
    """What people do by hand in a small store: two notes become a new guide, a checkpoint retires under the newer status."""
    probe = FakeModel().enqueue(reply())
    plan(probe, {"tech_stack.md"}, v=small_store())
    n = ids(probe.requests[0])
    merge = {
        "kind": "merge", "notes": [n["tech_stack.md"], n["code_style.md"]], "new_path": "development_guide.md", "new_title": "Development guide",
        "merged_body": "- The backend is Python 3.12 with FastAPI.\n- Format Python with ruff.\n",
        "evidence": [{"note": n["tech_stack.md"], "quote": "Python 3.12 with FastAPI"}, {"note": n["code_style.md"], "quote": "Format Python with ruff."}],
    }  # fmt: skip
    supersede = {
        "kind": "supersede", "notes": [n["project_status.md"], n["checkpoint_week7_complete.md"]], "newer": n["project_status.md"],
        "evidence": [{"note": n["project_status.md"], "quote": "Importer and exporter are done; 131 tests pass."}, {"note": n["checkpoint_week7_complete.md"], "quote": "The importer is done; 80 tests pass."}],
    }  # fmt: skip
    fake = FakeModel().enqueue(reply(merge, supersede))
    v = small_store()
    result = plan(fake, {"tech_stack.md"}, v=v)
    assert [(d.kind, d.survivor, d.retire) for d in result.drafts] == [
        ("merge", "development_guide.md", ("tech_stack.md", "code_style.md")),
        ("supersede", "project_status.md", ("checkpoint_week7_complete.md",)),
    ]
    assert all(refusal(d, build(d, v, NOW), v) is None for d in result.drafts)
