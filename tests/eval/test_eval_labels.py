"""Loading labels: the examples load, and every mistake is one ConfigError line naming the file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from daemon.core.errors import ConfigError
from daemon.evaluation.evaluate import load_labels

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"
GOOD = 'preset = "generic"\nkeep = ["a.md"]\n[[merge]]\nnotes = ["b.md", "c.md"]\n[[retire]]\nnote = "d.md"\nkind = "soft-expire"\n'


@pytest.fixture
def corpus(make_store):
    return make_store({"a.md": "a\n", "b.md": "b\n", "c.md": "c\n", "d.md": "d\n", "sub/e.md": "e\n"}, name="corpus/s").parent


def write(corpus: Path, text: str) -> Path:
    path = corpus / "s.labels.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_example_loads():
    found = {p.name: load_labels(p) for p in sorted(EXAMPLES.glob("*.labels.toml"))}
    assert len(found) >= 6
    assert {lab.preset for lab in found.values()} == {"deepcode", "claude-code", "serena", "cline", "generic"}
    assert all(lab.now is not None and lab.now.tzinfo is not None for lab in found.values())


def test_a_good_file_loads(corpus):
    lab = load_labels(write(corpus, 'now = 2026-01-02T03:04:05Z\nreindex = false\n' + GOOD))
    assert (lab.name, lab.preset, lab.keep, lab.merges) == ("s", "generic", frozenset({"a.md"}), (frozenset({"b.md", "c.md"}),))
    assert lab.retire == {"d.md": "soft-expire"} and lab.reindex is False
    assert lab.now == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    assert load_labels(write(corpus, 'now = "2026-01-02"\n' + GOOD)).now == dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 1\n" + GOOD, "unknown key 'colour' (allowed: "),
        ('preset = "generic"\n[[merge]]\nnotes = ["b.md", "c.md"]\nkept = "b.md"\n', "merge 1: unknown key 'kept'"),
        ('preset = "generic"\n[[merge]]\nnotes = ["b.md", "c.md"]\nsurvivor = "a.md"\n', "merge 1: 'survivor' must be one of its notes"),
        ('preset = "generic"\nkeep = ["b.md"]\n[[merge]]\nnotes = ["b.md", "c.md"]\nsurvivor = "c.md"\n', "merge 1: its 'keep' note must be the survivor"),
        ('preset = "generic"\nkeep = ["missing.md"]\n', "names 'missing.md', which is not a file of s/"),
        ('preset = "generic"\n[[retire]]\nnote = "../a.md"\nkind = "supersede"\n', "names '../a.md'"),
        ('preset = "generic"\nkeep = ["sub"]\n', "names 'sub', which is not a file"),
        ('preset = "generic"\nkeep = ["./a.md"]\n', "names './a.md'"),
        ('keep = ["a.md"]\n', "'preset' is required"),
        ('preset = "vim"\n', "unknown store preset 'vim'"),
        ('preset = "generic"\nnow = "tuesday"\n', "'now' must be an ISO time"),
        ('preset = "generic"\nreindex = "yes"\n', "'reindex' must be true or false"),
        ('preset = "generic"\nkeep = "a.md"\n', "'keep' must be a list of note paths"),
        ('preset = "generic"\nmerge = ["a.md"]\n', "'merge' must be an array of tables"),
        ('preset = "generic"\n[[merge]]\nnotes = ["a.md"]\n', "merge 1: 'notes' must list 2 or more"),
        ('preset = "generic"\n[[merge]]\nnotes = ["a.md", "b.md"]\n[[merge]]\nnotes = ["b.md", "c.md"]\n', "merge 2 shares a note"),
        ('preset = "generic"\nkeep = ["a.md", "b.md"]\n[[merge]]\nnotes = ["a.md", "b.md"]\n', "merge 1 holds 2 'keep' notes"),
        ('preset = "generic"\n[[retire]]\nnote = "a.md"\nkind = "delete"\n', "retire 1 needs 'note' and 'kind'"),
        (GOOD + '[[retire]]\nnote = "a.md"\nkind = "supersede"\n', "retire 2: a.md is also labeled elsewhere"),
        (GOOD + '[[retire]]\nnote = "b.md"\nkind = "supersede"\n', "retire 2: b.md is also labeled elsewhere"),
        ("preset = \n", "is not valid TOML"),
    ],
)
def test_bad_labels_fail_with_one_line(corpus, text, message):
    path = write(corpus, text)
    with pytest.raises(ConfigError) as failed:
        load_labels(path)
    line = failed.value.one_line()
    assert message in line and "\n" not in line.strip()
    assert str(path) in line or "unknown store preset" in line


def test_labels_need_their_store_folder_beside_them(tmp_path):
    path = tmp_path / "gone.labels.toml"
    path.write_text('preset = "generic"\n')
    with pytest.raises(ConfigError, match="no store folder gone/ beside it"):
        load_labels(path)
    with pytest.raises(ConfigError, match="is named <store>.labels.toml"):
        load_labels(tmp_path / "labels.toml")
