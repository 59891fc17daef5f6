"""Which note of a duplicate group survives, and the reason the rationale gives."""

from __future__ import annotations

import dataclasses
import datetime as dt

from daemon.core.index import IndexSpec
from daemon.core.reader import MEM, WIKI
from daemon.planners.survivor import choose
from .factory import memory_index, note, view

T = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
BODY = "# Ports\nThe API listens on 8080.\n"


def _choice(*notes, **kw):  # noqa: ANN002, ANN003, ANN202
    store = view(*notes, **kw)
    return choose(store, [n for n in notes if not store.is_index(n.path)])


def test_the_note_other_notes_refer_to_survives_over_a_shorter_newer_copy():
    """A copy with a shorter path and a newer file time loses to the note two others cite."""
    cited = note("ports_full.md", BODY, mtime=T)
    copy = note("ports.md", BODY, mtime=T + dt.timedelta(days=3))
    a = note("a.md", "See [ports](ports_full.md).\n", mtime=T)
    b = note("b.md", "Ports: [[ports_full]]\n", mtime=T)
    store = dataclasses.replace(view(cited, copy, a, b), reader=view().reader._replace(links=("markdown", WIKI)))
    choice = choose(store, [cited, copy])
    assert choice.survivor.path == "ports_full.md"
    assert choice.why.startswith("it is the most referenced: 2 of the store's notes (index included) refer to it, against ports.md 0")


def test_an_index_entry_counts_as_a_reference():
    """The note the index lists survives over one it does not."""
    index, spec = memory_index("- [Ports](b.md) — where things listen")
    choice = _choice(index, note("a.md", BODY, mtime=T), note("b.md", BODY, mtime=T), index=spec)
    assert choice.survivor.path == "b.md" and "most referenced" in choice.why


def test_serena_mem_references_count():
    """Serena's `mem:NAME` references decide as markdown links do."""
    cited, copy = note("auth/login.md", BODY, mtime=T), note("auth/login_copy.md", BODY, mtime=T)
    core = note("core.md", "Read `mem:auth/login` first.\n")
    store = dataclasses.replace(view(cited, copy, core), reader=view().reader._replace(links=(MEM,)))
    assert choose(store, [cited, copy]).survivor.path == "auth/login.md"


def test_file_times_half_a_millisecond_apart_do_not_decide():
    """Copies made with cp differ by microseconds: the shortest path decides, and says so."""
    a = note("notes/ports.md", BODY, mtime=T)
    b = dataclasses.replace(note("notes/ports-copy.md", BODY), mtime_ns=a.mtime_ns + 500_000)
    choice = _choice(a, b)
    assert (choice.survivor.path, choice.why) == ("notes/ports.md", "its path is the shortest")


def test_a_file_time_that_leads_by_more_than_a_second_decides_and_says_what_it_is():
    """A newer file time decides only past one second, and the rationale says file times are weak evidence."""
    old, new = note("ports.md", BODY, mtime=T), note("ports-2026.md", BODY, mtime=T + dt.timedelta(hours=5))
    choice = _choice(old, new)
    assert choice.survivor.path == "ports-2026.md"
    assert choice.why == "it is the newest by file time, 5 hours newer (no frontmatter date decides; copies and checkouts reset file times)"


def test_a_frontmatter_date_beats_file_times():
    """A note's updated_at says when its content changed, whatever its file time says."""
    dated = note("a-long-name.md", "---\nupdated_at: 2026-02-01\n---\n" + BODY, mtime=T - dt.timedelta(days=30))
    newer_file = note("b.md", "---\nupdated_at: 2026-01-01\n---\n" + BODY, mtime=T)
    choice = _choice(dated, newer_file)
    assert choice.survivor.path == "a-long-name.md"
    assert choice.why == "its updated_at (2026-02-01) is the newest, against updated_at 2026-01-01"


def test_pinned_wins_over_everything():
    """A pinned note survives even when the other note is cited and newer."""
    pinned = note("zz.md", "---\npinned: true\n---\n" + BODY, mtime=T)
    other = note("a.md", BODY, mtime=T + dt.timedelta(days=9))
    index, spec = memory_index("- [A](a.md)")
    choice = _choice(index, pinned, other, index=spec)
    assert (choice.survivor.path, choice.why) == ("zz.md", "it is pinned")


def test_nothing_to_retire_is_no_choice():
    """When every other note is pinned or a core file, there is no merge to propose."""
    a = note("a.md", "---\npinned: true\n---\n" + BODY)
    b = note("b.md", "---\npinned: true\n---\n" + BODY)
    assert _choice(a, b) is None
    assert _choice(note("progress.md", BODY), note("x.md", BODY), protected=("progress.md", "x.md")) is None


def test_cline_task_ids_count_as_references():
    """A task the index and a core file cite by id survives its copy."""
    spec = IndexSpec("tasks/_index.md", "cline-tasks")
    index = note("tasks/_index.md", "# Tasks\n## Pending\n- [TASK002] Search\n")
    a = note("tasks/TASK002-search.md", BODY, mtime=T)
    b = note("tasks/TASK002-search-copy.md", BODY, mtime=T)
    assert _choice(index, a, b, index=spec).survivor.path == "tasks/TASK002-search.md"
