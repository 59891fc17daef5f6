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
