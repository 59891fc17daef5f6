"""Time caps: a note that takes too long to read is left out of planning and never changed; a
pass past its time stops planning, keeps what it found, is recorded partial, and the next
pass goes on."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from daemon.config import Config, Limits, adhoc_store, parse_config
from daemon.core.errors import ConfigError
from daemon.core.notes import Note
from daemon.core.view import StoreView
from daemon.db import repo
from daemon.service.passes import proposing
from daemon.service.passes.run import run_pass
from daemon.service.proposals import list_proposals
from daemon.service.passes.timecaps import Caps, read_notes

# Reading this note (frontmatter, body, normalised text, title, description) takes tens of
# milliseconds: far over a cap of 2 ms, while a small note reads in tens of microseconds.
SLOW_BODY = "```\n" * 225_000
SLOW_CAP = Limits(note_seconds=0.002)
DUPLICATE = "The staging database is rebuilt every night at 02:00 from the production backup.\n"


def _config(limits: Limits) -> Config:
    return Config(limits=limits)


def _merges(report) -> list[tuple[str, tuple[str, ...], str]]:  # noqa: ANN001
    return [(o.planned.draft.kind, o.planned.draft.notes, o.state) for o in report.outcomes if o.planned.draft.kind == "merge"]


def test_a_timer_interrupts_work_that_runs_past_its_cap():
    """Endless work in the main thread is cut off at its cap, and the caller is told it did not finish."""
    caps = Caps(note_seconds=0.05, pass_seconds=60)
    started = time.monotonic()
    with caps.timing():
        done, value = caps.run(lambda: next(i for i in itertools.count() if i < 0), 0.05)
    assert (done, value) == (False, None)
    assert time.monotonic() - started < 5


def test_a_timer_that_rings_after_the_work_ended_changes_nothing():
    """Work that ends in time returns its value, and no late signal is raised afterwards."""
    caps = Caps(note_seconds=0.01, pass_seconds=60)
    with caps.timing():
        assert caps.run(lambda: 41 + 1, 0.01) == (True, 42)
        time.sleep(0.05)  # past the cap: a timer left running would raise here
    assert caps.capped_at is None


def test_outside_the_main_thread_work_is_measured_and_a_slow_note_still_left_unread():
    """Without signals, a note whose reading the clock says took over its cap is left unread all the same."""
    ticks = itertools.count(0.0, 1.0)  # every clock reading is a second after the last
    caps = Caps(note_seconds=0.5, pass_seconds=1_000_000, clock=lambda: next(ticks))
    view = StoreView(notes={"a.md": Note("a.md", b"# A\n", "ha")})
    result: list = []
    worker = threading.Thread(target=lambda: result.append(read_notes(view, caps)))
    worker.start()
    worker.join()
    new_view, unread = result[0]
    assert unread == ["a.md"] and new_view.notes["a.md"].unread == "reading it took over 0.5 s"


def test_a_note_left_unread_is_pinned_and_shows_no_content():
    """A note left unread has no frontmatter, body or links to plan on, and counts as pinned."""
    note = Note("a.md", b"---\nname: A\n---\nsee [b](b.md)\n", "ha").left_unread("reading it took over 1 s")
    view = StoreView(notes={"a.md": note, "b.md": Note("b.md", b"# B\n", "hb")})
    assert (note.meta, note.body, note.lines, note.pinned) == ({}, "", [], True)
    assert view.references_in(note) == [] and [n.path for n in view.live_notes()] == ["b.md"]
    assert note.data == b"---\nname: A\n---\nsee [b](b.md)\n" and note.hash == "ha"


def test_slow_notes_are_reported_and_never_merged(make_store, make_app, read_tree):
    """Two identical notes too slow to read are reported time-cap and not merged; with the default cap they are."""
    files = {"MEMORY.md": "# Memory\n", "slow-a.md": SLOW_BODY, "slow-b.md": SLOW_BODY, "ports.md": "The API listens on 8080.\n"}
    capped_root = make_store(files, name="capped")
    report = run_pass(make_app(_config(SLOW_CAP)), adhoc_store(capped_root, "deepcode"))
    assert report.status == "completed"
    assert [(s.path, s.reason) for s in report.skipped_files] == [("slow-a.md", "time-cap"), ("slow-b.md", "time-cap")]
    assert _merges(report) == []
    assert read_tree(capped_root) == {k: v.encode() for k, v in files.items()}
    control = run_pass(make_app(), adhoc_store(make_store(files, name="control"), "deepcode"))
    assert _merges(control) == [("merge", ("slow-a.md", "slow-b.md"), "pending")]


def test_a_note_named_by_an_unread_note_is_not_retired(make_store, make_app):
    """A merge that would retire a note an unread note may link to is refused, and says which note."""
    files = {
        "MEMORY.md": "# Memory\n",
        "staging-rebuild.md": DUPLICATE, "nightly-staging.md": DUPLICATE,
        "slow.md": "See [rebuild](staging-rebuild.md) and [nightly](nightly-staging.md).\n" + SLOW_BODY,
    }  # fmt: skip
    report = run_pass(make_app(_config(SLOW_CAP)), adhoc_store(make_store(files), "deepcode"))
    merges = [o for o in report.outcomes if o.planned.draft.kind == "merge"]
    assert [(o.state, o.note) for o in merges] == [("refused", "slow.md could not be read in time and may link to staging-rebuild.md")]


def test_a_pass_out_of_time_is_partial_and_the_next_pass_goes_on(make_store, make_app, monkeypatch):
    """Out of time, a pass keeps the proposals it made, is recorded partial, and a later pass proposes the rest once each."""
    pairs = 200
    files = {"MEMORY.md": "# Memory\n"}
    for i in range(pairs):
        body = f"Fact number {i}: the cache for service {i} expires after {i + 5} minutes.\n"
        files[f"fact-{i:03}-a.md"] = files[f"fact-{i:03}-b.md"] = body
    root = make_store(files)
    building = proposing.make_proposals

    def slowly(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - 20 ms a proposal: past the cap on any machine, however fast
        for item in building(*args, **kwargs):
            time.sleep(0.02)
            yield item

    monkeypatch.setattr(proposing, "make_proposals", slowly)
    app = make_app(_config(Limits(pass_seconds=1.0)))
    first = run_pass(app, adhoc_store(root, "deepcode"))
    monkeypatch.undo()
    assert first.status == "partial" and first.capped is not None and first.stats["capped"] == first.capped
    assert "(partial: out of time while " in first.summary("pass #1")
    made = len(_merges(first))
    assert 0 < made < pairs
    with app.engine().connect() as conn:
        store_id = repo.find_store(conn, str(root)).id
        assert repo.passes(conn, store_id)[0].status == "partial"
    second = run_pass(make_app(), adhoc_store(root, "deepcode"))
    assert second.status == "completed"
    assert len([m for m in _merges(second) if m[2] == "pending"]) == pairs - made
    assert len([p for p in list_proposals(make_app()) if p.kind == "merge" and p.state == "pending"]) == pairs


def test_a_dry_run_out_of_time_says_so_and_records_nothing(make_store, make_app, db_path):
    """A dry run past its time reports where it stopped, and creates no database."""
    files = {"MEMORY.md": "# Memory\n", "a.md": DUPLICATE, "b.md": DUPLICATE}
    report = run_pass(make_app(_config(Limits(pass_seconds=1e-9))), adhoc_store(make_store(files), "deepcode"), dry_run=True)
    assert report.status == "dry-run" and report.capped == "reading notes" and report.outcomes == []
    assert report.stats["capped"] == "reading notes"
    assert not db_path.exists()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("note_seconds = -1", "limits.note_seconds must be a number of seconds in (0, 86400]"),
        ("pass_seconds = true", "limits.pass_seconds must be a number of seconds in (0, 86400]"),
        ("minutes = 3", "limits: unknown key 'minutes' (allowed: note_seconds, pass_seconds)"),
    ],
)
def test_bad_limits_are_one_config_error(table, message):
    """A bad [limits] table is a ConfigError naming the key."""
    import tomllib

    with pytest.raises(ConfigError) as caught:
        parse_config(tomllib.loads(f"[limits]\n{table}\n"))
    assert caught.value.one_line() == f"error[config]: config: {message}"


def test_limits_are_read_from_the_config():
    """[limits] sets both caps."""
    import tomllib

    config = parse_config(tomllib.loads("[limits]\nnote_seconds = 2\npass_seconds = 60\n"))
    assert config.limits == Limits(note_seconds=2.0, pass_seconds=60.0)


def test_changing_a_limit_does_not_replan_an_unchanged_store(make_store, make_app):
    """Limits are not part of the planner's fingerprint: an unchanged store is skipped under new limits."""
    root = make_store({"MEMORY.md": "# Memory\n", "a.md": DUPLICATE})
    assert run_pass(make_app(), adhoc_store(root, "deepcode")).status == "completed"
    assert run_pass(make_app(_config(Limits(note_seconds=3, pass_seconds=30))), adhoc_store(root, "deepcode")).status == "skipped"
