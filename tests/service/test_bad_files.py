"""Binary, non-UTF-8 and oversized files: the pass completes, reports them skipped, proposes nothing about them."""

from __future__ import annotations

import os

from daemon.config import adhoc_store, parse_config
from daemon.service.passes import run_pass
from daemon.service.review import list_proposals

BAD = {
    "binary.md": b"# looks like a note\n\x00\x01\x02 but holds NUL bytes\n",
    "latin1.md": "Caf\xe9 cr\xe8me, written in Latin-1.\n".encode("latin-1"),
    "huge.md": b"The API listens on port 8080.\n" * 40_000,  # 1.2 MB, over the 1 MiB default limit
    "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
}
GOOD = {
    "MEMORY.md": "# M\n\n- [Ports](ports.md) — ports\n- [Binary](binary.md) — listed but unreadable\n",
    "ports.md": "---\nname: Ports\n---\nThe API listens on port 8080.\n",
}


def test_pass_reports_bad_files_as_skipped_and_proposes_nothing_about_them(make_store, make_app):
    """Each bad file is reported with its reason, and no proposal reads, writes or retires it."""
    root = make_store({**GOOD, **BAD})
    app = make_app()
    report = run_pass(app, adhoc_store(root, "deepcode"))
    assert report.status == "completed"
    assert [(s.path, s.reason) for s in report.skipped_files] == [
        ("binary.md", "binary"), ("huge.md", "too-large"), ("image.png", "binary"), ("latin1.md", "not-utf8"),
    ]  # fmt: skip
    assert report.stats["skipped_files"] == 4
    for proposal in list_proposals(app):
        assert not set(BAD) & (set(proposal.base) | set(proposal.result)), proposal.title
        assert all(e["path"] not in BAD for e in proposal.evidence)


def test_listed_binary_note_is_dropped_from_the_index_as_dangling_only(make_store, make_app):
    """The index line for the unreadable binary.md is the only change proposed (a reindex of MEMORY.md alone)."""
    root = make_store({**GOOD, **BAD})
    report = run_pass(make_app(), adhoc_store(root, "deepcode"))
    assert [(o.planned.draft.kind, o.planned.draft.index_drop, o.planned.draft.index_add) for o in report.outcomes] == [("reindex", ("binary.md",), ())]
    assert report.outcomes[0].planned.change.written == ["MEMORY.md"]


def test_duplicates_of_each_other_among_bad_files_are_not_merged(make_store, make_app):
    """Two identical non-UTF-8 notes and two identical oversized notes give no merge proposal."""
    root = make_store({
        "a.md": BAD["latin1.md"], "b.md": BAD["latin1.md"], "c.md": BAD["huge.md"], "d.md": BAD["huge.md"],
        "e.md": b"\xff\xfe\x00n\x00o\x00t\x00e\x00", "f.md": b"\xff\xfe\x00n\x00o\x00t\x00e\x00",
    })
    report = run_pass(make_app(), adhoc_store(root, "generic"))
    assert report.status == "completed"
    assert report.outcomes == []
    assert [s.reason for s in report.skipped_files] == ["not-utf8", "not-utf8", "too-large", "too-large", "binary", "binary"]


def test_configured_size_limit_and_unreadable_file_never_crash_the_pass(make_store, make_app):
    """With max_file_bytes = 64 a longer note is skipped as too-large; a file without read permission is skipped as unreadable."""
    root = make_store({**GOOD, "long.md": "word " * 40 + "\n", "locked.md": "secret\n"})
    os.chmod(root / "locked.md", 0)
    try:
        config = parse_config({"stores": [{"name": "s", "path": str(root), "preset": "deepcode", "settings": {"max_file_bytes": 64}}]})
        report = run_pass(make_app(config), config.stores["s"])
    finally:
        os.chmod(root / "locked.md", 0o644)
    expected = {"long.md": "too-large", "locked.md": "unreadable", "MEMORY.md": "too-large"}
    if os.geteuid() == 0:  # root reads files whatever their mode
        expected.pop("locked.md")
    assert {s.path: s.reason for s in report.skipped_files} == expected
    assert report.status == "completed"
