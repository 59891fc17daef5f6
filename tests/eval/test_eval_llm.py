"""``dreamd eval --planner llm``: the harness end to end with recorded replies (no network),
model settings and their errors, recording, replay misses, and a model failing on one store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from daemon.config import Config
from daemon.core.errors import ConfigError, ModelTransientError
from daemon.llm.base import ModelRequest, ModelResponse, ModelSettings
from daemon.evaluation.evaluate import eval_model, parse_options, run_eval

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"
RECORDING = EXAMPLES / "replies" / "local-qwen.json"
NOTE = re.compile(r'<note id="(n\d+)" path="([^"]+)"')

# The llm planner (detectors + model) replaying Qwen2.5-Coder-1.5B's answers, recorded with an
# 8,192-token window (context_window) and max_output_tokens 1024 (bench/eval_llm.md), with the
# prompt that names every note of a whole-store call: every store fits one whole-store call, so
# every labeled case was sent to the model whole. Measured: 16 requests; 5 replies cut off at
# 1,024 tokens and asked again in less room (deepcode-pipeline's took 8 requests over 2 passes),
# 9 model proposals refused by the planner's checks, 2 pending. The model found no merge the
# detectors had not; the 2 it adds retire notes the labels keep (the 2 destructive false
# positives, the eval exits 9 for them), and each is held for a person: a union merge of notes
# that are no near copies, capped at confidence 0.5, and one of them *lossy*.
LLM_KINDS = {
    "merge": {"tp": 9, "fp": 3, "fn": 5, "precision": 0.75, "recall": 0.643, "destructive": 2},
    "supersede": {"tp": 7, "fp": 0, "fn": 2, "precision": 1.0, "recall": 0.778, "destructive": 0},
    "soft-expire": {"tp": 3, "fp": 0, "fn": 1, "precision": 1.0, "recall": 0.75, "destructive": 0},
    "retire": {"tp": 10, "fp": 0, "fn": 3, "precision": 1.0, "recall": 0.769, "destructive": 0},
    "reindex": {"tp": 3, "fp": 0, "fn": 0, "precision": 1.0, "recall": 1.0, "destructive": 0},
}
LLM_TOTALS = {"calls": 16, "prompt_tokens": 35735, "completion_tokens": 8893, "truncated": 5, "model_proposals": 2, "replay_misses": 0}
REFUSED_PER_STORE = {
    "claude-code-team": 0, "claude-code-webapp": 1, "cline-shop": 1, "deepcode-billing": 1, "deepcode-pipeline": 3,
    "generic-ops": 1, "serena-crossref": 1, "serena-goasync": 1,
}  # fmt: skip
CALLS_PER_STORE = {"deepcode-billing": 2, "deepcode-pipeline": 8}  # the others: 1


def ids_of(request: ModelRequest) -> dict[str, str]:
    """path -> id of the notes in a request's prompt."""
    return {path: i for i, path in NOTE.findall(request.user)}


class Scripted:
    """A stand-in for litellm: when the two oldest progress notes of claude-code-webapp are sent,
    proposes that the newer supersedes the older (a labeled retirement the detectors miss);
    nothing elsewhere; fails on the stores named in ``fail``; every request kept."""

    def __init__(self, fail: tuple[str, ...] = (), cost: float | None = None, botch: bool = False) -> None:
        self.fail, self.cost, self.botch = fail, cost, botch  # botch: the older note's quote is not in it
        self.requests: list[tuple[ModelRequest, ModelSettings]] = []

    def __call__(self) -> Scripted:  # used in place of the LiteLLMClient class
        return self

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        self.requests.append((request, settings))
        if request.key.split("/")[0] in self.fail:
            raise ModelTransientError("model openai/scripted: HTTP 503 (gave up after 1 attempts)")
        ids = ids_of(request)
        proposals = []
        old, new = "project_progress_0302.md", "project_progress_0304.md"
        if {old, new} <= set(ids):
            proposals.append({
                "kind": "supersede", "notes": [ids[new], ids[old]], "survivor": None, "newer": ids[new], "merged_body": None,
                "rationale": "The newer progress note gives the current state of the tests." if self.botch else "The newer progress note gives the current test counts.",
                "confidence": 0.8, "dropped": [],
                "evidence": [{"note": ids[old], "quote": "text copied exactly" if self.botch else "212 tests passing, 3 failing"},
                             {"note": ids[new], "quote": "231 tests passing, 0 failing"}],
            })  # fmt: skip
        text = json.dumps({"v": 1, "proposals": proposals})
        return ModelResponse(text, "stop", 1000, 50, self.cost, 0.01, settings.model)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch):
    """Install a Scripted client where eval would build litellm's (no network, no litellm import)."""

    def install(**kwargs) -> Scripted:
        fake = Scripted(**kwargs)
        monkeypatch.setattr("daemon.llm.litellm_client.LiteLLMClient", fake)
        return fake

    return install


def test_replayed_local_qwen_scores_exactly(cli, examples):
    """The recorded replies of a real model (Qwen2.5-Coder-1.5B via llama.cpp) replayed: the
    whole harness, with its exact figures; nothing reaches the network."""
    done = cli("eval", str(examples), "--planner", "llm", "--replay", str(RECORDING), "--json")
    assert done.code == 9, done.err  # the destructive false positive above
    out = json.loads(done.out)
    assert out["planner"] == "llm" and out["labeled"]
    llm = out["llm"]
    assert (llm["model"], llm["replay"], llm["record"], llm["recorded_model"]) == ("openai/local-qwen", str(RECORDING), None, "openai/local-qwen")
    assert {k: llm[k] for k in LLM_TOTALS} == LLM_TOTALS
    assert llm["failed"] == [] and llm["cost"] is None
    # what candidate selection showed the model: every store whole, so every labeled case
    assert llm["coverage"] == {"merge": {"sent": 14, "expected": 14}, "retire": {"sent": 13, "expected": 13}}
    assert out["overall"]["kinds"] == LLM_KINDS
    assert (out["overall"]["refused"], out["overall"]["lossy"], out["destructive"]) == (9, 1, 2)
    assert {s["store"]: s["score"]["refused"] for s in out["stores"]} == REFUSED_PER_STORE
    truncated = {s["store"] for s in out["stores"] if s["llm"]["truncated"]}
    assert truncated == set(CALLS_PER_STORE)  # asked again in less room
    assert {s["store"]: s["llm"]["calls"] for s in out["stores"]} == {s: CALLS_PER_STORE.get(s, 1) for s in REFUSED_PER_STORE}
    assert all(s["llm"]["error"] is None and s["llm"]["stopped"] is None and s["llm"]["complete"] for s in out["stores"])
    # deepcode-pipeline's parts cut off again: the second pass shows the notes the first could not
    assert {s["store"]: s["llm"]["passes"] for s in out["stores"] if s["llm"]["passes"] != 1} == {"deepcode-pipeline": 2}
    assert out["counts"]["merge"] == {"pending": 12, "refused": 9}
    assert out["counts"]["supersede"] == {"pending": 5}


def test_llm_without_a_model_is_one_config_line(cli, examples):
    done = cli("eval", str(examples), "--planner", "llm")
    assert done.code == 2 and done.out == ""
    assert done.err.startswith("error[config]: --planner llm needs a model") and done.err.count("\n") == 1
    assert "--model NAME" in done.err and "--replay FILE" in done.err


def test_a_missing_key_yields_nothing_for_that_group(cli, tmp_path, examples):
    """A recording without one store's replies: that store gets no model proposal (a replay
    miss, counted), so only the detectors' proposals are scored there; the rest replay as before."""
    data = json.loads(RECORDING.read_text())
    dropped = [k for k in data["replies"] if k.startswith("deepcode-billing/")]
    assert dropped
    for key in dropped:
        del data["replies"][key]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    full = json.loads(cli("eval", str(examples), "--planner", "llm", "--replay", str(RECORDING), "--json").out)
    rules = json.loads(cli("eval", str(examples), "--json").out)
    out = json.loads(cli("eval", str(examples), "--planner", "llm", "--replay", str(partial), "--json").out)
    by_name = lambda report: {s["store"]: s for s in report["stores"]}  # noqa: E731
    ops = by_name(out)["deepcode-billing"]
    # the store's reply and its second turn are dropped; the first miss answers "no proposals",
    # so the second turn (kept for a reply cut off) is never asked
    assert len(dropped) == 2 and ops["llm"]["replay_misses"] == 1 and ops["llm"]["model_proposals"] == 0 and ops["llm"]["error"] is None
    assert ops["score"]["kinds"] == by_name(rules)["deepcode-billing"]["score"]["kinds"]  # the detectors' alone
    assert out["llm"]["replay_misses"] == 1
    others = {n: s["score"] for n, s in by_name(out).items() if n != "deepcode-billing"}
    assert others == {n: s["score"] for n, s in by_name(full).items() if n != "deepcode-billing"}


def test_record_then_replay_gives_the_same_report(cli, scripted, tmp_path, examples):
    """--record saves every reply and the settings that shaped the calls; --replay of that file,
    with no model option at all, makes the same groups and scores the same."""
    fake = scripted()
    recording = tmp_path / "rec.json"
    live = cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted", "--api-base", "http://127.0.0.1:9/v1",
               "--llm-option", "tokens_per_call=2500", "--llm-option", "max_output_tokens=300", "--record", str(recording), "--json")  # fmt: skip
    assert live.code == 0, live.err
    first = json.loads(live.out)
    assert first["llm"]["record"] == str(recording) and first["llm"]["model"] == "openai/scripted"
    assert len(fake.requests) == first["llm"]["calls"] > 6  # 2,500 tokens a call: some stores need two
    settings = fake.requests[0][1]
    assert (settings.tokens_per_call, settings.max_output_tokens, settings.api_base) == (2500, 300, "http://127.0.0.1:9/v1")
    saved = json.loads(recording.read_text())
    assert saved["model"] == "openai/scripted" and len(saved["replies"]) == len(fake.requests)
    assert saved["settings"]["tokens_per_call"] == 2500 and saved["settings"]["max_output_tokens"] == 300
    assert all(key.split("/")[0] in {s["store"] for s in first["stores"]} for key in saved["replies"])
    webapp = next(s for s in first["stores"] if s["store"] == "claude-code-webapp")
    assert webapp["llm"]["model_proposals"] == 1 and webapp["score"]["kinds"]["supersede"]["tp"] == 3  # with the status-chain detector's

    fake.requests.clear()
    again = json.loads(cli("eval", str(examples), "--planner", "llm", "--replay", str(recording), "--json").out)
    assert fake.requests == []  # no live client was asked
    assert again["llm"]["replay_misses"] == 0 and again["llm"]["recorded_model"] == "openai/scripted"
    assert [s["score"] for s in again["stores"]] == [s["score"] for s in first["stores"]]
    assert {k: again["llm"][k] for k in ("calls", "prompt_tokens", "completion_tokens")} == {k: first["llm"][k] for k in ("calls", "prompt_tokens", "completion_tokens")}


def test_a_model_failure_is_one_store_line_and_the_rest_runs(cli, scripted, examples):
    """503 on cline-shop: that store says so in one line and proposes nothing; the others are
    scored as usual; the full report is printed and the exit code is 7."""
    scripted(fail=("cline-shop",))
    done = cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted")
    assert done.code == 7
    assert "model: openai/scripted\n" in done.out and "model calls per store" in done.out
    assert "  cline-shop: FAILED: error[planner]: the model part of the pass failed: " in done.out
    assert done.err.count("\n") == 1 and done.err.startswith("eval: cline-shop: error[planner]") and "503" in done.err
    out = json.loads(cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted", "--json").out)
    shop = next(s for s in out["stores"] if s["store"] == "cline-shop")
    assert shop["proposals"] == 0 and shop["llm"]["calls"] == 1 and "503" in shop["llm"]["error"]
    assert out["llm"]["failed"] == ["cline-shop"]
    assert all(s["llm"]["error"] is None for s in out["stores"] if s["store"] != "cline-shop")
    assert sum(s["proposals"] for s in out["stores"]) == 20  # the detectors' 19 elsewhere (3 of them status chains), and the model's one


def test_right_notes_with_a_botched_quote_are_counted_as_derived(cli, scripted, examples):
    """§4: the model names the right pair but echoes the schema's words as its quote: dreamd
    derives the evidence, and eval counts it per store and overall as derived and correct; the
    same run with a verbatim quote counts none."""
    scripted(botch=True)
    out = json.loads(cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted", "--json").out)
    webapp = next(s for s in out["stores"] if s["store"] == "claude-code-webapp")
    assert webapp["score"]["derived"] == {"proposed": 1, "correct": 1}
    assert out["overall"]["derived"] == {"proposed": 1, "correct": 1}
    assert all(s["score"]["derived"] == {"proposed": 0, "correct": 0} for s in out["stores"] if s is not webapp)
    text = cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted").out
    assert re.search(r"^claude-code-webapp .* 1/1 ", text, re.M) and "derived: right notes, botched quote" in text
    scripted()
    plain = json.loads(cli("eval", str(examples), "--planner", "llm", "--model", "openai/scripted", "--json").out)
    assert plain["overall"]["derived"] == {"proposed": 0, "correct": 0}
    assert plain["overall"]["kinds"]["supersede"] == out["overall"]["kinds"]["supersede"]  # the same proposal, scored alike


def test_model_from_the_config_and_costs_summed(cli, scripted, tmp_path, examples):
    """The global [llm] of --config names the model; options override it key by key; a priced
    model's cost is summed per store and overall (null when unpriced: see the replay test)."""
    fake = scripted(cost=0.0005)
    config = tmp_path / "dreamd.toml"
    config.write_text('[llm]\nmodel = "openai/from-config"\napi_base = "http://127.0.0.1:9/v1"\ntokens_per_call = 3000\n')
    out = json.loads(cli("--config", str(config), "eval", str(examples), "--planner", "llm", "--llm-option", "retries=0", "--json").out)
    settings = fake.requests[0][1]
    assert (settings.model, settings.api_base, settings.tokens_per_call, settings.retries) == ("openai/from-config", "http://127.0.0.1:9/v1", 3000, 0)
    assert out["llm"]["model"] == "openai/from-config"
    assert out["llm"]["cost"] == pytest.approx(0.0005 * len(fake.requests))
    assert all(s["llm"]["cost"] == pytest.approx(0.0005 * s["llm"]["calls"]) for s in out["stores"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "openai/x"), "error[config]: --model is for --planner llm"),
        (("--planner", "llm", "--replay", "a.json", "--record", "b.json"), "error[config]: eval: --replay and --record exclude each other"),
        (("--planner", "llm", "--model", "openai/x", "--llm-option", "colour=blue"), "error[config]: eval: llm: unknown key 'colour'"),
        (("--planner", "llm", "--model", "openai/x", "--llm-option", "retries"), "error[config]: --llm-option 'retries': must be KEY=VALUE"),
        (("--planner", "llm", "--model", "openai/x", "--llm-option", "retries=-1"), "error[config]: eval: llm.retries must be a non-negative"),
        (("--planner", "llm", "--replay", "/nonexistent/r.json"), "error[config]: replay file /nonexistent/r.json"),
        (("--planner", "llm", "--model", "openai/x", "--record", "/nonexistent/r.json"), "error[config]: --record /nonexistent/r.json: its folder does not exist"),
    ],
)
def test_bad_model_options_exit_2_with_one_line(cli, args, message, examples):
    done = cli("eval", str(examples), *args)
    assert done.code == 2 and done.out == ""
    assert done.err.startswith(message) and done.err.count("\n") == 1


def test_text_report_names_the_replayed_model(cli, examples):
    done = cli("eval", str(examples), "--planner", "llm", "--replay", str(RECORDING), "--sample", "40")
    assert f"model: openai/local-qwen, replayed from {RECORDING}, recorded from openai/local-qwen (no network)" in done.out
    assert "\nmodel calls per store (cost '-': the model has no price; passes: until every note and group was shown;\ncandidates: labeled cases one call showed whole)\n" in done.out
    assert re.search(r"\noverall +9 +16 +35,735 +8,893 +- +2 +5 +0 +27/27\n", done.out)
    assert "candidate recall: merge groups 14/14 (all notes in one call), retirements 13/13 (with the newer note, for a supersede labeled 'by')" in done.out
    assert "[claude-code-team] merge [pending] LOSSY Merge deploy_flow.md, feedback_db_tests.md, feedback_real_db.md, team/oncall.md, user_role.md into team/deploy_flow.md" in done.out  # the sample flags it
    assert "  claude-code-team: DESTRUCTIVE merge: feedback_real_db.md, team/oncall.md, user_role.md\n" in done.out


def test_service_api_and_option_parsing(examples):
    assert parse_options(["tokens_per_call=2500", "api_base=http://h:1/v1", "temperature=0.2"]) == {
        "tokens_per_call": 2500, "api_base": "http://h:1/v1", "temperature": 0.2,
    }  # fmt: skip
    with pytest.raises(ConfigError, match="needs a model"):
        eval_model(Config())
    model = eval_model(Config(), replay=RECORDING)
    assert model.settings.model == "openai/local-qwen" and model.describe()["replay"] == str(RECORDING)
    report = run_eval(examples, planner="llm", llm=model.planner(Config()))
    assert report.model == model.describe() and report.llm["failed"] == []


def test_a_replayed_llm_eval_writes_nothing(monkeypatch, tmp_path, snapshot_tree):
    """Like the rules eval: store bytes, mtimes and listings unchanged; no database or temp file;
    the recording itself untouched."""
    import tempfile

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    before, recording = snapshot_tree(EXAMPLES), RECORDING.read_bytes()
    model = eval_model(Config(), replay=RECORDING)
    run_eval(EXAMPLES, planner="llm", llm=model.planner(Config()))
    model.finish()  # not a recording: a no-op
    assert snapshot_tree(EXAMPLES) == before and RECORDING.read_bytes() == recording
    assert list(temp.iterdir()) == [] and not (tmp_path / "xdg-state").exists()


def test_an_unlabeled_corpus_with_the_llm_planner(make_store, tmp_path):
    """Counts and usage, no score and no coverage; reply keys are scoped by the store's folder."""
    progress = "---\nupdated_at: 2026-03-0{}\n---\nCurrent state: {} tests passing, {} failing.\n"
    make_store({"project_progress_0302.md": progress.format(2, 212, 3), "project_progress_0304.md": progress.format(4, 231, 0)}, name="corpus/generic/web")
    fake = Scripted()
    model = eval_model(Config(), model="openai/scripted", client=fake)
    report = run_eval(tmp_path / "corpus", planner="llm", llm=model.planner(Config()))
    (store,) = report.stores
    assert (store.name, store.score, store.error) == ("generic/web", None, None)
    # the two progress notes are a status chain: the detector proposes it first, the model's same change is a duplicate
    assert [(p.kind, p.state, p.source) for p in store.proposals] == [("supersede", "pending", "detector:status-chain@1"), ("supersede", "duplicate", "model:openai/scripted")]
    assert "coverage" not in store.llm and report.llm["calls"] == 1 and "coverage" not in report.llm
    assert fake.requests[0][0].key == "generic/web/project_progress_0302.md|generic/web/project_progress_0304.md"
