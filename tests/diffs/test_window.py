"""A large file is diffed by its changed window: the diff must be the whole-file diff."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.core.hashing import hash_bytes
from daemon.core.patch import rebuild
from daemon.core.proposals import Change
from daemon.diffs import git as git_diffs
from daemon.diffs import window as window_module

# few distinct lines, so runs and repeats (where git slides changes) are common; some are
# lines git shows as a hunk's section heading (a letter first), one has no final newline
LINES = [b"- [a](a.md) one\n", b"- [b](b.md) two\n", b"\n", b"## Group\n", b"Section heading\n", b"_private\n", b"- [c](c.md) three\n"]


def _change(path: str, before: bytes, after: bytes) -> Change:
    return Change(base={path: hash_bytes(before)}, result={path: hash_bytes(after)}, data={hash_bytes(before): before, hash_bytes(after): after})


def _diffs(change: Change, margin: int) -> tuple[str, str]:
    """(whole-file diff, windowed diff) of the same change."""
    with mock.patch.object(git_diffs, "MIN_BYTES", 10**12):
        whole = git_diffs.unified_diff(change)
    with mock.patch.object(git_diffs, "MIN_BYTES", 0), mock.patch.object(git_diffs, "window", lambda a, b: window_module.window(a, b, margin)):
        windowed = git_diffs.unified_diff(change)
    return whole, windowed


edits = st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["drop", "add", "swap"]), st.integers(0, 10**6)), min_size=1, max_size=3)


def _edited(before_lines: list[bytes], changes, new_line) -> list[bytes]:  # noqa: ANN001
    after = list(before_lines)
    for at, how, pick in changes:
        if how == "add":
            after.insert(at % (len(after) + 1), new_line(pick))
        elif how == "drop" and len(after) > 1:
            del after[at % len(after)]
        else:
            after[at % len(after)] = new_line(pick)
    return after


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.booleans(), min_size=30, max_size=150), edits, st.integers(3, 12), st.booleans())
def test_for_an_index_of_distinct_lines_the_windowed_diff_is_byte_identical(headings, changes, margin, no_final_newline):
    """Index lines each name a different note: hunks, line numbers, section headings (found
    inside or above the window) and a missing final newline come out exactly as git's."""
    before_lines = [b"Section %d heading\n" % i if h else b"- [note %d](n%d.md)\n" % (i, i) for i, h in enumerate(headings)]
    if no_final_newline:
        before_lines[-1] = before_lines[-1].rstrip(b"\n")
    after_lines = _edited(before_lines, changes, lambda pick: b"- [new %d](new%d.md)\n" % (pick, pick))
    before, after = b"".join(before_lines), b"".join(after_lines)
    if before != after:
        whole, windowed = _diffs(_change("MEMORY.md", before, after), margin)
        assert windowed == whole


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=30, max_size=120), edits, st.integers(3, 12), st.booleans())
def test_for_repetitive_content_the_windowed_diff_still_rebuilds_the_result(lines, changes, margin, no_final_newline):
    """Repeats let git align a change more than one way, and inside a window (here a margin
    of 3 to 12 lines, 200 in use) it may pick another, even a longer one. What matters
    holds: the diff rebuilds the exact result bytes (and every proposal's diff is proven so)."""
    before_lines = list(lines)
    if no_final_newline:
        before_lines[-1] = before_lines[-1].rstrip(b"\n") or b"x"
    after_lines = _edited(before_lines, changes, lambda pick: LINES[pick % len(LINES)])
    before, after = b"".join(before_lines), b"".join(after_lines)
    if before != after:
        whole, windowed = _diffs(_change("MEMORY.md", before, after), margin)
        assert rebuild(windowed, {"MEMORY.md": before})["MEMORY.md"] == after
        assert rebuild(whole, {"MEMORY.md": before})["MEMORY.md"] == after


def test_a_one_line_edit_of_a_big_index_matches_git_exactly():
    """The realistic case: 10,000 index lines, one removed, headings above; byte-identical."""
    lines = [b"# Memory index\n", b"Notes kept by the agent\n"] + [b"- [Note %d](note-%05d.md) about item %d\n" % (i, i, i) for i in range(10_000)]
    before = b"".join(lines)
    after = b"".join(lines[:5003] + lines[5004:])
    whole, windowed = _diffs(_change("MEMORY.md", before, after), window_module.MARGIN)
    assert windowed == whole and "@@ -5001,7 +5001,6 @@ Notes kept by the agent" in whole
    assert window_module.window(before, after).before.count(b"\n") < 500  # git saw a window, not 10,000 lines
