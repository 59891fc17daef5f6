"""What the labels add for measuring every stage: ``by`` (a supersede's newer note), candidate
recall over what each call held, destructive false positives per kind, and ``[[workspace]]``
(a git repository built for the pass)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from daemon.core.errors import ConfigError
from daemon.evaluation.evaluate import Predicted, coverage, load_labels, run_eval, score
from daemon.evaluation.git_fixture import build_repo

BASE = 'preset = "generic"\n'
RETIRE = '[[retire]]\nnote = "old.md"\nkind = "supersede"\nby = "new.md"\n'
WORKSPACE = """
[[workspace]]
at = "2026-01-05T10:00:00Z"
message = "first"
write = { "src/a.py" = "A = 1\\n", "src/gone.py" = "B = 2\\n" }

[[workspace]]
at = "2026-02-20T10:00:00Z"
delete = ["src/gone.py"]
write = { "src/a.py" = "A = 3\\n" }
"""


@pytest.fixture
def labeled(make_store, tmp_path):
    """Write a store of four notes and its labels; return the labels file."""

    def make(text: str) -> Path:
        make_store({"old.md": "old\n", "new.md": "new\n", "other.md": "other\n", "keep.md": "keep\n"}, name="corpus/s")
        path = tmp_path / "corpus" / "s.labels.toml"
        path.write_text(BASE + text)
        return path

    return make


def test_by_names_the_newer_note_of_a_supersede(labeled):
    """``by`` is read into the labels, and shown_with says the two notes must share a call."""
    labels = load_labels(labeled(RETIRE))
    assert labels.by == {"old.md": "new.md"} and labels.shown_with("old.md") == frozenset({"old.md", "new.md"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[retire]]\nnote = "old.md"\nkind = "soft-expire"\nby = "new.md"\n', "'by' names the newer note of a supersede"),
        ('[[retire]]\nnote = "old.md"\nkind = "supersede"\nby = "old.md"\n', "'by' names the newer note of a supersede"),
        (RETIRE + '[[retire]]\nnote = "new.md"\nkind = "soft-expire"\n', "'by' new.md is itself retired or merged away"),
        ('[[merge]]\nnotes = ["new.md", "other.md"]\nsurvivor = "other.md"\n' + RETIRE, "'by' new.md is itself retired or merged away"),
        ('[[retire]]\nnote = "old.md"\nkind = "supersede"\nby = "missing.md"\n', "names 'missing.md', which is not a file of s/"),
    ],
)
def test_a_wrong_by_is_one_config_line(labeled, text, message):
    """``by`` on an expiry, on the note itself, on a retired note, or on no file: refused at load."""
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_labels(labeled(text))


def test_candidate_recall_counts_a_supersede_only_with_its_newer_note(labeled):
    """A call holding the older note alone does not show the supersede; one holding both does; a merge needs its whole group."""
    labels = load_labels(labeled(RETIRE + '[[merge]]\nnotes = ["other.md", "keep.md"]\n'))
    apart = [frozenset({"old.md", "other.md"}), frozenset({"new.md", "keep.md"})]
    together = [frozenset({"old.md", "new.md", "other.md", "keep.md"})]
    assert coverage(labels, apart) == {"merge": {"sent": 0, "expected": 1}, "retire": {"sent": 0, "expected": 1}}
    assert coverage(labels, together) == {"merge": {"sent": 1, "expected": 1}, "retire": {"sent": 1, "expected": 1}}


def test_destructive_false_positives_are_counted_per_kind(labeled):
    """A supersede and a merge retiring the keep note count under their own kind, and retire sums the retiring kinds."""
    labels = load_labels(labeled('keep = ["keep.md"]\n'))
    got = [Predicted("supersede", ("new.md", "keep.md"), ("keep.md",)), Predicted("merge", ("other.md", "keep.md"), ("keep.md",)),
           Predicted("soft-expire", ("other.md",), ("other.md",))]  # fmt: skip
    out = score(labels, got)
    assert out.destructive_kinds() == {"merge": 1, "supersede": 1, "soft-expire": 0, "retire": 1, "reindex": 0}
    assert {k: v["destructive"] for k, v in out.as_dict()["kinds"].items()} == out.destructive_kinds()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_a_labeled_workspace_becomes_a_git_repository_with_its_dates(labeled, tmp_path):
    """Each [[workspace]] entry is one commit at its labeled time; deleted files are gone from the tree."""
    labels = load_labels(labeled(WORKSPACE))
    repo = build_repo(labels.workspace, tmp_path / "repo")
    assert git(repo, "log", "--format=%cI %s") == "2026-02-20T10:00:00+00:00 update\n2026-01-05T10:00:00+00:00 first\n"
    assert git(repo, "ls-files") == "src/a.py\n" and (repo / "src" / "a.py").read_text() == "A = 3\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[workspace]]\nat = "soon"\nwrite = { "a.py" = "x" }\n', "'at' must be an ISO time"),
        ('[[workspace]]\nat = "2026-01-05T10:00:00Z"\nwrite = { "../a.py" = "x" }\n', "'../a.py' is not a plain relative path"),
        ('[[workspace]]\nat = "2026-01-05T10:00:00Z"\nwrite = { ".git/config" = "x" }\n', "'.git/config' is not a plain relative path"),
        ('[[workspace]]\nat = "2026-01-05T10:00:00Z"\n', "a commit writes or deletes at least one file"),
        ('[[workspace]]\nat = "2026-01-05T10:00:00Z"\nwrite = { "a.py" = "x" }\nbranch = "dev"\n', "unknown key 'branch'"),
    ],
)
def test_a_wrong_workspace_is_one_config_line(labeled, text, message):
    """Workspace entries never name a path outside the repository or inside .git, and say what is wrong."""
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_labels(labeled(text))


def test_deleting_a_file_no_commit_wrote_is_a_config_error(labeled, tmp_path):
    labels = load_labels(labeled('[[workspace]]\nat = "2026-01-05T10:00:00Z"\ndelete = ["nothing.py"]\n'))
    with pytest.raises(ConfigError, match="deletes nothing.py, which no earlier commit wrote"):
        build_repo(labels.workspace, tmp_path / "repo")


def test_the_pass_gets_the_workspace_and_it_is_removed_after(labeled):
    """The planner's store config names the built repository while it runs; afterwards the folder is gone."""
    corpus = labeled(WORKSPACE).parent
    seen = []

    def hook(store, now):
        seen.append((store.workspace, git(store.workspace, "ls-files")))
        return []

    run_eval(corpus, planner="llm", llm=hook)
    ((workspace, files),) = seen
    assert files == "src/a.py\n" and not workspace.exists()


def test_a_store_without_workspace_labels_gets_none(labeled):
    """No [[workspace]]: the store's pass has no workspace, so no citation is checked against a made-up repository."""
    seen = []
    run_eval(labeled(RETIRE).parent, planner="llm", llm=lambda store, now: seen.append(store.workspace) or [])
    assert seen == [None]
