"""``--json`` on the commands that decide and write (accept, reject, unreject, unaccept, apply, revert,
resolve), and a README that documents the shape of every ``--json`` there is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from daemon.cli.main import cli as dreamd_group

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.fixture
def passed(example_store, cli):
    """A CLI pass over the example store; returns (store, {retired notes: proposal id})."""
    done = cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0, done.err
    items = json.loads(done.out)["proposals"]
    return str(example_store), {tuple(sorted(p for p in i["paths"] if not p.startswith(".") and p != "MEMORY.md")): i["id"] for i in items}


MERGE = ("build-commands-copy.md", "build-commands.md")
SUPERSEDE = ("release-plan-v1.md", "release-plan-v2.md")


def _json(result):
    assert (result.code, result.err) == (0, "")
    return json.loads(result.out)


def test_accept_json_lists_each_proposal_with_its_store_and_new_state(passed, cli):
    """``accept A B --json`` prints one ``{id, store, state}`` per proposal, in the order given."""
    store, ids = passed
    a, b = ids[MERGE], ids[SUPERSEDE]
    assert _json(cli("accept", str(b), str(a), "--json")) == [{"id": b, "store": store, "state": "accepted"}, {"id": a, "store": store, "state": "accepted"}]


def test_reject_json_says_rejected(passed, cli):
    """``reject ID --reason … --json`` prints the rejected proposal as a one-item list."""
    store, ids = passed
    assert _json(cli("reject", str(ids[MERGE]), "--reason", "both needed", "--json")) == [{"id": ids[MERGE], "store": store, "state": "rejected"}]


def test_unreject_json_is_one_object_in_state_pending(passed, cli):
    """``unreject ID --json`` prints one object: the proposal is pending again."""
    store, ids = passed
    cli("reject", str(ids[MERGE]), "--reason", "no")
    assert _json(cli("unreject", str(ids[MERGE]), "--json")) == {"id": ids[MERGE], "store": store, "state": "pending"}


def test_a_refused_decision_prints_no_json_at_all(passed, cli):
    """Accepting a rejected proposal with --json: exit 5, one error line, and nothing on stdout."""
    _, ids = passed
    cli("reject", str(ids[MERGE]), "--reason", "no")
    again = cli("accept", str(ids[MERGE]), "--json")
    assert (again.code, again.out, again.err.count("\n"), again.err.startswith("error[proposal]: ")) == (5, "", 1, True)


def test_accepting_again_with_json_lists_the_proposal_as_accepted(passed, cli):
    """``accept ID --json`` of a proposal accepted before prints it in state accepted, exit 0."""
    store, ids = passed
    cli("accept", str(ids[MERGE]))
    assert _json(cli("accept", str(ids[MERGE]), "--json")) == [{"id": ids[MERGE], "store": store, "state": "accepted"}]


def test_unaccept_json_is_one_object_in_state_pending(passed, cli):
    """``unaccept ID --json`` prints one object: the proposal is pending again."""
    store, ids = passed
    cli("accept", str(ids[MERGE]))
    assert _json(cli("unaccept", str(ids[MERGE]), "--json")) == {"id": ids[MERGE], "store": store, "state": "pending"}


def test_apply_json_lists_what_was_applied(passed, cli):
    """``apply --json`` prints ``{id, store, state, detail}`` per accepted proposal; detail is null when applied."""
    store, ids = passed
    cli("accept", str(ids[MERGE]))
    assert _json(cli("apply", "--json")) == [{"id": ids[MERGE], "store": store, "state": "applied", "detail": None}]


def test_apply_json_with_nothing_accepted_is_an_empty_list(passed, cli):
    """``apply --json`` with nothing accepted prints ``[]`` (not the text line)."""
    assert _json(cli("apply", "--json")) == []


def test_apply_json_of_a_stale_proposal_says_why_and_still_exits_6(passed, cli, example_store):
    """A proposal whose note changed after accept: the JSON says stale and why, the exit is 6, and the note keeps its edit."""
    store, ids = passed
    cli("accept", str(ids[MERGE]))
    note = example_store / "build-commands-copy.md"
    note.write_bytes(note.read_bytes() + b"Also `make lint`.\n")
    edited = note.read_bytes()
    done = cli("apply", "--json")
    assert done.code == 6
    assert json.loads(done.out) == [{"id": ids[MERGE], "store": store, "state": "stale", "detail": "changed since proposed: build-commands-copy.md"}]
    assert note.read_bytes() == edited


def test_revert_json_of_one_id_is_one_object(passed, cli):
    """``revert ID --json`` prints one ``{id, store, state, detail}`` object in state reverted."""
    store, ids = passed
    cli("accept", str(ids[MERGE]))
    cli("apply")
    assert _json(cli("revert", str(ids[MERGE]), "--json")) == {"id": ids[MERGE], "store": store, "state": "reverted", "detail": None}


def test_revert_pass_json_lists_every_reverted_proposal_newest_first(passed, cli):
    """``revert --pass N --json`` prints a list, newest proposal first."""
    store, ids = passed
    a, b = sorted((ids[MERGE], ids[SUPERSEDE]))
    cli("accept", str(a), str(b))
    cli("apply")
    pass_id = json.loads(cli("show", str(a), "--json").out)["pass_id"]
    assert _json(cli("revert", "--pass", str(pass_id), "--json")) == [
        {"id": b, "store": store, "state": "reverted", "detail": None},
        {"id": a, "store": store, "state": "reverted", "detail": None},
    ]


def test_resolve_json_names_what_was_restored_and_kept(example_store, make_app, db_url, cli):
    """``resolve JOURNAL --json`` prints the journal, its proposal and operation, and the files restored, kept and left."""
    from service.test_resolve import _torn_apply

    _, proposal_id, journal_id, written, edited = _torn_apply(make_app(), example_store)
    assert cli("--db", db_url, "verify", "--store", str(example_store)).code == 8  # recovery finds the conflict
    assert _json(cli("--db", db_url, "resolve", str(journal_id), "--json")) == {
        "journal": journal_id, "proposal_id": proposal_id, "operation": "apply",
        "restored": [written], "returned": [], "kept": [edited], "left": [], "caught": [], "later": [], "state": "stale",
    }  # fmt: skip


# The README documents every --json ------------------------------------------------------


def _json_commands(group: click.Group, prefix: str = "") -> list[str]:
    """Every visible command (with its group's name) that has a ``--json`` option."""
    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the group loads a command's module when asked for it
        command = group.get_command(ctx, name)
        if command.hidden:
            continue
        if isinstance(command, click.Group):
            found += _json_commands(command, f"{prefix}{name} ")
        elif any("--json" in getattr(p, "opts", ()) for p in command.params):
            found.append(prefix + name)
    return found


JSON_SECTION = README.split("### JSON output (stable)", 1)[1].split("\n### ", 1)[0]


def test_the_json_section_is_where_the_readme_says():
    """The README has a "JSON output (stable)" section with text in it."""
    assert len(JSON_SECTION) > 1000


def test_the_commands_with_json_include_the_decisions_and_writes():
    """The walk over the CLI finds the --json of the commands that decide and write."""
    assert {"accept", "reject", "unreject", "unaccept", "apply", "revert", "resolve", "status", "pass", "eval"} <= set(_json_commands(dreamd_group))


@pytest.mark.parametrize("name", _json_commands(dreamd_group))
def test_every_json_shape_is_documented(name):
    """Each command with --json has its shape in the README's JSON section, as `dreamd NAME … --json`."""
    assert re.search(rf"`dreamd {re.escape(name)}\b[^`]*--json[^`]*`", JSON_SECTION), name
