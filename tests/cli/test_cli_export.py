"""``dreamd export``: its output, its one-line refusals, and the review branch taken through git merge and back."""

from __future__ import annotations

import json
import os
import subprocess

import pytest


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path, monkeypatch):
    """git reads no user or system config and finds no repository above tmp_path."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))


def git(cwd, *args):
    return subprocess.run(["git", "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.org", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def passed(example_store, cli):
    """The example store after one pass (on the real clock): six pending proposals."""
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    return example_store


def test_export_dir_prints_one_line_per_patch_written(passed, cli, tmp_path):
    """``export 1 3 --dir DIR`` prints each file's path, one a line, and writes exactly those."""
    out = tmp_path / "out"
    result = cli("export", "1", "3", "--dir", str(out))
    assert (result.code, result.out) == (0, f"{out}/1-merge-build-commands-copy.patch\n{out}/3-merge-test-setup-notes.patch\n")
    assert sorted(p.name for p in out.iterdir()) == ["1-merge-build-commands-copy.patch", "3-merge-test-setup-notes.patch"]


def test_export_json_lists_id_and_path(passed, cli, tmp_path):
    """``--json`` prints ``[{"id", "path"}]`` for every pending proposal."""
    out = tmp_path / "out"
    result = cli("export", "--pending", "--dir", str(out), "--json")
    assert result.code == 0
    assert [(item["id"], os.path.basename(item["path"])) for item in json.loads(result.out)] == [
        (1, "1-merge-build-commands-copy.patch"), (2, "2-merge-coding-conventions.patch"), (3, "3-merge-test-setup-notes.patch"),
        (4, "4-soft-expire-sprint-status.patch"), (5, "5-supersede-release-plan-v1.patch"), (6, "6-reindex-MEMORY.patch"),
    ]  # fmt: skip


def test_export_to_a_dir_that_is_a_file_is_one_line_and_exit_2(passed, cli, tmp_path):
    """A --dir naming a file is refused in one line, and the file keeps its bytes."""
    taken = tmp_path / "taken"
    taken.write_text("mine\n")
    result = cli("export", "--pending", "--dir", str(taken))
    assert (result.code, result.out, result.err) == (2, "", f"error[config]: --dir {taken} is a file, not a folder; nothing was written\n")
    assert taken.read_text() == "mine\n"


def test_export_needs_dir_or_branch(passed, cli):
    """Without --dir, --branch or --html, export is a usage error in one line."""
    result = cli("export", "--pending")
    assert (result.code, result.err) == (2, "error[usage]: give one of --dir DIR, --branch NAME or --html DIR (see 'dreamd export --help')\n")


def test_export_html_writes_an_index_and_a_page_per_proposal_whose_links_resolve(passed, cli, tmp_path):
    """``export --pending --html DIR`` writes index.html and one page per proposal; every relative link names a file written."""
    import re

    out = tmp_path / "report"
    result = cli("export", "--pending", "--html", str(out))
    assert (result.code, result.out) == (0, f"7 page(s) in {out}: open {out}/index.html\n")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["index.html", *(f"proposal-{i}.html" for i in range(1, 7))]
    for page in out.iterdir():
        for link in re.findall(r'href="([^"#]+)"', page.read_text()):
            assert (out / link).is_file(), (page.name, link)


def test_export_html_inside_the_store_is_refused_and_writes_nothing(passed, cli, snapshot_tree):
    """An --html folder inside the store is refused in one line, and the store is left as it was."""
    before = snapshot_tree(passed)
    result = cli("export", "--pending", "--html", str(passed / "report"))
    assert (result.code, result.err) == (2, f"error[config]: --html {passed}/report is inside the store {passed}; dreamd writes into a store only by applying a proposal (choose a folder outside the store)\n")
    assert snapshot_tree(passed) == before


def test_export_branch_outside_a_repository_is_one_line_and_exit_2(passed, cli):
    """--branch on a store in no git work tree is refused in one line with what to do instead."""
    result = cli("export", "--pending", "--branch", "review")
    assert (result.code, result.err) == (2, f"error[config]: {passed} is not inside a git work tree, so there is no branch to make (use --dir DIR to write patch files instead)\n")


def test_export_branch_merge_pass_revert_verify(tmp_path, example_store, cli, read_tree):
    """export --branch, git merge, pass: the proposal is applied; revert gives back the base bytes and verify is clean."""
    top = tmp_path / "repo"
    top.mkdir()
    memory = top / "memory"
    example_store.rename(memory)
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "memory")
    original = read_tree(memory)
    store = ["--store", str(memory), "--preset", "deepcode"]
    assert cli("pass", *store).code == 0

    exported = cli("export", "1", "--branch", "review")
    head = git(top, "rev-parse", "--short=12", "HEAD").strip()
    commit = git(top, "rev-parse", "--short=12", "review").strip()
    assert (exported.code, exported.out) == (0, f"#1 {commit} Merge 1 exact duplicate into build-commands.md\nbranch review: 1 commit(s) on {head}\n")

    git(top, "merge", "-q", "--ff-only", "review")
    assert cli("pass", *store).code == 0
    shown = json.loads(cli("show", "1", "--json").out)
    assert (shown["state"], shown["state_reason"]) == ("applied", "found applied: the store already holds its result (merged from a branch, or the same edit made by hand)")
    assert cli("verify", *store).out == f"{memory}: clean\n"

    assert cli("revert", "1").out == "#1 reverted\n"
    assert read_tree(memory) == original
    assert cli("verify", *store).out == f"{memory}: clean\n"
