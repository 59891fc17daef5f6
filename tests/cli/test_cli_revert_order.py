"""A revert refused because later applies of dreamd wrote over its files names the order
of reverts that works: ``dreamd revert --pass N``, or the later proposals first."""

from __future__ import annotations

import json

import pytest

EXPIRE = ("sprint-status.md",)
SUPERSEDE = ("release-plan-v1.md", "release-plan-v2.md")


@pytest.fixture
def ids(example_store, cli):
    """A CLI pass over the example store; {retired or merged notes: proposal id}."""
    done = cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0, done.err
    return {tuple(sorted(p for p in i["paths"] if not p.startswith(".") and p != "MEMORY.md")): i["id"] for i in json.loads(done.out)["proposals"]}


def test_reverting_an_apply_a_later_apply_of_its_pass_wrote_over_points_to_revert_pass(ids, cli, example_store, read_tree):
    """Two applies of one pass both edit the index: reverting the first alone is refused (exit 6,
    nothing written) with ``dreamd revert --pass N``, which then reverts both."""
    before = read_tree(example_store)
    first, second = ids[EXPIRE], ids[SUPERSEDE]
    cli("accept", str(first), str(second))
    assert cli("apply").code == 0
    applied = read_tree(example_store)
    done = cli("revert", str(first))
    assert (done.code, done.out) == (6, "")
    assert done.err == (f"error[conflict]: proposal {first} cannot be reverted: changed since it was applied: MEMORY.md "
                        f"(#{second}, applied later in the same pass, wrote it since: dreamd revert --pass 1 reverts the pass's applies newest first)\n")  # fmt: skip
    assert read_tree(example_store) == applied
    assert cli("revert", "--pass", "1").out == f"#{second} reverted\n#{first} reverted\n"
    assert read_tree(example_store) == before


def test_a_revert_refused_for_an_edit_by_someone_names_no_order_of_reverts(ids, cli, example_store):
    """When the index holds an edit no dreamd apply wrote, the refusal keeps its advice to look at the change by hand."""
    first, second = ids[EXPIRE], ids[SUPERSEDE]
    cli("accept", str(first), str(second))
    cli("apply")
    with open(example_store / "MEMORY.md", "a") as index:
        index.write("A line the agent wrote.\n")
    done = cli("revert", str(first))
    assert done.code == 6 and "revert --pass" not in done.err and f"dreamd show {first} shows exactly what it changed" in done.err


def test_a_later_apply_of_another_pass_is_named_to_revert_first(ids, cli, example_store, read_tree):
    """A reindex of a later pass applied over the same index: the refusal names that proposal
    to revert first, and reverting in that order gives back the index as it was."""
    before = read_tree(example_store)
    first = ids[EXPIRE]
    cli("accept", str(first))
    cli("apply", str(first))
    (example_store / "release-checklist.md").write_text("# Release checklist\n\nTag, build, publish the notes, then announce it.\n")
    later = json.loads(cli("pass", str(example_store), "--json").out)
    (reindex,) = [p["id"] for p in later["proposals"] if p["kind"] == "reindex" and p["state"] == "pending"]
    cli("accept", str(reindex))
    assert cli("apply", str(reindex)).code == 0
    done = cli("revert", str(first))
    assert done.code == 6
    assert done.err.endswith(f"(#{reindex}, applied later, wrote it since: dreamd revert {reindex}, then dreamd revert {first})\n")
    assert [cli("revert", str(reindex)).code, cli("revert", str(first)).code] == [0, 0]
    (example_store / "release-checklist.md").unlink()
    assert read_tree(example_store) == before


def test_an_edit_between_two_applies_names_no_order_of_reverts(ids, cli, example_store):
    """The agent edits the index between two applies: reverting the later one would not give
    back what the first wrote, so no order of reverts is offered."""
    first = ids[EXPIRE]
    cli("accept", str(first))
    cli("apply", str(first))
    with open(example_store / "MEMORY.md", "a") as index:
        index.write("- A line the agent wrote.\n")
    again = json.loads(cli("pass", str(example_store), "--json").out)
    (second,) = [p["id"] for p in again["proposals"] if p["kind"] == "supersede" and p["state"] == "pending"]
    cli("accept", str(second))
    assert cli("apply", str(second)).code == 0
    done = cli("revert", str(first))
    assert done.code == 6 and "dreamd revert" not in done.err.replace(f"dreamd show {first}", "") and f"dreamd show {first} shows exactly what it changed" in done.err
