"""The no-op lane on the daemon's word (``Unchanged``: its watches saw no change since a pass
saw this root hash): the skip it records is the whole pass's, it lists no folder and opens no
file of the store, and every other condition of a skip still holds."""

from __future__ import annotations

import sys

import pytest

from daemon.config import Config, StoreConfig, adhoc_store
from daemon.service.context import App
from daemon.service.passes import Unchanged, noop
from daemon.service.passes.run import run_pass

from .test_noop_lane import IN_THE_DATABASE, STORE, _change, _counts, _raw, _twin

_OPENED: list[tuple[str, object]] | None = None  # while a count runs: what the process listed and opened


def _audit(event: str, args: tuple) -> None:
    if _OPENED is not None and event in ("open", "os.scandir", "os.listdir"):
        _OPENED.append((event, args[0] if args else None))


sys.addaudithook(_audit)  # an audit hook cannot be removed: it counts only while _OPENED is a list


def _counted(work):  # noqa: ANN001, ANN202
    """What ``work()`` returned, and the folders it listed and files it opened (Python's audit events)."""
    global _OPENED
    _OPENED = []
    try:
        return work(), list(_OPENED)
    finally:
        _OPENED = None


@pytest.fixture
def store(make_store) -> StoreConfig:  # noqa: ANN001
    return adhoc_store(make_store(STORE), "deepcode")


def _word(app, store: StoreConfig) -> Unchanged:  # noqa: ANN001
    """What a pass saw, as the worker hands it to the daemon."""
    return Unchanged.of(run_pass(app, store))


def test_a_skip_on_the_watches_word_lists_no_folder_and_opens_no_file(store, make_app, db_path, clock):
    """The lane told the store is unchanged makes no walk: no folder listed, no file opened
    (where the same lane without that word lists the store's folder)."""
    word = _word(make_app(), store)
    clock.advance(hours=1)
    report, opened = _counted(lambda: noop.skip_if_unchanged(make_app(), store, word))
    assert report.status == "skipped" and opened == []
    _, walked = _counted(lambda: noop.skip_if_unchanged(make_app(), store))
    assert any(event == "os.scandir" for event, _ in walked)


def test_a_skip_on_the_watches_word_writes_the_rows_the_whole_pass_writes(store, make_app, db_path, tmp_path, clock):
    """Twin databases, one skipped by the whole pass, one by the lane on the watches' word: the
    pass and event rows are the same, byte for byte."""
    word = _word(make_app(), store)
    twin = tmp_path / "twin.db"
    _twin(db_path, twin)
    clock.advance(hours=1)
    whole = run_pass(make_app(), store)
    lane = noop.skip_if_unchanged(App(config=Config(), db_url=f"sqlite:///{twin}", clock=clock), store, word)
    assert whole.status == lane.status == "skipped" and (whole.pass_id, whole.notes, whole.stats) == (lane.pass_id, lane.notes, lane.stats)
    for table in ("passes", "events"):
        assert _raw(twin, f"SELECT * FROM {table} ORDER BY id") == _raw(db_path, f"SELECT * FROM {table} ORDER BY id")


def test_the_word_for_a_root_hash_no_completed_pass_recorded_is_not_taken(store, make_app, db_path, clock):
    """What an older pass saw (the store changed and was passed over since) is no skip: the lane
    walks the store, finds the change, and leaves the pass to the whole pass."""
    old = _word(make_app(), store)
    (store.root / "ports.md").write_text("---\nname: Ports\n---\nThe API listens on 9090.\n")
    clock.advance(hours=1)
    assert run_pass(make_app(), store).status == "completed"
    (store.root / "ports.md").write_text("---\nname: Ports\n---\nThe API listens on 8080.\n")
    clock.advance(hours=1)
    before = _counts(db_path)
    assert noop.skip_if_unchanged(make_app(), store, old) is None
    assert _counts(db_path) == before


@pytest.mark.parametrize("what", sorted(set(IN_THE_DATABASE) - {"racily clean rows"}))
def test_on_the_watches_word_the_lane_still_steps_aside_for_what_the_whole_pass_acts_on(what, store, make_app, db_path, clock):
    """A pass running or dead, a lease, a due time, a new planner, a replaced folder, another
    schema: the word of the watches skips none of them, and nothing is written."""
    word = _word(make_app(), store)
    _change(what, store.root, db_path)
    clock.advance(hours=1)
    before = _counts(db_path)
    assert noop.skip_if_unchanged(make_app(), store, word) is None
    assert _counts(db_path) == before


def test_the_word_travels_as_json_and_anything_else_is_no_word():
    """What the worker sends the daemon comes back as the same Unchanged; a malformed one is None (the store is walked)."""
    word = Unchanged("r", 3, (("big.md", "too-large"),))
    assert Unchanged.from_json(word.as_json()) == word
    for bad in ({}, {"root_hash": "r"}, {"root_hash": "r", "notes": "many", "skipped": []}, {"root_hash": "r", "notes": 1, "skipped": [1]}, "r", None):
        assert Unchanged.from_json(bad) is None
