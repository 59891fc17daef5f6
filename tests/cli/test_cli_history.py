"""``dreamd history --as-of`` (record time) and ``dreamd log --json`` (who did what, in order)."""

from __future__ import annotations

import getpass
import json
import re

import pytest

from daemon.config import adhoc_store
from daemon.core.hashing import hash_bytes
from daemon.service.apply.applying import apply
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide

HUMAN = f"human:{getpass.getuser()}"


def _manifest(root):
    return {str(p.relative_to(root)): hash_bytes(p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()}


def test_history_as_of_lists_the_files_recorded_before_and_after_an_apply(example_store, make_app, clock, cli, db_url):
    """``--as-of`` a time between pass and apply lists the original files; a time after the apply lists the new ones; before any pass, none."""
    store = adhoc_store(example_store, "deepcode")
    app = make_app()
    before = _manifest(example_store)
    pass_time = clock()
    report = run_pass(app, store)
    pid = report.outcomes[0].id
    decide(app, pid, "accept")
    apply_time = clock.advance(hours=1)
    apply(app, [pid])
    after = _manifest(example_store)
    assert after != before

    def as_of(moment: str):
        done = cli("--db", db_url, "history", str(example_store), "--as-of", moment, "--json")
        assert done.code == 0, done.err
        return json.loads(done.out)["as_of"]

    earlier = as_of((pass_time.replace(minute=30)).isoformat())
    assert earlier["files"] == before
    later = as_of(apply_time.isoformat().replace("+00:00", "Z"))
    assert later["files"] == after
    assert as_of("2020-01-01T00:00:00Z") == {"time": "2020-01-01T00:00:00+00:00", "snapshot": None, "files": {}}


def test_history_as_of_text_output_lists_paths_with_short_hashes(example_store, make_app, clock, cli, db_url):
    """The plain ``history --as-of`` output ends with one ``hash  path`` line per recorded file."""
    run_pass(make_app(), adhoc_store(example_store, "deepcode"))
    done = cli("--db", db_url, "history", "--store", str(example_store), "--preset", "deepcode", "--as-of", clock().isoformat())
    assert done.code == 0
    tail = done.out.split(f"as of {clock().isoformat()}:\n", 1)[1].splitlines()
    manifest = _manifest(example_store)
    assert tail == [f"  {manifest[p][:12]}  {p}" for p in sorted(manifest)]


def test_history_rejects_a_time_that_is_not_iso(example_store, cli):
    """``--as-of yesterday`` is a one-line config error with exit 2."""
    done = cli("history", "--store", str(example_store), "--preset", "deepcode", "--as-of", "yesterday")
    assert (done.code, done.err) == (2, "error[config]: --as-of 'yesterday' is not an ISO time (e.g. 2026-11-30T12:00:00Z)\n")


def test_log_json_names_humans_for_decisions_and_detectors_for_proposals(example_store, make_store, cli):
    """``log --json``: decisions by human:<user>, proposals by detector:<name>@<v>, and seq 1, 2, 3... within each store."""
    other = make_store({"a.md": "same words\n", "b.md": "Same  words\n"}, name="other")
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    assert cli("pass", "--store", str(other), "--preset", "generic").code == 0
    assert cli("accept", "1").code == 0
    assert cli("reject", "2", "--reason", "keep the copy").code == 0
    assert cli("apply", "1").code == 0
    events = json.loads(cli("log", "--json").out)
    for store in (str(example_store), str(other)):
        seqs = [e["seq"] for e in events if e["store"] == store]
        assert seqs == list(range(1, len(seqs) + 1)), store
    by_proposal = {}
    for e in events:
        if e["proposal_id"] is not None:
            by_proposal.setdefault(e["proposal_id"], []).append((e["type"], e["actor"], e["surface"]))
    assert by_proposal[1] == [("proposal.pending", "detector:exact-duplicate@5", "cli"), ("proposal.accepted", HUMAN, "cli"), ("proposal.applied", HUMAN, "cli")]
    assert by_proposal[2] == [("proposal.pending", "detector:exact-duplicate@5", "cli"), ("proposal.rejected", HUMAN, "cli")]
    assert all(re.fullmatch(r"detector:[a-z-]+@\d+", e["actor"]) for e in events if e["type"] == "proposal.pending")
    assert [e["type"] for e in events if e["store"] == str(other)] == ["proposal.pending", "pass.completed"]


def test_log_limited_to_one_store(example_store, make_store, cli):
    """``dreamd log STORE --json`` shows only that store's events."""
    other = make_store({"a.md": "x\n"}, name="other")
    cli("pass", "--store", str(example_store), "--preset", "deepcode")
    cli("pass", "--store", str(other), "--preset", "generic")
    events = json.loads(cli("log", str(other), "--json").out)
    assert {e["store"] for e in events} == {str(other)}
    assert [e["type"] for e in events] == ["pass.completed"]


def test_a_store_passed_by_path_can_be_named_by_a_relative_path_later(example_store, cli, monkeypatch):
    """After ``pass --store PATH --preset deepcode``, ``verify RELATIVE`` and ``verify --store RELATIVE`` find it with its preset."""
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    monkeypatch.chdir(example_store.parent)
    by_name = cli("verify", example_store.name)
    by_path = cli("verify", "--store", example_store.name)
    assert (by_name.code, by_name.out) == (0, f"{example_store}: clean\n")
    assert (by_path.code, by_path.out) == (0, f"{example_store}: clean\n")


@pytest.mark.parametrize(("limit", "said"), [
    ("99999999999999999999", "99999999999999999999 is not in the range 1<=x<=1000000"),
    ("-1", "-1 is not in the range 1<=x<=1000000"),
    ("0", "0 is not in the range 1<=x<=1000000"),
    ("ten", "'ten' is not a valid integer range"),
])  # fmt: skip
def test_a_log_limit_that_is_no_count_of_events_is_one_usage_line(example_store, cli, limit, said):
    """``log --limit`` takes 1 to 1,000,000 events: a number past what the database can count
    (it was error[internal]), a negative one or zero (accepted before) is one line, exit 2."""
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    done = cli("log", "--limit", limit)
    assert (done.code, done.out, done.err) == (2, "", f"error[usage]: Invalid value for '--limit': {said}. (see 'dreamd log --help')\n")
