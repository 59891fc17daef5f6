"""The oracle model: what it answers for one call, from the labels alone, and what the
pipeline does with its answers (``dreamd eval --planner oracle``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.config import Config
from daemon.core.errors import ConfigError
from daemon.llm.base import ModelRequest, ModelSettings
from daemon.planners.lossless import uncovered
from daemon.evaluation.evaluate import load_labels, oracle_model, run_eval
from daemon.evaluation.oracle import CUT, OracleModel

SETTINGS = ModelSettings(model="oracle")
STYLE = "# Code style\n\n- Format with ruff, line length 100.\n- Type hints on every public function.\n"
STACK = "# Tech stack\n\n- Python 3.12 with FastAPI.\n- PostgreSQL 16 in production.\n"
OLD = "---\nupdated_at: 2026-02-01\n---\nWeek 7 complete: 88 tests passing.\n"
NEW = "---\nupdated_at: 2026-03-01\n---\nCurrent status: the beta ships; 139 tests passing.\n"
LABELS = """preset = "generic"
now = "2026-03-10T09:00:00Z"
keep = ["keep.md"]

[[merge]]
notes = ["style.md", "stack.md"]
survivor = "stack.md"

[[retire]]
note = "week7.md"
kind = "supersede"
by = "status.md"

[[retire]]
note = "empty.md"
kind = "soft-expire"
"""


@pytest.fixture
def corpus(make_store, tmp_path) -> Path:
    files = {"style.md": STYLE, "stack.md": STACK, "week7.md": OLD, "status.md": NEW, "empty.md": "", "keep.md": "Payments questions go to the billing channel.\n"}
    make_store(files, name="corpus/shop")
    (tmp_path / "corpus" / "shop.labels.toml").write_text(LABELS)
    return tmp_path / "corpus"


def ask(oracle: OracleModel, *paths: str, settings: ModelSettings = SETTINGS) -> tuple[list[dict], str]:
    key = "|".join(f"shop/{p}" for p in sorted(paths))
    response = oracle.complete(ModelRequest("system", "user", {}, key=key), settings)
    return json.loads(response.text)["proposals"], response.finish_reason


def test_a_merge_is_lossless_into_the_labeled_survivor_with_verbatim_quotes(corpus):
    """A call holding a labeled group gets its merge: the labeled survivor, a body keeping every sentence, quotes found in the notes."""
    (merge,), finish = ask(OracleModel([load_labels(corpus / "shop.labels.toml")]), "style.md", "stack.md", "keep.md")
    assert finish == "stop"
    assert (merge["kind"], merge["notes"], merge["survivor"], merge["newer"]) == ("merge", ["stack.md", "style.md"], "stack.md", None)
    assert uncovered([STACK, STYLE], merge["merged_body"], []) == []
    assert merge["merged_body"].startswith(STACK.rstrip("\n"))
    assert merge["evidence"] == [{"note": "stack.md", "quote": "- Python 3.12 with FastAPI."}, {"note": "style.md", "quote": "- Format with ruff, line length 100."}]


def test_a_supersede_names_the_labeled_newer_note_and_quotes_both(corpus):
    """week7.md labeled 'by' status.md: one supersede, the newer note named, a body line of each quoted."""
    (supersede,), _ = ask(OracleModel([load_labels(corpus / "shop.labels.toml")]), "week7.md", "status.md")
    assert (supersede["kind"], supersede["notes"], supersede["newer"]) == ("supersede", ["status.md", "week7.md"], "status.md")
    assert [e["quote"] for e in supersede["evidence"]] == ["Current status: the beta ships; 139 tests passing.", "Week 7 complete: 88 tests passing."]


def test_nothing_is_proposed_for_a_case_the_call_does_not_hold_whole(corpus):
    """Half a merge group, or an older note without its newer one, gets no proposal: the oracle cannot see them together."""
    oracle = OracleModel([load_labels(corpus / "shop.labels.toml")])
    assert ask(oracle, "style.md", "week7.md", "keep.md") == ([], "stop")


def test_each_case_is_answered_once_per_pass(corpus):
    """A second call holding the same group gets nothing: the planner would refuse a repeat as an overlap."""
    oracle = OracleModel([load_labels(corpus / "shop.labels.toml")])
    assert len(ask(oracle, "style.md", "stack.md")[0]) == 1
    assert ask(oracle, "style.md", "stack.md", "keep.md") == ([], "stop")


def test_a_reply_over_max_output_tokens_is_cut_and_its_cases_listed(corpus):
    """An answer longer than max_output_tokens comes back as finish_reason length, and its cases stay open and listed as lost."""
    oracle = OracleModel([load_labels(corpus / "shop.labels.toml")])
    small = ModelSettings(model="oracle", max_output_tokens=10)
    assert ask(oracle, "style.md", "stack.md", settings=small)[1] == "length"
    assert oracle.lost("shop") == [{"kind": "merge", "notes": ["stack.md", "style.md"], "reason": CUT}]
    assert len(ask(oracle, "style.md", "stack.md")[0]) == 1 and oracle.lost("shop") == []


def test_an_unknown_store_or_no_key_gets_no_proposal(corpus):
    """A call of a store without labels, or without a key, is answered with an empty list."""
    oracle = OracleModel([load_labels(corpus / "shop.labels.toml")])
    assert json.loads(oracle.complete(ModelRequest("s", "u", {}, key="other/style.md|other/stack.md"), SETTINGS).text) == {"v": 1, "proposals": []}
    assert json.loads(oracle.complete(ModelRequest("s", "u", {}), SETTINGS).text) == {"v": 1, "proposals": []}


def test_the_oracle_pass_scores_its_cases_and_lists_what_the_checks_refuse(corpus):
    """Through the real pass: the merge and the supersede score, and the oracle's expiry of the empty note, which has nothing to quote, is listed as refused."""
    report = run_eval(corpus, planner="oracle")
    (store,) = report.stores
    kinds = {k: (c.tp, c.fp, c.fn) for k, c in store.score.kinds.items() if k in ("merge", "supersede")}  # an empty note's expiry may come from a detector
    assert kinds == {"merge": (1, 0, 0), "supersede": (1, 0, 0)}
    assert store.refused_correct == [{"kind": "soft-expire", "notes": ["empty.md"], "reason": "a soft-expire must quote its evidence (a date, a DONE/RESOLVED marker, a newer note)"}]
    assert (store.score.survivor.agree, store.score.survivor.labeled, store.score.lossy, store.score.destructive) == (1, 1, 0, [])
    assert store.llm["coverage"] == {"merge": {"sent": 1, "expected": 1}, "retire": {"sent": 2, "expected": 2}}
    assert report.model["model"] == "oracle" and report.refused_correct == [{"store": "shop", **store.refused_correct[0]}]


def test_an_oracle_eval_writes_nothing(corpus, snapshot_tree):
    """The oracle's pass is a dry run like the others: every store byte and mtime unchanged."""
    before = snapshot_tree(corpus)
    run_eval(corpus, planner="oracle")
    assert snapshot_tree(corpus) == before


def test_the_oracle_needs_labels(make_store, tmp_path):
    """An unlabeled corpus is one config error: there is nothing to answer from."""
    make_store({"a.md": "one\n"}, name="plain/store")
    with pytest.raises(ConfigError, match="--planner oracle answers from labels"):
        oracle_model(Config(), tmp_path / "plain")


def test_budgets_come_from_the_options_and_the_model_is_always_the_oracle(corpus):
    """--llm-option sets the oracle's budgets; no option can make it another model."""
    model = oracle_model(Config(), corpus, {"tokens_per_call": 2500, "model": "openai/x"})
    assert (model.settings.model, model.settings.tokens_per_call) == ("oracle", 2500)


def test_oracle_cli_refuses_model_options_and_reports_the_lost_list(cli, corpus):
    """--model is for the llm planner (one line, exit 2); the text report ends with what the pipeline lost."""
    done = cli("eval", str(corpus), "--planner", "oracle", "--model", "openai/x")
    assert (done.code, done.out) == (2, "")
    assert done.err == "error[config]: --model is for --planner llm (the oracle takes only --llm-option (budgets))\n"
    text = cli("eval", str(corpus), "--planner", "oracle")
    assert text.code == 0, text.err
    assert "\ncorrect proposals the pipeline lost (the oracle's; target: none): 1\n  shop: soft-expire empty.md: a soft-expire must quote its evidence" in text.out
    out = json.loads(cli("eval", str(corpus), "--planner", "oracle", "--json").out)
    assert out["refused_correct"] == [{"store": "shop", "kind": "soft-expire", "notes": ["empty.md"], "reason": store_reason(out)}]
    assert out["stores"][0]["refused_correct"] == [{k: v for k, v in out["refused_correct"][0].items() if k != "store"}]
    assert json.loads(cli("eval", str(corpus), "--json").out)["refused_correct"] is None


def store_reason(out: dict) -> str:
    return out["stores"][0]["refused_correct"][0]["reason"]
