"""The whole of examples/eval, the stores added for issue 11 included: every labels file loads,
and the oracle over it never retires a note labeled keep."""

from __future__ import annotations

from pathlib import Path

from daemon.evaluation.evaluate import SUFFIX, load_labels, run_eval

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"


def test_every_labeled_example_loads_with_its_cases():
    """Fourteen stores: 47 merge groups, 22 supersedes each naming its newer note, 16 expiries, one workspace of three commits."""
    labels = [load_labels(p) for p in sorted(EXAMPLES.glob(f"*{SUFFIX}"))]
    kinds = [kind for lab in labels for kind in lab.retire.values()]
    assert len(labels) == 14 and sum(len(lab.merges) for lab in labels) == 47
    assert (kinds.count("supersede"), kinds.count("soft-expire"), sum(len(lab.by) for lab in labels)) == (22, 16, 22)
    assert [(lab.name, len(lab.workspace)) for lab in labels if lab.workspace] == [("generic-citations", 3)]


def test_the_oracle_over_the_examples_is_never_destructive():
    """A perfect model's answers plus the detectors': no proposal retires or merges away a keep note."""
    report = run_eval(EXAMPLES, planner="oracle")
    assert len(report.stores) == 14 and report.failed == [] and report.overall.destructive == []


def _recall(sent: dict[str, int]) -> float:
    return sent["sent"] / sent["expected"]


def test_the_oracle_ceiling_and_candidate_recall_meet_their_targets():
    """Under the default budget, a 128k model (the oracle declares one): the model is shown
    >= 90% of the labeled merge groups and retirements whole, and a perfect model behind
    dreamd's selection and checks recalls >= 85% of them, destroying nothing."""
    report = run_eval(EXAMPLES, planner="oracle")
    coverage = report.llm["coverage"]
    assert _recall(coverage["merge"]) >= 0.9 and _recall(coverage["retire"]) >= 0.9
    kinds = report.overall.kinds
    assert kinds["merge"].recall >= 0.85 and kinds["retire"].recall >= 0.85 and report.overall.destructive == []


def test_a_store_several_times_a_call_still_shows_related_notes_together(tmp_path):
    """The 128-note audit under a 12,000-token window (the store is ~4 calls, as an 884-note
    store is for a 128k model): the packing keeps >= 90% of the labeled cases in one call."""
    import shutil

    from daemon.config import Config
    from daemon.evaluation.evaluate import oracle_model

    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES / "generic-audit", corpus / "generic-audit")
    shutil.copy2(EXAMPLES / f"generic-audit{SUFFIX}", corpus / f"generic-audit{SUFFIX}")
    run = oracle_model(Config(), corpus, {"context_window": 12_000}).planner(Config())
    report = run_eval(corpus, planner="oracle", llm=run)
    (store,) = report.stores
    assert store.llm["calls"] > 4
    coverage = store.llm["coverage"]
    assert _recall(coverage["merge"]) >= 0.9 and _recall(coverage["retire"]) >= 0.9 and report.overall.destructive == []
