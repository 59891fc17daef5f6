"""A new user's first session with ``dreamd`` on a copy of examples/deepcode-memory, command by command."""

from __future__ import annotations

import json


def test_pass_review_apply_verify_revert_verify(example_store, cli, read_tree):
    """pass -> proposals -> show -> accept -> apply -> verify clean -> revert -> verify clean, with the store back to its bytes."""
    store = ["--store", str(example_store), "--preset", "deepcode"]
    original = read_tree(example_store)

    passed = cli("pass", *store)
    assert passed.code == 0, passed.err
    assert passed.out.endswith(f"{example_store}: pass #1: 11 notes, 6 pending\n")
    assert read_tree(example_store) == original

    listed = cli("proposals", "--state", "pending")
    assert listed.code == 0
    lines = listed.out.splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("#1     pending    merge       1.00  ")

    merge = next(p for p in json.loads(cli("proposals", "--json").out) if p["kind"] == "merge" and "build-commands-copy.md" in p["paths"])
    pid = str(merge["id"])
    shown = cli("show", pid)
    assert shown.code == 0
    assert shown.out.startswith(f"#{pid} merge [pending] Merge 1 exact duplicate into build-commands.md\n")
    assert shown.out.endswith(merge["diff"])

    assert cli("accept", pid).out == f"#{pid} accepted\n"
    assert "accepted by human:" in cli("show", pid).out
    applied = cli("apply", pid)
    assert (applied.code, applied.out) == (0, f"#{pid} applied\n")
    assert not (example_store / "build-commands-copy.md").exists()
    assert (example_store / ".dreamd-archive" / "build-commands-copy.md").read_bytes().startswith(original["build-commands-copy.md"].split(b"---\n\n")[0])

    verified = cli("verify", *store)
    assert (verified.code, verified.out) == (0, f"{example_store}: clean\n")

    reverted = cli("revert", pid)
    assert (reverted.code, reverted.out) == (0, f"#{pid} reverted\n")
    verified = cli("verify", *store)
    assert (verified.code, verified.out) == (0, f"{example_store}: clean\n")
    assert read_tree(example_store) == original
    assert json.loads(cli("show", pid, "--json").out)["state"] == "reverted"


def test_verify_reports_a_hand_edit_with_exit_8(example_store, cli):
    """After a pass, editing a note by hand makes ``verify`` name it and exit 8; ``verify --json`` says clean false."""
    store = ["--store", str(example_store), "--preset", "deepcode"]
    cli("pass", *store)
    with open(example_store / "architecture.md", "a") as f:
        f.write("A fourth service is planned.\n")
    result = cli("verify", *store)
    assert (result.code, result.out) == (8, f"architecture.md: modified since dreamd last recorded the store\n{example_store}: NOT clean\n")
    as_json = cli("verify", *store, "--json")
    assert as_json.code == 8
    assert json.loads(as_json.out)["problems"] == ["architecture.md: modified since dreamd last recorded the store"]


def test_verify_of_a_store_never_passed_exits_8(example_store, cli):
    """``verify`` on a store dreamd never recorded says so and exits 8."""
    result = cli("verify", "--store", str(example_store), "--preset", "deepcode")
    assert (result.code, result.out) == (8, f"no pass has been recorded for this store yet\n{example_store}: NOT clean\n")


def test_verify_reports_a_leftover_temp_file_with_exit_8(example_store, cli):
    """A stray temp file of a journal (named by its journal id) is named by ``verify``, which exits 8."""
    store = ["--store", str(example_store), "--preset", "deepcode"]
    cli("pass", *store)
    (example_store / ".architecture.md.dreamd-tmp-j3-0123abcd").write_text("half a note")
    result = cli("verify", *store)
    assert (result.code, result.out) == (8, f".architecture.md.dreamd-tmp-j3-0123abcd: leftover temporary file\n{example_store}: NOT clean\n")


def test_an_archive_folder_that_is_a_symlink_is_one_line_for_verify_and_pass(example_store, cli, tmp_path):
    """The archive folder replaced by a symlink to an outside folder is out of the store's
    scope: ``verify`` (which said clean) and ``pass`` refuse it in one line, exit 3, as for an
    archive root beside the notes, and nothing is written in the outside folder."""
    store = ["--store", str(example_store), "--preset", "deepcode"]
    assert cli("pass", *store).code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.md").write_text("Not the store's.\n")
    (example_store / ".dreamd-archive").symlink_to(outside)
    said = f"error[unsafe-path]: archive root {example_store / '.dreamd-archive'} is a symlink (to {outside}), not a folder: dreamd reads and writes no folder through a symlink ("
    for command in ("verify", "pass"):
        result = cli(command, *store)
        assert (result.code, result.out) == (3, ""), (command, result)
        assert result.err.count("\n") == 1 and result.err.startswith(said), result.err
    assert [p.name for p in outside.iterdir()] == ["elsewhere.md"]
