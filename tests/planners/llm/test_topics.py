"""Topical candidate groups for stores too big to send whole: rare shared terms and numbered series."""

from __future__ import annotations

import random
import time

from daemon.planners.llm.candidates import SERIES, TOPIC, select
from daemon.planners.llm.topics import terms, topical_neighbours

from ..factory import note, prose, view

STACK = "# Tech stack\nThe backend runs FastAPI behind uvicorn; the frontend is built with Vite and Tailwind.\n"
STYLE = "# Code style conventions\nFormat with ruff; FastAPI routers live one per file; Vite aliases map @ to src.\n"
PLANTS = "# Office plants\nThe fern by the window is watered on Mondays; the cactus once a month.\n"


def filler(count: int, seed: int = 3) -> list:  # type: ignore[type-arg]
    """Unrelated notes of pseudo-words, so a store is large enough to need groups."""
    rng = random.Random(seed)
    return [note(f"misc/n{i:03d}.md", prose(rng, 60)) for i in range(count)]


def test_notes_sharing_rare_topic_terms_are_grouped_though_they_share_few_words() -> None:
    """A tech-stack and a code-style note share rare terms (fastapi, vite), not phrasing: one topical group."""
    v = view(note("tech_stack.md", STACK), note("code_style_conventions.md", STYLE), note("plants.md", PLANTS), *filler(40))
    groups = select(v, {"tech_stack.md"}, set(), lambda p: False)
    topical = [g for g in groups if TOPIC in g.reasons]
    assert [g.paths for g in topical] == [("tech_stack.md", "code_style_conventions.md")]


def test_words_many_notes_hold_make_no_topic() -> None:
    """Terms held by more than a tenth of the store are not rare: sharing them relates nothing."""
    common = [note(f"c/{i:02d}.md", f"# Note {i}\nDeploy staging pipeline release {i * 13} {prose(random.Random(i), 8)}") for i in range(30)]
    groups = select(view(*common), {"c/00.md"}, set(), lambda p: False)
    assert [g for g in groups if TOPIC in g.reasons] == []


def test_a_numbered_checkpoint_series_is_one_group_newest_first() -> None:
    """checkpoint_week7..10_complete are a series whatever their words; the newest leads after the anchor."""
    weeks = [note(f"checkpoint_week{w}_complete.md", f"---\nupdated_at: 2026-0{w - 5}-01\n---\nWeek {w} done: {prose(random.Random(w), 12)}") for w in (7, 8, 9)]
    v = view(*weeks, *filler(20))
    groups = select(v, {"checkpoint_week7_complete.md"}, set(), lambda p: False)
    series = [g for g in groups if SERIES in g.reasons]
    assert [g.paths for g in series] == [("checkpoint_week7_complete.md", "checkpoint_week9_complete.md", "checkpoint_week8_complete.md")]


def test_heading_title_and_file_name_words_weigh_double() -> None:
    n = note("guides/release_flow.md", "---\ntitle: Shipping\n---\n# Canary\nThe canary runs first.\n")
    weights = terms(n, frozenset({"canary", "runs", "first"}))
    assert (weights["canary"], weights["shipping"], weights["release"], weights["flow"], weights["runs"]) == (2, 2, 2, 2, 1)


def test_topical_neighbours_only_answer_for_anchors_and_never_list_the_anchor() -> None:
    weights = [{"alpha": 1, "beta": 1, "gamma": 1}, {"alpha": 1, "beta": 1, "gamma": 1}, {"delta": 1}, {"alpha": 1, "beta": 1, "gamma": 1}] + [{f"w{i}": 1} for i in range(40)]
    found = topical_neighbours(weights, [0], limit=3, max_df=4)
    assert found == {0: [1, 3]}


def test_topical_selection_grows_linearly_not_quadratically() -> None:
    """Ten times the notes with every note an anchor costs well under a hundred times the time."""

    def seconds(count: int) -> float:
        rng = random.Random(count)
        weights = [{w: 1 for w in prose(rng, 80).split()} for _ in range(count)]
        start = time.perf_counter()
        topical_neighbours(weights, list(range(count)), limit=3, max_df=32)
        return time.perf_counter() - start

    small, large = seconds(300), seconds(3000)
    assert large < 30 * small, (small, large)
