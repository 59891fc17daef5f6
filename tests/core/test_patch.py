"""Every diff is proven: rebuilding the result from base + parsed diff gives exact bytes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.core.errors import DiffError
from daemon.core.hashing import hash_bytes
from daemon.core.patch import rebuild, verify
from daemon.core.proposals import Change
from daemon.diffs.git import unified_diff


def _change(before: dict[str, bytes | None], after: dict[str, bytes | None]) -> Change:
    data = {hash_bytes(b): b for b in [*before.values(), *after.values()] if b is not None}
    return Change(
        base={p: hash_bytes(b) if b is not None else None for p, b in before.items()},
        result={p: hash_bytes(b) if b is not None else None for p, b in after.items()},
        data=data,
    )


CASES = {
    "edit": ({"n.md": b"a\nb\nc\n"}, {"n.md": b"a\nB\nc\n"}),
    "no newline at end, before": ({"n.md": b"a\nb"}, {"n.md": b"a\nb\nc\n"}),
    "no newline at end, after": ({"n.md": b"a\nb\n"}, {"n.md": b"a\nc"}),
    "crlf": ({"n.md": b"a\r\nb\r\n"}, {"n.md": b"a\r\nc\r\n"}),
    "form feed is not a line break": ({"n.md": b"a\x0cb\nc\n"}, {"n.md": b"a\x0cb\nd\n"}),
    "create and delete": ({"old.md": b"x\n", "arch/old.md": None}, {"old.md": None, "arch/old.md": b"---\nstatus: expired\n---\nx\n"}),
    "unicode path": ({"notes/é.md": b"caf\xc3\xa9\n"}, {"notes/é.md": b"th\xc3\xa9\n"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_git_diff_rebuilds_result_exactly(name):
    """The diff git produces, parsed by unidiff, rebuilds the after-bytes."""
    before, after = CASES[name]
    change = _change(before, after)
    diff = unified_diff(change)
    verify(diff, before, after)


def test_tampered_diff_is_refused():
    """A diff that no longer matches the result fails verification."""
    before, after = CASES["edit"]
    diff = unified_diff(_change(before, after)).replace("+B", "+X")
    with pytest.raises(DiffError):
        verify(diff, before, after)


def test_diff_against_wrong_base_is_refused():
    """A hunk whose context does not match the base is an error, not a guess."""
    before, after = CASES["edit"]
    diff = unified_diff(_change(before, after))
    with pytest.raises(DiffError):
        rebuild(diff, {"n.md": b"z\ny\nx\n"})


def test_garbage_is_not_a_diff():
    """Text that is not a diff never rebuilds anything."""
    with pytest.raises(DiffError):
        verify("not a diff", {"n.md": b"a\n"}, {"n.md": b"b\n"})


_line = st.sampled_from(["alpha", "beta", "gamma", "", "  indented", "tab\there", "é ü", "x\r", "a\x0cb"])
_text = st.lists(_line, max_size=12).map(lambda ls: "\n".join(ls)) | st.lists(_line, max_size=12).map(lambda ls: "".join(f"{l}\n" for l in ls))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=_text, after=_text)
def test_any_git_diff_rebuilds_exactly(before, after):
    """For arbitrary texts (CRLF, missing final newline, form feeds), git's diff rebuilds the after-bytes."""
    b, a = before.encode(), after.encode()
    verify(unified_diff(_change({"n.md": b}, {"n.md": a})), {"n.md": b}, {"n.md": a})


def test_skipping_lines_to_a_hunk_agrees_with_walking_them_one_by_one():
    """_advance (one split) gives the offset a line-by-line walk gives, and fails where it fails:
    files with and without a final newline, empty lines, offsets at every line start."""
    import random

    from daemon.core.errors import DiffError
    from daemon.core.patch import _advance

    def walk(source: bytes, offset: int, count: int) -> int | str:
        for _ in range(count):
            if offset >= len(source):
                return "past the end"
            newline = source.find(b"\n", offset)
            offset = len(source) if newline < 0 else newline + 1
        return offset

    rng = random.Random(11)
    for _ in range(5000):
        source = bytes(rng.choice(b"a\n") for _ in range(rng.randint(0, 14)))
        starts = [0] + [i + 1 for i, byte in enumerate(source) if byte == 10 and i + 1 < len(source)]
        offset, count = rng.choice(starts), rng.randint(0, 9)
        try:
            got: int | str = _advance(source, offset, count)
        except DiffError:
            got = "past the end"
        assert got == walk(source, offset, count), (source, offset, count)


def test_running_root_is_the_root_hash_of_the_manifest_it_follows():
    """RunningRoot after any series of sets, removals and re-adds equals root_hash of the same manifest."""
    import random

    from daemon.core.hashing import RunningRoot, root_hash

    rng = random.Random(4)
    manifest = {f"d{rng.randint(0, 9)}/é{i}.md": f"{rng.getrandbits(256):064x}" for i in range(60)}
    running = RunningRoot(manifest)
    for _ in range(1500):
        path = rng.choice(sorted(manifest)) if manifest and rng.random() < 0.6 else f"n{rng.randint(0, 40)}.md"
        digest = None if rng.random() < 0.3 else f"{rng.getrandbits(256):064x}"
        if digest is None:
            manifest.pop(path, None)
        else:
            manifest[path] = digest
        running.set(path, digest)
        assert running.digest() == root_hash(manifest)
    assert RunningRoot({}).digest() == root_hash({})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([b"", b"a", b"line of text", b"\xc3\xa9"]), min_size=0, max_size=30), st.booleans(), st.integers(0, 40), st.integers(0, 40))
def test_advancing_by_line_ends_is_advancing_by_split(lines: list[bytes], newline_at_end: bool, start: int, count: int):
    """A large file's lines are found by a lookup in its line ends; it answers exactly as the
    split does, at the end of the file and past it included."""
    from daemon.core import patch

    source = b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    offsets = [0] + [i + 1 for i, byte in enumerate(source) if byte == 10]
    offset = offsets[start % len(offsets)]

    def answer(advance):  # noqa: ANN001, ANN202
        try:
            return advance(source, offset, count)
        except DiffError:
            return "beyond"

    assert count == 0 or answer(patch._advance_by_ends) == answer(patch._advance_by_split)
