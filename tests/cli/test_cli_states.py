"""The proposal state machine through ``dreamd``: only legal transitions, each error one line with exit code 5 (6 for stale)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def proposals(example_store, cli):
    """Run a CLI pass over a copy of the example store; returns {retired note: proposal id}."""
    done = cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    return {tuple(sorted(p for p in item["paths"] if not p.startswith(".") and p != "MEMORY.md")): item["id"] for item in report["proposals"]}


def _one_error_line(result, code, text):
    assert result.code == code
    assert result.err == text + "\n"
    assert "Traceback" not in result.out + result.err


def _state(cli, pid):
    return json.loads(cli("show", str(pid), "--json").out)["state"]


def test_accepting_twice_is_a_quiet_success_that_records_nothing_more(proposals, cli):
    """The second ``accept`` of a proposal says it is accepted already, exits 0, and adds no decision or event."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    assert cli("accept", str(pid)).out == f"#{pid} accepted\n"
    events = cli("log", "--json").out
    again = cli("accept", str(pid))
    assert (again.code, again.out, again.err) == (0, f"#{pid} already accepted\n", "")
    assert cli("log", "--json").out == events
    assert [d["decision"] for d in json.loads(cli("show", str(pid), "--json").out)["decisions"]] == ["accept"]


def test_a_batch_with_one_proposal_accepted_already_accepts_the_others(proposals, cli):
    """``accept A B`` with A accepted before accepts B and says A was accepted already, exit 0."""
    first, second = proposals[("build-commands-copy.md", "build-commands.md")], proposals[("release-plan-v1.md", "release-plan-v2.md")]
    cli("accept", str(first))
    done = cli("accept", str(first), str(second))
    assert (done.code, done.out) == (0, f"#{first} already accepted\n#{second} accepted\n")
    assert [_state(cli, first), _state(cli, second)] == ["accepted", "accepted"]


def test_rejecting_twice_keeps_the_first_reason_and_exits_0(proposals, cli):
    """A second ``reject`` of a rejected proposal is a quiet success: no second decision, the first reason stands."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    cli("reject", str(pid), "--reason", "keep both")
    assert cli("reject", str(pid), "--reason", "again").out == f"#{pid} already rejected\n"
    assert [(d["decision"], d["reason"]) for d in json.loads(cli("show", str(pid), "--json").out)["decisions"]] == [("reject", "keep both")]


def test_accepting_an_applied_proposal_is_still_refused(proposals, cli):
    """Only the same decision repeated is quiet: an applied proposal cannot be accepted (exit 5, one line)."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    cli("accept", str(pid))
    cli("apply", str(pid))
    _one_error_line(cli("accept", str(pid)), 5, f"error[proposal]: proposal {pid} is applied; it cannot become accepted (from applied it can become: reverted)")


def test_a_rejected_proposal_says_it_can_become_pending_through_unreject(proposals, cli):
    """Accepting a rejected proposal is refused with the command that takes the rejection back."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    cli("reject", str(pid), "--reason", "no")
    _one_error_line(cli("accept", str(pid)), 5, f"error[proposal]: proposal {pid} is rejected; it cannot become accepted (from rejected it can become: pending again through dreamd unreject {pid})")


def test_reject_needs_a_reason(proposals, cli):
    """``reject`` without --reason is a usage error (exit 2, one line) and leaves the proposal pending."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    _one_error_line(cli("reject", str(pid)), 2, "error[usage]: Missing option '--reason'. (see 'dreamd reject --help')")
    assert _state(cli, pid) == "pending"
    assert cli("reject", str(pid), "--reason", "keep both").out == f"#{pid} rejected\n"
    assert _state(cli, pid) == "rejected"


def test_applying_a_pending_proposal_is_refused_with_exit_5(proposals, cli, example_store, read_tree):
    """``apply`` of a proposal nobody accepted exits 5 with one line and writes nothing."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    before = read_tree(example_store)
    _one_error_line(cli("apply", str(pid)), 5, f"error[proposal]: proposal {pid} is pending; only accepted proposals are applied (dreamd accept {pid})")
    assert read_tree(example_store) == before


def test_applying_a_rejected_or_reverted_proposal_gives_advice_that_can_work(proposals, cli):
    """No "dreamd accept N" for a proposal that can no longer be accepted."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    cli("reject", str(pid), "--reason", "not now")
    _one_error_line(cli("apply", str(pid)), 5, f"error[proposal]: proposal {pid} is rejected; only accepted proposals are applied (dreamd unreject {pid}, then dreamd accept {pid})")
    cli("unreject", str(pid))
    cli("accept", str(pid))
    assert cli("apply", str(pid)).code == 0
    assert cli("revert", str(pid)).code == 0
    done = cli("apply", str(pid))
    assert done.code == 5 and "dreamd accept" not in done.err and "a later pass proposes the change again" in done.err


@pytest.mark.parametrize("command", [("show",), ("accept",), ("reject", "--reason", "x"), ("apply",), ("revert",)])
def test_unknown_proposal_id_exits_5_with_one_line(proposals, cli, command):
    """Every command that takes an id answers an unknown one with exit 5 and one line."""
    args = [command[0], "999", *command[1:]]
    _one_error_line(cli(*args), 5, "error[proposal]: no proposal #999 (dreamd proposals lists them)")


@pytest.mark.parametrize("accept_first", [False, True], ids=["pending", "accepted"])
def test_reverting_a_proposal_that_was_not_applied_exits_5(proposals, cli, accept_first):
    """``revert`` of a pending or an accepted proposal exits 5 and changes nothing."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    state = "pending"
    if accept_first:
        cli("accept", str(pid))
        state = "accepted"
    allowed = "accepted, rejected, stale" if state == "pending" else f"applied, rejected, stale, or pending again through dreamd unaccept {pid}"
    _one_error_line(cli("revert", str(pid)), 5, f"error[proposal]: proposal {pid} is {state}; it cannot become reverted (from {state} it can become: {allowed})")
    assert _state(cli, pid) == state


def test_only_legal_transitions_through_a_full_life(proposals, cli):
    """pending -> accepted -> applied -> reverted works (an accept repeated is quiet); every other move on the way is refused with exit 5."""
    pid = str(proposals[("build-commands-copy.md", "build-commands.md")])
    steps = [
        (("revert", pid), 5), (("accept", pid), 0), (("accept", pid), 0), (("apply", pid), 0),
        (("accept", pid), 5), (("reject", pid, "--reason", "late"), 5), (("apply", pid), 5),
        (("revert", pid), 0), (("revert", pid), 5), (("accept", pid), 5), (("apply", pid), 5),
    ]  # fmt: skip
    codes = [cli(*args).code for args, _ in steps]
    assert codes == [code for _, code in steps]
    assert _state(cli, pid) == "reverted"


def test_accepted_proposal_can_still_be_rejected_and_then_never_applied(proposals, cli):
    """accepted -> rejected is legal; a rejected proposal can be neither accepted nor applied."""
    pid = str(proposals[("release-plan-v1.md", "release-plan-v2.md")])
    assert [cli("accept", pid).code, cli("reject", pid, "--reason", "changed my mind").code] == [0, 0]
    assert [cli("accept", pid).code, cli("apply", pid).code] == [5, 5]
    assert _state(cli, pid) == "rejected"


def test_note_edited_after_accept_makes_cli_apply_exit_6_and_write_nothing(proposals, cli, example_store, read_tree):
    """Editing the retired note between accept and apply: exit 6, the proposal is stale, and every byte is as edited."""
    pid = proposals[("build-commands-copy.md", "build-commands.md")]
    cli("accept", str(pid))
    with open(example_store / "build-commands-copy.md", "a") as f:
        f.write("Also `make lint`.\n")
    edited = read_tree(example_store)
    result = cli("apply", str(pid))
    assert result.code == 6
    assert result.out == f"#{pid} stale: changed since proposed: build-commands-copy.md\n"
    assert result.err == f"error[stale]: 1 proposal(s) went stale and were not applied: #{pid} (dreamd pass {example_store} proposes the change again if it is still wanted)\n"
    assert _state(cli, pid) == "stale"
    assert read_tree(example_store) == edited
