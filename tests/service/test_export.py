"""Export: patch files git applies at the store root, a review branch made without touching the
checkout, and a merged branch recognised as applied (revertible to the exact base bytes)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from daemon.config import adhoc_store
from daemon.core.errors import ConfigError
from daemon.service.apply.applying import apply, revert_pass
from daemon.service.review.export import chosen, export_branch, export_patches, patch_name, patch_text
from daemon.service.review.audit import event_log
from daemon.service.passes.run import run_pass
from daemon.service.proposals import decide, get_proposal, list_proposals
from daemon.service.workspace import roots_of


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path, monkeypatch):
    """git reads no user or system config and finds no repository above tmp_path."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.org", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def repo_store(tmp_path, example_store):
    """The example store as the folder ``memory`` of a repository with one commit."""
    top = tmp_path / "repo"
    top.mkdir()
    example_store.rename(top / "memory")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "memory as the agent left it")
    return top


def _passed(make_app, root):
    app = make_app()
    store = adhoc_store(root, "deepcode")
    run_pass(app, store)
    return app, store


def _pending(app):
    return chosen(app, [], pending=True)


def test_every_patch_checks_with_git_apply_at_the_store_root(example_store, make_app, tmp_path):
    """Each exported patch passes ``git apply --check`` at the store root, and git says it checked its files."""
    app, _ = _passed(make_app, example_store)
    written = export_patches(app, _pending(app), tmp_path / "patches")
    assert len(written) == 5
    for item in written:
        done = subprocess.run(["git", "apply", "--check", "-v", item.path], cwd=example_store, capture_output=True, text=True)
        assert (done.returncode, "Skipped" in done.stderr, "Checking patch" in done.stderr) == (0, False, True), done.stderr


def test_applying_a_patch_gives_the_proposals_result_bytes(example_store, make_app, tmp_path, read_tree):
    """``git apply`` of the merge's patch leaves the store with exactly the result hashes the proposal recorded."""
    from daemon.core.hashing import hash_bytes

    app, _ = _passed(make_app, example_store)
    (merge,) = [v for v in _pending(app) if "build-commands-copy.md" in v.paths]
    (item,) = export_patches(app, [merge], tmp_path / "patches")
    subprocess.run(["git", "apply", item.path], cwd=example_store, check=True)
    files = read_tree(example_store)
    assert {p: hash_bytes(files[p]) if p in files else None for p in merge.result} == merge.result


def test_a_patch_is_the_header_block_then_the_stored_diff(example_store, make_app):
    """The text is ``# key: value`` lines (kind, title, evidence, hashes…), a lone ``#``, then the diff byte for byte."""
    app, _ = _passed(make_app, example_store)
    view = next(v for v in _pending(app) if "build-commands-copy.md" in v.paths)
    text = patch_text(view)
    header, diff = text[: -len(view.diff)], text[-len(view.diff) :]
    assert diff == view.diff
    lines = header.splitlines()
    assert all(line.startswith("# ") or line == "#" for line in lines)
    assert lines[:5] == [f"# proposal: {view.id}", f"# store: {view.store}", "# state: pending", "# kind: merge", f"# title: {view.title}"]
    assert "# evidence: build-commands.md:7-7" in lines
    assert "#   Build with `make build`; it writes the binary to `out/orchard`." in lines
    assert f"# base: MEMORY.md={view.base['MEMORY.md']}" in lines
    assert "# result: build-commands-copy.md=none" in lines
    assert "# confidence: 1.00" in lines and "# source: detector:exact-duplicate@5" in lines


def _apply_line(path: str) -> str:
    (line,) = [line for line in Path(path).read_text().splitlines() if line.startswith("# apply: ")]
    return line.removeprefix("# apply: ")


def test_the_apply_line_of_a_store_below_a_repositorys_top_applies_it_from_anywhere(repo_store, make_app, tmp_path, read_tree):
    """The header's ``git -C <top> apply --directory=memory <patch>``, run from an unrelated
    folder, gives the store the merge's result bytes."""
    from daemon.core.hashing import hash_bytes

    store = repo_store / "memory"
    app, _ = _passed(make_app, store)
    (merge,) = [v for v in _pending(app) if "build-commands-copy.md" in v.paths]
    (item,) = export_patches(app, [merge], tmp_path / "patches")
    line = _apply_line(item.path)
    assert line == f"git -C {repo_store} apply --directory=memory {tmp_path / 'patches' / Path(item.path).name}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run(line, shell=True, cwd=elsewhere, check=True)
    files = read_tree(store)
    assert {p: hash_bytes(files[p]) if p in files else None for p in merge.result} == merge.result


def test_the_header_says_git_apply_inside_the_store_folder_applies_nothing(repo_store, make_app, tmp_path, read_tree):
    """Below a repository's top the header warns, and it is true: ``git apply`` run in the
    store folder exits 0, says Skipped patch and changes nothing."""
    store = repo_store / "memory"
    app, _ = _passed(make_app, store)
    (item,) = export_patches(app, [v for v in _pending(app) if "build-commands-copy.md" in v.paths], tmp_path / "patches")
    assert "# note: git apply run inside memory applies nothing: git skips every file (Skipped patch) and still exits 0; run the line above, from any folder\n" in Path(item.path).read_text()
    before = read_tree(store)
    done = subprocess.run(["git", "apply", "-v", item.path], cwd=store, capture_output=True, text=True)
    assert (done.returncode, "Skipped patch" in done.stderr, read_tree(store) == before) == (0, True, True)


def test_a_store_outside_a_repository_is_applied_with_git_c_at_its_root_and_no_warning(example_store, make_app, tmp_path, read_tree):
    """Outside any work tree the apply line is ``git -C <store> apply <patch>``, with no note, and it works from elsewhere."""
    app, _ = _passed(make_app, example_store)
    (item,) = export_patches(app, [v for v in _pending(app) if "build-commands-copy.md" in v.paths], tmp_path / "patches")
    line = _apply_line(item.path)
    assert line == f"git -C {example_store} apply {item.path}" and "# note: " not in Path(item.path).read_text()
    before = read_tree(example_store)
    subprocess.run(line, shell=True, cwd=tmp_path, check=True)
    assert read_tree(example_store) != before


def test_a_policy_verdict_is_in_the_header_as_a_decision(example_store, make_app):
    """A decision on the proposal is a ``# decision:`` line naming who decided, through what surface, and why."""
    app, _ = _passed(make_app, example_store)
    view = _pending(app)[0]
    decide(app, view.id, "accept", "duplicates", actor="policy:tidy@0123abcd")
    decided = get_proposal(app, view.id)
    assert f"# decision: accept by policy:tidy@0123abcd via cli at {decided.decisions[0]['at']}: duplicates\n" in patch_text(decided)


def test_a_quoted_line_that_looks_like_a_diff_stays_a_comment(example_store, make_app, tmp_path):
    """A rationale holding ``diff --git`` and ``@@`` lines is written as ``#`` lines, and git still applies only the real diff."""
    app, _ = _passed(make_app, example_store)
    view = next(v for v in _pending(app) if "build-commands-copy.md" in v.paths)
    tricky = dataclasses.replace(view, rationale="see\ndiff --git a/x b/x\n@@ -1 +1 @@\n--- a/x\n+++ b/x")
    patch = tmp_path / "tricky.patch"
    patch.write_text(patch_text(tricky))
    done = subprocess.run(["git", "apply", "--check", "-v", str(patch)], cwd=example_store, capture_output=True, text=True)
    assert (done.returncode, done.stderr.count("Checking patch")) == (0, 2)
    assert "#   diff --git a/x b/x\n#   @@ -1 +1 @@\n" in patch.read_text()


def test_patch_names_take_the_first_note_that_is_neither_index_nor_archive(example_store, make_app):
    """Files are named ``<id>-<kind>-<first note>.patch``; a reindex, with no other note, names its index."""
    app, store = _passed(make_app, example_store)
    names = [patch_name(v, store, roots_of(store)) for v in _pending(app)]
    assert names == [
        "1-merge-build-commands-copy.patch", "2-merge-coding-conventions.patch", "3-merge-test-setup-notes.patch",
        "4-supersede-release-plan-v1.patch", "5-reindex-MEMORY.patch",
    ]  # fmt: skip


def test_a_patch_name_replaces_odd_characters_and_is_capped(example_store, make_app):
    """Slashes, spaces and other odd characters become ``-`` and the note part stops at 48 characters."""
    app, store = _passed(make_app, example_store)
    view = dataclasses.replace(_pending(app)[0], result={"deep/dir/Ünïcode name?*.md": None, "MEMORY.md": None})
    assert patch_name(view, store, roots_of(store)) == "1-merge-deep-dir-n-code-name.patch"
    long = dataclasses.replace(view, result={"x" * 80 + ".md": None})
    assert patch_name(long, store, roots_of(store)) == "1-merge-" + "x" * 48 + ".patch"


def test_a_patch_folder_inside_the_store_is_refused_and_nothing_is_written(example_store, make_app, snapshot_tree):
    """--dir inside the store's root is a ConfigError, and the store keeps every byte and mtime."""
    app, _ = _passed(make_app, example_store)
    before = snapshot_tree(example_store)
    with pytest.raises(ConfigError, match=r"is inside the store .*; dreamd writes into a store only by applying a proposal$"):
        export_patches(app, _pending(app), example_store / "patches")
    assert snapshot_tree(example_store) == before


def test_the_branch_has_one_commit_per_proposal_with_its_trailers(repo_store, make_app):
    """Each commit's message is title, rationale and the Dreamd trailers; commits follow id order on top of HEAD."""
    app, _ = _passed(make_app, repo_store / "memory")
    head = git(repo_store, "rev-parse", "HEAD").strip()
    views = _pending(app)
    report = export_branch(app, views, "review")
    assert [pid for pid, _ in report.commits] == [1, 2, 3, 4, 5] and report.skipped == []
    assert git(repo_store, "rev-list", "--reverse", f"{head}..review").split() == [sha for _, sha in report.commits]
    first = views[0]
    message = git(repo_store, "log", "-1", "--format=%B", report.commits[0][1])
    assert message.startswith(f"{first.title}\n\n{first.rationale}\n\nDreamd-Proposal: 1\n")
    trailers = git(repo_store, "log", "-1", "--format=%(trailers:only,unfold)", report.commits[0][1]).splitlines()
    assert trailers[:-1] == [
        "Dreamd-Proposal: 1",
        *[f"Dreamd-Base: {p}={h or 'none'}" for p, h in sorted(first.base.items())],
        *[f"Dreamd-Result: {p}={h or 'none'}" for p, h in sorted(first.result.items())],
        f"Dreamd-Store: {first.store}",
    ]


@pytest.mark.parametrize("named", [False, True])
def test_the_branch_is_made_by_dreamd_unless_gits_identity_variables_name_someone(repo_store, make_app, monkeypatch, named):
    """Author and committer are ``dreamd <dreamd@localhost>``; ``GIT_AUTHOR_NAME`` and ``GIT_COMMITTER_EMAIL`` replace their part."""
    if named:
        monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
        monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ada@example.org")
    app, _ = _passed(make_app, repo_store / "memory")
    report = export_branch(app, _pending(app)[:1], "review")
    people = git(repo_store, "log", "-1", "--format=%an <%ae> / %cn <%ce>", report.commits[0][1]).strip()
    assert people == ("Ada <dreamd@localhost> / dreamd <ada@example.org>" if named else "dreamd <dreamd@localhost> / dreamd <dreamd@localhost>")


def test_the_branch_places_store_paths_under_the_stores_folder(repo_store, make_app):
    """The merge's commit renames memory/build-commands-copy.md into memory/.dreamd-archive and edits memory/MEMORY.md."""
    app, _ = _passed(make_app, repo_store / "memory")
    report = export_branch(app, _pending(app)[:1], "review")
    changed = git(repo_store, "show", "--format=", "--name-status", "-M", report.commits[0][1]).splitlines()
    assert changed == ["R077\tmemory/build-commands-copy.md\tmemory/.dreamd-archive/build-commands-copy.md", "M\tmemory/MEMORY.md"]


def test_the_branch_changes_nothing_checked_out(repo_store, make_app):
    """HEAD, the work tree (even with someone's uncommitted edit) and the index file's bytes are the same after export."""
    app, _ = _passed(make_app, repo_store / "memory")
    (repo_store / "memory" / "architecture.md").write_text("an edit in progress\n")
    status = git(repo_store, "--no-optional-locks", "status", "--porcelain")
    index = (repo_store / ".git" / "index").read_bytes()
    head = git(repo_store, "symbolic-ref", "HEAD"), git(repo_store, "rev-parse", "HEAD")
    export_branch(app, _pending(app), "review")
    assert (repo_store / ".git" / "index").read_bytes() == index
    assert git(repo_store, "--no-optional-locks", "status", "--porcelain") == status == " M memory/architecture.md\n"
    assert (git(repo_store, "symbolic-ref", "HEAD"), git(repo_store, "rev-parse", "HEAD")) == head


def test_an_existing_branch_is_refused_and_left_where_it_was(repo_store, make_app):
    """Exporting to a branch that exists raises ConfigError and the branch still names its commit."""
    app, _ = _passed(make_app, repo_store / "memory")
    git(repo_store, "branch", "review")
    before = git(repo_store, "rev-parse", "review")
    with pytest.raises(ConfigError, match=r"^branch review exists already; nothing was changed$"):
        export_branch(app, _pending(app), "review")
    assert git(repo_store, "rev-parse", "review") == before


def test_a_store_outside_a_git_work_tree_is_refused(example_store, make_app):
    """Without a repository around the store, --branch raises ConfigError naming the folder."""
    app, _ = _passed(make_app, example_store)
    with pytest.raises(ConfigError, match=r"is not inside a git work tree, so there is no branch to make$"):
        export_branch(app, _pending(app), "review")


def test_a_proposal_that_does_not_apply_on_head_is_skipped_and_the_rest_committed(repo_store, make_app):
    """A note committed with other bytes than the proposal saw leaves that proposal out, saying why; the others are committed."""
    app, _ = _passed(make_app, repo_store / "memory")
    views = _pending(app)
    with open(repo_store / "memory" / "release-plan-v1.md", "a") as f:
        f.write("Edited after the pass.\n")
    git(repo_store, "commit", "-q", "-am", "an edit after the pass")
    report = export_branch(app, views, "review")
    assert report.skipped == [(4, "release-plan-v1.md is not what the proposal was made from on the branch, and its change does not apply to it")]
    assert [pid for pid, _ in report.commits] == [1, 2, 3, 5]
    assert git(repo_store, "show", "review:memory/release-plan-v1.md").endswith("Edited after the pass.\n")


def test_a_merged_branch_is_recorded_applied_by_the_next_pass_and_reverts_to_the_base(repo_store, make_app, clock, read_tree):
    """After ``git merge`` of the branch, a pass records every proposal applied (not stale), and reverting them restores the original bytes."""
    memory = repo_store / "memory"
    original = read_tree(memory)
    app, store = _passed(make_app, memory)
    export_branch(app, _pending(app), "review")
    git(repo_store, "merge", "-q", "--ff-only", "review")
    clock.advance(minutes=5)
    report = run_pass(app, store)
    assert report.stale == []
    assert {v.id: (v.state, v.state_reason) for v in list_proposals(app)} == {
        pid: ("applied", "found applied: the store already holds its result (merged from a branch, or the same edit made by hand)") for pid in range(1, 6)
    }
    clock.advance(minutes=1)
    assert [r.state for r in revert_pass(app, 1)] == ["reverted"] * 5
    assert read_tree(memory) == original


def test_found_applied_is_an_event_by_the_passs_actor(repo_store, make_app, clock):
    """The pass that finds a merged proposal logs ``proposal.applied`` by its own actor, marked found, naming the steps."""
    app, store = _passed(make_app, repo_store / "memory")
    (view,) = chosen(app, [2])
    export_branch(app, [view], "review")
    git(repo_store, "merge", "-q", "--ff-only", "review")
    clock.advance(minutes=5)
    run_pass(app, store)
    (event,) = [e for e in event_log(app, store) if e["type"] == "proposal.applied"]
    assert (event["actor"], event["proposal_id"], event["payload"]["found"]) == (app.actor, 2, True)
    assert sorted(s["path"] for s in event["payload"]["files"]) == [".dreamd-archive/style-rules.md", "style-rules.md"]


def test_a_result_only_partly_in_the_store_goes_stale(repo_store, make_app, clock):
    """A merged archive copy edited afterwards is not the proposal's result: the pass marks it stale, never applied."""
    memory = repo_store / "memory"
    app, store = _passed(make_app, memory)
    export_branch(app, chosen(app, [2]), "review")
    git(repo_store, "merge", "-q", "--ff-only", "review")
    with open(memory / ".dreamd-archive" / "style-rules.md", "a") as f:
        f.write("one more rule\n")
    clock.advance(minutes=5)
    assert run_pass(app, store).stale == [2]
    assert get_proposal(app, 2).state == "stale"


def test_apply_of_an_accepted_proposal_already_merged_writes_nothing(repo_store, make_app, clock, snapshot_tree):
    """``apply`` of an accepted proposal whose result the store holds records it applied and leaves every byte and mtime as merged."""
    app, _ = _passed(make_app, repo_store / "memory")
    export_branch(app, chosen(app, [1]), "review")
    decide(app, 1, "accept")
    git(repo_store, "merge", "-q", "--ff-only", "review")
    merged = snapshot_tree(repo_store / "memory")
    clock.advance(minutes=1)
    (result,) = apply(app, [1])
    assert (result.state, result.detail) == ("applied", "its result was in the store already; nothing written")
    assert snapshot_tree(repo_store / "memory") == merged
    assert get_proposal(app, 1).state == "applied"
