"""dreamd's own reapply (core/patch.py) places a reviewed edit exactly where ``git apply -C0``
does, or refuses where it refuses: checked against git itself on random index edits and on
whitespace-heavy text; text with carriage returns goes to git itself."""

from __future__ import annotations

import random

import pytest

from daemon.core import patch
from daemon.core.hashing import hash_bytes
from daemon.core.proposals import Change
from daemon.diffs import git

PATH = "MEMORY.md"


def _diff(before: bytes, after: bytes) -> str:
    b, a = hash_bytes(before), hash_bytes(after)
    return git.unified_diff(Change({PATH: b}, {PATH: a}, {b: before, a: after}))


def _index(rng: random.Random, n: int) -> list[bytes]:
    return [f"- [note {rng.randint(0, 40)}](n{i}.md): {rng.choice(['build', 'deploy', 'ports', 'tests'])}\n".encode() for i in range(n)]


def _edit(rng: random.Random, lines: list[bytes], edits: int) -> list[bytes]:
    out = list(lines)
    for _ in range(edits):
        at = rng.randint(0, len(out))
        what = rng.random()
        if what < 0.45 and out:
            del out[min(at, len(out) - 1)]
        elif what < 0.8:
            out.insert(at, f"- [added {rng.randint(0, 99)}](a{rng.randint(0, 99)}.md): new\n".encode())
        elif out:
            out[min(at, len(out) - 1)] = b"- a line rewritten by hand\n"
    return out


@pytest.mark.parametrize("seed", range(6))
def test_placing_a_hunk_agrees_with_git_apply(seed):
    """A proposal's edit of an index (lines removed, added, replaced), re-applied on the index
    after other edits nearby or far away (some overlapping the proposal's own lines, a final
    newline dropped now and then): the same bytes as git, or None where git refuses."""
    rng = random.Random(seed)
    agreed = placed = 0
    for _ in range(40):
        base = _index(rng, rng.randint(1, 60))
        proposal = _edit(rng, base, rng.randint(1, 3))
        current = _edit(rng, base, rng.randint(0, 4))
        tail = (lambda lines: b"".join(lines)[:-1]) if rng.random() < 0.1 else b"".join  # noqa: E731
        before, after, now = tail(base), b"".join(proposal), tail(current)
        if before == after:
            continue
        diff = _diff(before, after)
        ours, theirs = patch.reapply(diff, PATH, now), git.git_reapply(diff, PATH, now)
        assert ours == theirs, (before, after, now, diff)
        agreed += 1
        placed += ours is not None
    assert agreed >= 30 and 0 < placed < agreed  # both outcomes were exercised


def test_an_edit_whose_removed_line_is_gone_is_refused_and_one_elsewhere_is_placed():
    """The line the proposal removes was removed by someone else: None. Lines added far from
    the hunk: it lands at its offset, the others' lines kept."""
    base = b"".join(f"- [n{i}](n{i}.md)\n".encode() for i in range(20))
    after = base.replace(b"- [n7](n7.md)\n", b"")
    diff = _diff(base, after)
    assert patch.reapply(diff, PATH, base.replace(b"- [n7](n7.md)\n", b"- [x](x.md)\n")) is None
    moved = b"- [top](top.md)\n- [top2](top2.md)\n" + base
    assert patch.reapply(diff, PATH, moved) == b"- [top](top.md)\n- [top2](top2.md)\n" + after
    assert patch.reapply(diff, "other.md", base) is None


@pytest.mark.parametrize("seed", range(3))
def test_whitespace_heavy_text_is_placed_as_git_places_it(seed):
    """Blank lines, lines that differ only in spaces or tabs, files with and without a final
    newline (git's whitespace-blind line hash and byte-exact match): the same as git."""
    rng = random.Random(100 + seed)
    shapes = [b"a\n", b"b\n", b"a \n", b" a\n", b"\n", b"ab\n", b"a\tb\n"]
    agreed = 0
    for _ in range(60):
        base = [rng.choice(shapes) for _ in range(rng.randint(1, 15))]
        before, after = b"".join(base), b"".join(_edit(rng, base, rng.randint(1, 3)))
        now = b"".join(_edit(rng, base, rng.randint(0, 4)))
        if rng.random() < 0.2:
            before, now = before[:-1], now[:-1]
        if before == after:
            continue
        diff = _diff(before, after)
        assert patch.reapply(diff, PATH, now) == git.git_reapply(diff, PATH, now), (before, after, now, diff)
        agreed += 1
    assert agreed >= 40


def test_text_with_carriage_returns_is_left_to_git():
    """A CRLF index goes to git itself (its line handling of CR is not dreamd's to copy)."""
    base = b"".join(f"- [n{i}](n{i}.md)\r\n".encode() for i in range(10))
    after = base.replace(b"- [n4](n4.md)\r\n", b"")
    diff = _diff(base, after)
    current = b"- [top](top.md)\r\n" + base
    assert git.reapply(diff, PATH, current) == git.git_reapply(diff, PATH, current) == b"- [top](top.md)\r\n" + after
