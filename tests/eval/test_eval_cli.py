"""``dreamd eval``: the JSON contract, the text table, and its exit codes (9: destructive)."""

from __future__ import annotations

import json

SCORE_KEYS = {"kinds", "refused", "lossy", "destructive", "false_positives", "missed", "survivor", "other_survivor", "derived", "retire_kind"}
COUNT_KEYS = {"tp", "fp", "fn", "precision", "recall", "destructive"}
TOP_KEYS = {"v", "corpus", "planner", "labeled", "stores", "counts", "overall", "destructive", "llm", "refused_correct", "sample"}
SAMPLE_KEYS = {"store", "kind", "state", "source", "title", "rationale", "reason", "notes", "retired", "lossy", "diff_head"}


def test_json_of_a_labeled_corpus(cli, examples):
    done = cli("eval", str(examples), "--json")
    assert done.code == 0, done.err
    out = json.loads(done.out)
    assert set(out) == TOP_KEYS
    assert (out["v"], out["planner"], out["labeled"], out["destructive"], out["sample"], out["llm"]) == (1, "rules", True, 0, [], None)
    assert set(out["overall"]) == SCORE_KEYS
    assert set(out["overall"]["kinds"]) == {"merge", "supersede", "soft-expire", "retire", "reindex"}
    assert out["overall"]["kinds"]["merge"] == {"tp": 9, "fp": 1, "fn": 5, "precision": 0.9, "recall": 0.643, "destructive": 0}
    assert out["overall"]["survivor"] == {"agree": 6, "labeled": 6}
    assert [s["store"] for s in out["stores"]] == sorted(s["store"] for s in out["stores"])
    for store in out["stores"]:
        assert set(store) == {"store", "preset", "proposals", "counts", "score", "llm", "refused_correct"} and store["llm"] is None
        assert all(set(c) == COUNT_KEYS for c in store["score"]["kinds"].values())
    assert out["counts"]["merge"] == {"pending": 10}


def test_json_of_an_unlabeled_corpus_has_counts_and_a_sample(cli, make_store, tmp_path):
    body = "Deploys need two approvals and a green staging run before the production button unlocks.\n"
    make_store({"a.md": body, "b.md": body, "old.md": "---\nexpires: 2020-01-01\n---\nold\n"}, name="corpus/generic/ops")
    out = json.loads(cli("eval", str(tmp_path / "corpus"), "--json", "--sample", "1").out)
    assert (out["labeled"], out["overall"], out["destructive"]) == (False, None, 0)
    assert out["stores"][0]["score"] is None and out["stores"][0]["preset"] == "generic"
    assert out["counts"] == {"merge": {"pending": 1}, "soft-expire": {"pending": 1}}
    assert len(out["sample"]) == 1 and set(out["sample"][0]) == SAMPLE_KEYS
    assert out["sample"][0]["diff_head"][0].startswith("diff --git ")


def test_text_table_of_the_examples(cli, examples):
    done = cli("eval", str(examples))
    assert done.code == 0
    assert "rules planner, 8 labeled stores (dry run: nothing written)" in done.out
    assert "\noverall  " in done.out and "  merge        tp 9   fp 1   fn 5   precision 0.90  recall 0.64  destructive 0" in done.out
    assert "deepcode-pipeline: false positive merge: gpu-setup-2.md, gpu-setup.md" in done.out
    assert done.out.rstrip().endswith("destructive false positives: 0")


def test_unlabeled_text_shows_counts_and_sample(cli, make_store, tmp_path):
    body = "Deploys need two approvals and a green staging run before the production button unlocks.\n"
    make_store({"a.md": body, "b.md": body}, name="corpus/generic/ops")
    done = cli("eval", str(tmp_path / "corpus"))
    assert done.code == 0
    assert "generic/ops  generic      1 " in done.out
    assert "sample of 1 proposals:" in done.out and "  | diff --git " in done.out


def test_destructive_false_positive_exits_9(cli, make_store, tmp_path):
    """An exact copy whose older note is labeled keep: the planner retires the older one."""
    body = "The nightly export runs at 01:00 UTC and writes one CSV per tenant to the reports bucket.\n"
    make_store({
        "older.md": f"---\nupdated_at: 2026-01-01\n---\n{body}",
        "newer.md": f"---\nupdated_at: 2026-02-01\n---\n{body}",
    }, name="corpus/store")  # fmt: skip
    (tmp_path / "corpus" / "store.labels.toml").write_text('preset = "generic"\nnow = "2026-03-01T00:00:00Z"\nkeep = ["older.md"]\n')
    done = cli("eval", str(tmp_path / "corpus"))
    assert done.code == 9
    assert "store: DESTRUCTIVE merge: older.md" in done.out and "destructive false positives: 1" in done.out
    out = json.loads(cli("eval", str(tmp_path / "corpus"), "--json").out)
    assert out["destructive"] == 1 and out["overall"]["destructive"][0]["notes"] == ["older.md"]
    assert cli("eval", str(tmp_path / "corpus"), "--json").code == 9


def test_bad_labels_exit_2_with_one_line(cli, make_store, tmp_path):
    make_store({"a.md": "a\n"}, name="corpus/store")
    (tmp_path / "corpus" / "store.labels.toml").write_text('preset = "generic"\nkeep = ["b.md"]\n')
    done = cli("eval", str(tmp_path / "corpus"))
    assert done.code == 2 and done.out == ""
    assert done.err.startswith("error[config]: labels ") and "names 'b.md'" in done.err and done.err.count("\n") == 1

