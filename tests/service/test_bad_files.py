"""Binary, non-UTF-8 and oversized files: the pass completes, reports them skipped, proposes nothing about them."""

from __future__ import annotations

import os

from daemon.config import adhoc_store, parse_config
from daemon.service.passes.run import run_pass
from daemon.service.proposals import list_proposals

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


def test_notes_that_used_to_stop_every_pass_are_skipped_or_read_and_the_pass_completes(make_store, make_app, tmp_path, clock):
    """A date beyond what UTC can hold, a file name that is not UTF-8, and a 254-byte name whose archive name is taken: the pass (dry run too) completes, the name is reported, the rest is proposed."""
    long_name = "n" * 251 + ".md"  # 254 bytes: with ".2" it would be 256
    body = "The staging database is rebuilt every night from a dump.\n"
    root = make_store({
        "far.md": "---\nvalid_to: 9999-12-31T23:59:59-12:00\n---\nFar future.\n",
        "early.md": "---\nupdated_at: 0001-01-01T00:00:00+01:00\nttl_days: 1\n---\nVery old.\n",
        long_name: body, "copy.md": "---\nupdated_at: 2030-01-01\n---\n" + body,
    })  # fmt: skip
    (root / ".dreamd-archive").mkdir()
    (root / ".dreamd-archive" / long_name).write_text("an earlier retirement\n")
    os.close(os.open(os.path.join(os.fsencode(root), b"caf\xe9.md"), os.O_CREAT | os.O_WRONLY, 0o644))
    store = adhoc_store(root, "deepcode")
    for dry in (True, False):
        report = run_pass(make_app(), store, dry_run=dry)
        assert report.status in ("completed", "dry-run")
        assert [(s.path, s.reason) for s in report.skipped_files] == [("caf\\xe9.md", "bad-name")]
    (merge,) = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    assert merge.state == "pending" and merge.planned.draft.retire == (long_name,)
    archived = [p for p in merge.planned.change.result if p.startswith(".dreamd-archive/")]
    assert len(archived[0].rsplit("/", 1)[1].encode()) <= 255 and archived[0].endswith(".2.md")
