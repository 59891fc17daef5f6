"""Candidate selection: changed/due only, never private or excluded (packing: test_packing.py)."""

from __future__ import annotations

import random

from daemon.planners.llm.candidates import MAX_GROUP, STATUS, is_private, select

from ..factory import note, prose, view
from .store import excluded, store

ALL = {"notes/build.md", "notes/build-howto.md", "status/week-10-next.md", "status/week-10-complete.md", "notes/fonts.md", "notes/private.md", "vendor/excluded.md"}


def paths(groups: list) -> set[str]:  # type: ignore[type-arg]
    return {p for g in groups for p in g.paths}


def test_an_unchanged_store_gives_zero_groups() -> None:
    assert select(store(), set(), set(), excluded) == []


def test_only_groups_around_changed_notes() -> None:
    groups = select(store(), {"notes/build.md"}, set(), excluded)
    assert [g.paths for g in groups] == [("notes/build.md", "notes/build-howto.md")]
    assert groups[0].anchors == ("notes/build.md",)
    assert "similar wording" in groups[0].reasons and "shared tag" in groups[0].reasons


def test_status_notes_are_grouped_and_a_lone_changed_note_is_not_sent() -> None:
    groups = select(store(), {"status/week-10-complete.md", "notes/fonts.md"}, set(), excluded)
    assert [g.paths for g in groups] == [("status/week-10-complete.md", "status/week-10-next.md")]
    assert STATUS in groups[0].reasons


def test_private_and_excluded_notes_are_never_sent_even_when_changed() -> None:
    groups = select(store(), ALL, ALL, excluded)
    sent = paths(groups)
    assert "notes/private.md" not in sent and "vendor/excluded.md" not in sent
    assert {"notes/build.md", "notes/build-howto.md", "status/week-10-next.md"} <= sent
    assert select(store(), {"notes/private.md", "vendor/excluded.md"}, set(), excluded) == []


def test_private_survives_broken_frontmatter() -> None:
    broken = note("x.md", "---\nprivate: yes\ntags: [unclosed\n---\nsecret plans\n")
    assert broken.frontmatter_error and is_private(broken)
    assert is_private(note("y.md", "---\nprivate: true\n---\nx\n"))
    assert not is_private(note("z.md", "---\nprivate: false\n---\nx\n"))


def test_a_due_note_is_sent_even_alone() -> None:
    groups = select(store(), set(), {"notes/fonts.md"}, excluded)
    assert [(g.paths, g.min_size) for g in groups] == [(("notes/fonts.md",), 1)]


def test_shared_citation_and_file_stem_relate_notes() -> None:
    v = view(
        note("a.md", "The retry loop lives in src/net/retry.py and backs off.\n"),
        note("b.md", "Timeouts: see src/net/retry.py for the numbers.\n"),
        note("deploy-2026-01.md", "Deployed on Monday.\n"),
        note("deploy-2026-02.md", "Deployed on Friday after the freeze.\n"),
        note("c.md", "Unrelated words about gardening tomatoes.\n"),
    )
    cite = select(v, {"a.md"}, set(), lambda p: False)
    assert [g.paths for g in cite] == [("a.md", "b.md")] and "both cite a file or URL" in cite[0].reasons
    stem = select(v, {"deploy-2026-02.md"}, set(), lambda p: False)
    assert [g.paths for g in stem] == [("deploy-2026-02.md", "deploy-2026-01.md")]


def test_a_note_that_names_another_by_its_path_or_file_name_is_related_to_it() -> None:
    """A superseded note pointing at its successor shares no words with it, yet one names the other."""
    v = view(
        note("services/orders-v1.md", "SUPERSEDED: v1 was removed; the current endpoints are in services/orders.md.\n"),
        note("services/orders.md", "Endpoints: POST /orders, GET /orders/{id}.\n"),
        note("misc/plants.md", "Water the ferns on Fridays.\n"),
    )
    found = select(v, {"services/orders-v1.md"}, set(), lambda p: False)
    assert any(set(g.paths) == {"services/orders-v1.md", "services/orders.md"} and "one names the other" in g.reasons for g in found)
    assert all("misc/plants.md" not in g.paths for g in found)


def test_groups_are_capped_and_say_so() -> None:
    many = [note(f"t/n{i:02d}.md", f"---\ntags: [infra]\n---\nNote {i} about something else entirely {i * 7}.\n") for i in range(20)]
    groups = select(view(*many), {"t/n03.md"}, set(), lambda p: False)
    tagged = [g for g in groups if any("shared tag" in r for r in g.reasons)]
    assert len(tagged) == 1 and len(tagged[0].paths) == MAX_GROUP and tagged[0].paths[0] == "t/n03.md"
    assert "8 of 20" in " ".join(tagged[0].reasons)
    assert all(len(g.paths) <= MAX_GROUP for g in groups)


def test_groups_are_deduplicated() -> None:
    groups = select(store(), {"notes/build.md", "notes/build-howto.md"}, set(), excluded)
    sets = [frozenset(g.paths) for g in groups]
    assert len(sets) == len(set(sets))
    assert not any(a < b for a in sets for b in sets)


def test_selection_is_bounded_on_a_big_store() -> None:
    rng = random.Random(7)
    notes = [note(f"n/{i:04d}.md", prose(rng, 120)) for i in range(1500)]
    changed = {f"n/{i:04d}.md" for i in range(0, 1500, 100)}
    groups = select(view(*notes), changed, set(), lambda p: False)
    assert paths(groups) <= {n.path for n in notes}
    assert len(paths(groups)) <= len(changed) * MAX_GROUP
    assert all(set(g.paths) & changed for g in groups)
