"""Packing notes into calls: every note shown, related notes together, no note in every call."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.planners.llm.candidates import Group
from daemon.planners.llm.packing import GROUP_OVERHEAD, NOTE_OVERHEAD, pack

from .store import tokens


def group(*ps: str, reason: str = "similar wording", min_size: int = 2) -> Group:
    return Group(tuple(ps), (reason,), ps[:1], min_size=min_size)


def cost(path: str, text: str) -> int:
    return tokens(text) + tokens(path) + NOTE_OVERHEAD


def where(packing, path: str) -> list[int]:  # noqa: ANN001
    return [i for i, b in enumerate(packing.batches) if path in b.paths]


def test_notes_that_fit_one_call_go_in_one_call_with_every_group_as_a_hint() -> None:
    texts = {f"p{i}.md": "x" * 400 for i in range(4)}
    groups = [group("p0.md", "p1.md"), group("p2.md", "p3.md", reason="shared tag")]
    packing = pack(texts, groups, texts, tokens, 10_000)
    (batch,) = packing.batches
    assert set(batch.paths) == set(texts) and batch.groups == tuple(groups) and packing.whole


def test_a_large_note_rides_in_one_call_with_its_neighbours_not_in_every_call() -> None:
    """Nine notes, one of them 12 KB, over the room of one call: each note is sent exactly once,
    the big note with the notes it is related to, and the merged pair shares a call."""
    texts = {"big.md": "b" * 12_000, **{f"n{i}.md": "x" * 2_400 for i in range(8)}}
    room = 5_000
    groups = [group("big.md", "n0.md", "n1.md", reason="shared rare terms"), group("n2.md", "n3.md"), group("n4.md", "n5.md", reason="same title"), group("big.md", "n6.md", reason="shared tag")]
    packing = pack(texts, groups, texts, tokens, room)
    assert len(packing.batches) > 1
    for path in texts:
        assert len(where(packing, path)) == 1, path
    assert where(packing, "n2.md") == where(packing, "n3.md")
    assert where(packing, "big.md") == where(packing, "n0.md") == where(packing, "n1.md")
    assert all(b.tokens <= room for b in packing.batches)


def test_the_strongest_relation_is_kept_when_two_cannot_both_be() -> None:
    """a is nearly worded like b and shares only a tag with c; the three do not fit one call:
    the first call holds a with b, and a with c waits for a call of its own after it."""
    texts = {"a.md": "x" * 1600, "b.md": "x" * 1600, "c.md": "x" * 1600}
    room = 2 * cost("a.md", texts["a.md"]) + 2 * GROUP_OVERHEAD
    strong, weak = group("a.md", "b.md"), group("a.md", "c.md", reason="shared tag")
    packing = pack(texts, [weak, strong], texts, tokens, room)
    assert strong in packing.batches[0].groups and {"a.md", "b.md"} <= set(packing.batches[0].paths)
    assert weak in packing.batches[-1].groups and "c.md" not in packing.batches[0].paths


def test_a_group_cut_by_the_clusters_gets_a_call_of_its_own() -> None:
    """b and c are both tied more strongly elsewhere; their weaker relation is shown in a later call."""
    texts = {p: "x" * 1600 for p in ("a.md", "b.md", "c.md", "d.md")}
    room = 2 * cost("a.md", texts["a.md"]) + 2 * GROUP_OVERHEAD
    weak = group("b.md", "c.md", reason="shared tag")
    packing = pack(texts, [group("a.md", "b.md"), group("c.md", "d.md"), weak], texts, tokens, room)
    holding = [b for b in packing.batches if weak in b.groups]
    assert len(packing.batches) == 3 and len(holding) == 1 and set(holding[0].paths) == {"b.md", "c.md"}
    assert packing.batches[-1] is holding[0]  # after the calls that show every note


def test_a_note_larger_than_a_call_is_named_never_dropped_silently() -> None:
    texts = {"huge.md": "h" * 40_000, "a.md": "x" * 100, "b.md": "x" * 100}
    packing = pack(texts, [group("huge.md", "a.md"), group("a.md", "b.md")], texts, tokens, 2_000)
    assert packing.too_large == ("huge.md",)
    assert {p for b in packing.batches for p in b.paths} == {"a.md", "b.md"}
    assert frozenset({"huge.md", "a.md"}) in packing.unfit


def test_a_due_note_related_to_nothing_is_still_sent() -> None:
    texts = {"a.md": "x" * 100, "b.md": "x" * 100, "alone.md": "y" * 100}
    packing = pack(["alone.md"], [group("a.md", "b.md")], texts, tokens, 10_000)
    assert "alone.md" in packing.batches[0].paths


@settings(max_examples=150, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=3_000), min_size=1, max_size=40),
    links=st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39), st.sampled_from(["similar wording", "shared tag", "shared rare terms"])), max_size=60),
    room=st.integers(min_value=200, max_value=6_000),
)
def test_every_note_is_shown_once_in_a_call_that_fits(sizes: list[int], links: list[tuple[int, int, str]], room: int) -> None:
    """Whatever the notes and relations: each note fitting a call is in exactly one of the calls
    that cover notes (cut groups' calls come after), no call exceeds the room, and with more than
    one call no note is in all of them."""
    texts = {f"n{i:02d}.md": "x" * size for i, size in enumerate(sizes)}
    names = sorted(texts)
    groups = [group(names[a % len(names)], names[b % len(names)], reason=r) for a, b, r in links if a % len(names) != b % len(names)]
    packing = pack(names, groups, texts, tokens, room)
    fits = {p for p in names if cost(p, texts[p]) + GROUP_OVERHEAD <= room}
    assert set(packing.too_large) == set(names) - fits
    shown = [p for b in packing.batches for p in b.paths]
    assert set(shown) == fits
    assert all(b.tokens <= room for b in packing.batches)
    if len(packing.batches) > 1:
        assert not any(all(p in b.paths for b in packing.batches) for p in fits)
    held = {frozenset(g.paths) for b in packing.batches for g in b.groups}
    for g in groups:
        if set(g.paths) <= fits and frozenset(g.paths) not in packing.unfit:
            assert frozenset(g.paths) in held, g.paths
