"""The whole of examples/eval, the stores added for issue 11 included: every labels file loads,
and the oracle over it never retires a note labeled keep."""

from __future__ import annotations

from pathlib import Path

from daemon.service.evaluate import SUFFIX, load_labels, run_eval

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "eval"


def test_every_labeled_example_loads_with_its_cases():
    """Eleven stores: 16 merge groups, 13 supersedes each naming its newer note, 9 expiries, one workspace of three commits."""
    labels = [load_labels(p) for p in sorted(EXAMPLES.glob(f"*{SUFFIX}"))]
    kinds = [kind for lab in labels for kind in lab.retire.values()]
    assert len(labels) == 11 and sum(len(lab.merges) for lab in labels) == 16
    assert (kinds.count("supersede"), kinds.count("soft-expire"), sum(len(lab.by) for lab in labels)) == (13, 9, 13)
    assert [(lab.name, len(lab.workspace)) for lab in labels if lab.workspace] == [("generic-citations", 3)]


def test_the_oracle_over_the_examples_is_never_destructive():
    """A perfect model's answers plus the detectors': no proposal retires or merges away a keep note."""
    report = run_eval(EXAMPLES, planner="oracle")
    assert len(report.stores) == 11 and report.failed == [] and report.overall.destructive == []
