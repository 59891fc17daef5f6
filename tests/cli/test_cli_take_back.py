"""Decisions taken back from the command line: ``unaccept`` and ``unreject`` are events and
decisions that ``show`` lists."""

from __future__ import annotations

import getpass
import json

import pytest

ME = f"human:{getpass.getuser()}"


@pytest.fixture
def ids(example_store, cli):
    """A CLI pass over the example store; {retired or merged notes: proposal id}."""
    done = cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0, done.err
    return {tuple(sorted(p for p in i["paths"] if not p.startswith(".") and p != "MEMORY.md")): i["id"] for i in json.loads(done.out)["proposals"]}


MERGE = ("build-commands-copy.md", "build-commands.md")


def _shown(cli, pid):
    return json.loads(cli("show", str(pid), "--json").out)


def test_unaccept_makes_an_accepted_proposal_pending_with_an_event_by_whoever_ran_it(ids, cli):
    """``unaccept ID --reason`` prints ``#N pending``; the log has a proposal.unaccepted event by the user, with the reason."""
    pid = ids[MERGE]
    cli("accept", str(pid))
    done = cli("unaccept", str(pid), "--reason", "not yet")
    assert (done.code, done.out, done.err) == (0, f"#{pid} pending\n", "")
    shown = _shown(cli, pid)
    assert (shown["state"], shown["state_reason"]) == ("pending", "not yet")
    (event,) = [e for e in json.loads(cli("log", "--json").out) if e["type"] == "proposal.unaccepted"]
    assert (event["proposal_id"], event["actor"], event["surface"], event["payload"]["reason"]) == (pid, ME, "cli", "not yet")


def test_an_unaccepted_proposal_is_not_applied(ids, cli, example_store, read_tree):
    """After ``unaccept``, ``apply`` finds nothing accepted and writes nothing."""
    before = read_tree(example_store)
    cli("accept", str(ids[MERGE]))
    cli("unaccept", str(ids[MERGE]))
    assert cli("apply").out == "nothing accepted to apply\n"
    assert read_tree(example_store) == before


def test_unaccept_of_a_pending_proposal_exits_5_with_one_line(ids, cli):
    """Nothing to take back: exit 5, one line, the proposal stays pending with no decision."""
    pid = ids[MERGE]
    done = cli("unaccept", str(pid))
    assert (done.code, done.err) == (5, f"error[proposal]: proposal {pid} is pending, not accepted; nothing to take back\n")
    assert _shown(cli, pid)["decisions"] == []


def test_unaccept_of_an_applied_proposal_points_at_revert(ids, cli):
    """An applied proposal cannot be unaccepted; the one line says ``dreamd revert N`` undoes it."""
    pid = ids[MERGE]
    cli("accept", str(pid))
    cli("apply", str(pid))
    done = cli("unaccept", str(pid))
    assert (done.code, done.err) == (5, f"error[proposal]: proposal {pid} is applied, not accepted; nothing to take back (it is applied: dreamd revert {pid} undoes it)\n")


def test_show_lists_unrejects_and_unaccepts_among_the_decisions(ids, cli):
    """``show`` prints every decision in order, the ones taken back too, with who and why."""
    pid = ids[MERGE]
    for args in (("reject", "--reason", "no"), ("unreject", "--reason", "on second thought"), ("accept",), ("unaccept",)):
        assert cli(args[0], str(pid), *args[1:]).code == 0
    lines = [line for line in cli("show", str(pid)).out.splitlines() if line.startswith("  ") and " by human:" in line]
    assert [line.split(" by ")[0].strip() for line in lines] == ["rejected", "unrejected", "accepted", "unaccepted"]
    assert lines[1].endswith(": on second thought")
    assert [(d["decision"], d["actor"], d["reason"]) for d in _shown(cli, pid)["decisions"]] == [
        ("reject", ME, "no"), ("unreject", ME, "on second thought"), ("accept", ME, None), ("unaccept", ME, None)]  # fmt: skip
