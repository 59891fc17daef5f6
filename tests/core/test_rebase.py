"""A small edit of a shared note, placed by what it means on the note as other applies left it.

Each case makes two edits of one base with git's own diffs, as two proposals of a pass do;
the first is applied, and the second is placed on what it left (``rebase``), or refused with
the reason. Index files are Claude Code's sectioned MEMORY.md and Cline's tasks/_index.md.
"""

from __future__ import annotations

import pytest

from daemon.core.errors import StaleError
from daemon.core.hashing import hash_bytes
from daemon.core.index import BY_STATUS, BY_TYPE, CLINE_TASKS, LINKS, IndexSpec, LoadLimit
from daemon.core.patch import blocks
from daemon.core.proposals import Change
from daemon.core.rebase import merge_line, rebase, shared
from daemon.diffs.git import unified_diff

MEMORY = IndexSpec("MEMORY.md", LINKS, sections=BY_TYPE)

INDEX = b"""# Memory

## User

- [Role](role.md) - leads payments

## Feedback

- [Tests](tests.md) - run focused tests first
- [Tests again](tests_again.md) - run focused tests
- [Tests copy](tests_copy.md) - tests
- [Tests old](tests_old.md) - tests

## Project

- [Deploy](deploy.md) - how a release goes out

## Reference

- [CI](ci.md) - where CI runs
- [Errors](errors.md) - the error envelope
"""


def _placed(path: str, base: bytes, result: bytes, current: bytes, spec: IndexSpec | None = MEMORY) -> bytes:
    """``result``'s edit of ``base``, as git's diff shows it, placed on ``current``."""
    before, after = hash_bytes(base), hash_bytes(result)
    diff = unified_diff(Change({path: before}, {path: after}, {before: base, after: result}))
    return rebase(blocks(diff, path), base, result, current, spec)


def _edit(base: bytes, old: bytes, new: bytes) -> bytes:
    assert base.count(old) == 1, old
    return base.replace(old, new)


def _section_of(text: bytes, line: bytes) -> bytes:
    """The heading a line sits under."""
    heading = b""
    for each in text.splitlines(keepends=True):
        if each.startswith(b"#"):
            heading = each.strip()
        if each == line:
            return heading
    raise AssertionError(f"{line!r} is not in the text")


def test_a_new_entry_lands_in_the_section_its_diff_showed_after_lines_above_it_went():
    """An entry added at the end of '## Project' lands there when earlier applies removed three lines above it and reworded the line before it (git apply -C0 put it under '## Feedback')."""
    first = _edit(INDEX, b"- [Tests again](tests_again.md) - run focused tests\n- [Tests copy](tests_copy.md) - tests\n- [Tests old](tests_old.md) - tests\n", b"")
    second = _edit(first, b"- [Deploy](deploy.md) - how a release goes out\n", b"- [Deploy v2](deploy_v2.md) - how a release goes out\n")
    new = b"- [Cache](cache.md) - what the CDN caches\n"
    reindex = _edit(INDEX, b"- [Deploy](deploy.md) - how a release goes out\n", b"- [Deploy](deploy.md) - how a release goes out\n" + new)
    placed = _placed("MEMORY.md", INDEX, reindex, second)
    assert placed == _edit(second, b"- [Deploy v2](deploy_v2.md) - how a release goes out\n", b"- [Deploy v2](deploy_v2.md) - how a release goes out\n" + new)


def test_entries_added_to_one_section_by_two_proposals_follow_each_other_at_its_end():
    """Two proposals adding an entry at the end of '## Reference' both land there, the later one after the earlier."""
    one, two = b"- [Dashboards](dash.md) - boards\n", b"- [On call](oncall.md) - who to page\n"
    first = INDEX + one
    placed = _placed("MEMORY.md", INDEX, INDEX + two, first)
    assert placed == INDEX + one + two


def test_an_entry_is_removed_where_earlier_applies_moved_it():
    """Removing an entry finds its line by its bytes after earlier applies added lines above it."""
    first = _edit(INDEX, b"- [Role](role.md) - leads payments\n", b"- [Role](role.md) - leads payments\n- [Onboarding](onboarding.md) - day one\n- [Prefs](prefs.md) - short answers\n")
    drop = _edit(INDEX, b"- [Errors](errors.md) - the error envelope\n", b"")
    assert _placed("MEMORY.md", INDEX, drop, first) == _edit(first, b"- [Errors](errors.md) - the error envelope\n", b"")


def test_an_entry_an_earlier_apply_reworded_is_still_removed():
    """An entry whose hook an earlier apply shortened is still the entry's line: removing the entry removes it."""
    first = _edit(INDEX, b"- [CI](ci.md) - where CI runs\n", b"- [CI](ci.md)\n")
    drop = _edit(INDEX, b"- [CI](ci.md) - where CI runs\n", b"")
    assert _placed("MEMORY.md", INDEX, drop, first) == _edit(first, b"- [CI](ci.md)\n", b"")


def test_an_entry_an_earlier_apply_removed_refuses_with_the_reason():
    """Rewording an entry that an earlier apply removed is refused, naming the entry."""
    first = _edit(INDEX, b"- [Deploy](deploy.md) - how a release goes out\n", b"")
    repoint = _edit(INDEX, b"(deploy.md)", b"(ops/deploy.md)")
    with pytest.raises(StaleError, match=r"^its entry for deploy\.md is no longer in MEMORY\.md as it was$"):
        _placed("MEMORY.md", INDEX, repoint, first)


def test_a_new_entry_whose_section_is_gone_refuses_with_the_reason():
    """An entry shown under '## Project' is refused when the index has no '## Project' any more."""
    first = _edit(INDEX, b"## Project\n\n", b"")
    add = _edit(INDEX, b"- [Deploy](deploy.md) - how a release goes out\n", b"- [Deploy](deploy.md) - how a release goes out\n- [Cache](cache.md) - cdn\n")
    with pytest.raises(StaleError, match=r"^the section '## Project', where it adds '- \[Cache\]\(cache\.md\) - cdn', is no longer there$"):
        _placed("MEMORY.md", INDEX, add, first)


def test_an_entry_the_index_holds_already_in_its_section_is_not_added_twice():
    """An entry an earlier apply added with the same words to the same section stays once."""
    line = b"- [Cache](cache.md) - cdn\n"
    add = _edit(INDEX, b"- [Deploy](deploy.md) - how a release goes out\n", b"- [Deploy](deploy.md) - how a release goes out\n" + line)
    assert _placed("MEMORY.md", INDEX, add, add) == add


def test_an_entry_the_index_lists_in_another_section_refuses_with_the_reason():
    """An entry another apply put under another section is not listed twice: the edit is refused, saying where it is."""
    first = _edit(INDEX, b"- [Role](role.md) - leads payments\n", b"- [Role](role.md) - leads payments\n- [Cache](cache.md) - cdn\n")
    add = _edit(INDEX, b"- [Deploy](deploy.md) - how a release goes out\n", b"- [Deploy](deploy.md) - how a release goes out\n- [Cache](cache.md) - cdn\n")
    with pytest.raises(StaleError, match=r"^MEMORY\.md lists cache\.md already \(under '## User'\), as earlier applies left it$"):
        _placed("MEMORY.md", INDEX, add, first)


def test_an_index_loaded_whole_is_not_pushed_past_what_its_agent_loads():
    """An added entry that fit alone but not after what earlier applies added is refused: the agent would no longer load the whole index."""
    spec = IndexSpec("MEMORY.md", LINKS, limit=LoadLimit(lines=23), sections=BY_TYPE)
    first = INDEX + b"- [A](a.md) - a\n"
    add = INDEX + b"- [B](b.md) - b\n"
    assert spec.limit.fits(add.decode()) and spec.limit.fits(first.decode())
    with pytest.raises(StaleError, match=r"would pass what its agent loads \(23 lines\)$"):
        _placed("MEMORY.md", INDEX, add, first, spec)


TASKS = b"""# Tasks Index

## In Progress
- [TASK003] Rate limiting - in review

## Pending
- [TASK007] CSV export - waiting

## Completed
- [TASK001] Setup - done
"""


def test_a_task_lands_under_the_status_its_diff_showed_it_in():
    """Cline: a task added under '## Completed' lands there after another apply added one under '## Pending' and removed one above."""
    spec = IndexSpec("tasks/_index.md", CLINE_TASKS, sections=BY_STATUS)
    first = _edit(TASKS, b"- [TASK003] Rate limiting - in review\n", b"") + b""
    first = _edit(first, b"- [TASK007] CSV export - waiting\n", b"- [TASK007] CSV export - waiting\n- [TASK008] Key rotation - ops window\n")
    done = b"- [TASK013] Audit log - done\n"
    placed = _placed("tasks/_index.md", TASKS, TASKS + done, first, spec)
    assert placed == first + done
    assert _section_of(placed, done) == b"## Completed"


NOTE = b"""# Core

- Auth: `mem:auth/login` and `mem:auth/login_copy`, sessions in `mem:auth/session_notes`.
- Deploys: `mem:deploy/steps_old`.
"""


def test_two_link_rewrites_in_one_line_of_a_note_both_land():
    """Two merges rewriting different links of one line of a note: the second is placed on the first's line, both rewrites kept."""
    first = _edit(NOTE, b"`mem:auth/login_copy`", b"`mem:auth/login`")
    second = _edit(NOTE, b"`mem:auth/session_notes`", b"`mem:auth/session`")
    placed = _placed("core.md", NOTE, second, first, None)
    assert placed == _edit(first, b"`mem:auth/session_notes`", b"`mem:auth/session`")


def test_a_link_rewrite_lands_on_its_line_after_an_earlier_apply_added_lines():
    """A rewrite finds its line by its bytes when an earlier apply put lines above it."""
    first = _edit(NOTE, b"# Core\n", b"# Core\n\nMerged: the shop's backend notes.\nMore of them.\n")
    second = _edit(NOTE, b"`mem:deploy/steps_old`", b"`mem:deploy/steps`")
    assert _placed("core.md", NOTE, second, first, None) == _edit(first, b"`mem:deploy/steps_old`", b"`mem:deploy/steps`")


def test_rewrites_of_the_same_words_refuse_with_the_reason():
    """Two edits of the same words of one line cannot both hold: the second is refused, quoting the line."""
    first = _edit(NOTE, b"`mem:auth/login_copy`", b"`mem:auth/login_v1`")
    second = _edit(NOTE, b"`mem:auth/login_copy`", b"`mem:auth/login`")
    with pytest.raises(StaleError, match=r"^the words it changes in '- Auth: `mem:auth/login` and `mem:auth/login_copy`, sessi\.\.\.' were changed since$"):
        _placed("core.md", NOTE, second, first, None)


def test_a_line_changed_with_its_neighbours_refuses_with_the_reason():
    """A rewrite whose line and the lines around it all changed cannot be placed: refused, quoting the line."""
    first = b"# Core, rewritten\n\nNothing of the old text.\n"
    second = _edit(NOTE, b"`mem:deploy/steps_old`", b"`mem:deploy/steps`")
    with pytest.raises(StaleError, match=r"^the line '- Deploys: `mem:deploy/steps_old`\.' was changed since, and the lines around it too$"):
        _placed("core.md", NOTE, second, first, None)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        (b"see a and b\n", b"see A and b\n", b"see a and B\n", b"see A and B\n"),
        (b"see a and b\n", b"see A and b\n", b"see A and b\n", b"see A and b\n"),
        (b"[[x-copy]] and [[y-old]]\n", b"[[x]] and [[y-old]]\n", b"[[x-copy]] and [[y]]\n", b"[[x]] and [[y]]\n"),
        (b"see a and b\n", b"see A and b\n", b"see c and b\n", None),
        (b"tail", b"tail\n", b"tail\n", b"tail\n"),
    ],
    ids=["different words", "the same change", "wiki links", "same word", "a line end added by both"],
)
def test_merge_line_keeps_both_changes_or_says_they_overlap(base, ours, theirs, merged):
    """Two rewordings of one line merge word by word when they change different words (or alike), else None."""
    assert merge_line(base, ours, theirs) == merged


def _files(**paths: tuple[bytes | None, bytes | None]) -> tuple[dict[str, tuple[str | None, str | None]], dict[str, bytes]]:
    files, data = {}, {}
    for name, (before, after) in paths.items():
        path = name.replace("__", "/").replace("_md", ".md")
        files[path] = (hash_bytes(before) if before is not None else None, hash_bytes(after) if after is not None else None)
        data |= {hash_bytes(b): b for b in (before, after) if b is not None}
    return files, data


def test_shared_edits_are_the_index_and_notes_the_proposal_only_rewords():
    """Of a merge's files, the index and a referring note are small edits; the survivor it names, the retired note, its archive copy and a note it only reads are not."""
    files, data = _files(
        MEMORY_md=(b"- [a](a.md)\n- [b](b.md)\n", b"- [a](a.md)\n"),
        a_md=(b"---\nname: a\n---\nA.\n", b"---\nname: a\nmerged_from: [b.md]\n---\nA.\n"),
        b_md=(b"A.\n", None),
        archive__b_md=(None, b"---\nstatus: superseded\nsuperseded_by: a.md\n---\nA.\n"),
        c_md=(b"See [[b]].\n", b"See [[a]].\n"),
        d_md=(b"D.\n", b"D.\n"),
    )
    assert shared(files, data, "MEMORY.md") == {"MEMORY.md", "c.md"}


def test_a_note_retired_in_place_is_not_a_shared_edit():
    """A note marked retired where it is (retire_mode in-place), and the survivor it names, are the proposal's own."""
    files, data = _files(
        a_md=(b"A.\n", b"A.\nB.\n"),
        b_md=(b"B.\n", b"---\nstatus: superseded\nsuperseded_by: a.md\n---\nB.\n"),
        c_md=(b"See [b](b.md).\n", b"See [b](a.md).\n"),
    )
    assert shared(files, data, None) == {"c.md"}
