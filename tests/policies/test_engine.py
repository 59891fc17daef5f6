"""The policy engine: each condition, first match, the default, limits and the hard invariants."""

from __future__ import annotations

import dataclasses

import pytest

from daemon.policies.engine import evaluate
from daemon.policies.model import Counts, Facts, Limits, Policy, Rule, changed_lines


def facts(**over):
    meta = {"a.md": {"type": "feedback", "owners": ["ann"]}, "b.md": {"type": "feedback", "owners": ["ann", "bo"]}}
    base = Facts("merge", "detector:exact-duplicate@1", 1.0, False, ("a.md", "b.md"), ("b.md",), 10, meta, {"a.md": 3.0, "b.md": 40.0})
    return dataclasses.replace(base, **over)


def decide(rule: Rule, f: Facts) -> str:
    return evaluate(Policy("t", (rule,), digest="0" * 12), f).decision


CASES = [
    (Rule("reject", kinds=("merge",)), facts(), facts(kind="supersede")),
    (Rule("reject", sources=("detector:exact-duplicate@*",)), facts(), facts(source="detector:near-duplicate@1")),
    (Rule("reject", sources=("model:*",)), facts(source="model:gpt-x"), facts()),
    (Rule("reject", min_confidence=0.85), facts(confidence=0.85), facts(confidence=0.84)),
    (Rule("reject", max_confidence=0.5), facts(confidence=0.5), facts(confidence=0.51)),
    (Rule("reject", lossy=True), facts(lossy=True), facts(lossy=False)),
    (Rule("reject", lossy=False), facts(lossy=False), facts(lossy=True)),
    (Rule("reject", min_notes=2), facts(), facts(notes=("a.md",))),
    (Rule("reject", max_notes=2), facts(), facts(notes=("a.md", "b.md", "c.md"))),
    (Rule("reject", paths=("*.md",)), facts(), facts(notes=())),
    (Rule("reject", paths=("scratch/**",)), facts(notes=("scratch/a.md", "scratch/x/b.md")), facts(notes=("scratch/a.md", "b.md"))),
    (Rule("reject", frontmatter={"type": ("feedback",)}), facts(), facts(frontmatter={"a.md": {"type": "feedback"}, "b.md": {"type": "user"}})),
    (Rule("reject", frontmatter={"owners": ("ann", "bo")}), facts(), facts(frontmatter={"a.md": {"owners": ["ann"]}, "b.md": {"owners": ["cy"]}})),
    (Rule("reject", frontmatter={"scope": ("team",)}), facts(frontmatter={"a.md": {"scope": "team"}, "b.md": {"scope": "team"}}), facts()),
    (Rule("reject", frontmatter={"type": ("feedback",)}), facts(), facts(frontmatter={"a.md": {"type": "feedback"}})),  # b.md unknown
    (Rule("reject", min_age_days=3), facts(), facts(ages_days={"a.md": 2.0, "b.md": 40.0})),
    (Rule("reject", max_age_days=40), facts(), facts(ages_days={"a.md": 3.0, "b.md": 41.0})),
    (Rule("reject", max_age_days=40), facts(), facts(ages_days={"a.md": 3.0})),  # b.md's age unknown
    (Rule("reject", max_changed_lines=10), facts(), facts(changed_lines=11)),
    (Rule("reject", dangling=True), facts(dangling=2), facts()),
    (Rule("reject", dangling=False), facts(), facts(dangling=1)),
]


@pytest.mark.parametrize(("rule", "hit", "miss"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_each_condition_matches_and_misses(rule, hit, miss):
    """A rule decides when its condition holds, and the default (hold) applies when it does not."""
    assert decide(rule, hit) == "reject"
    assert decide(rule, miss) == "hold"


def test_first_matching_rule_decides_and_reports_itself():
    """Rules are tried in order; the first match wins, with its index, line, reason and the policy as actor."""
    policy = Policy("p", (Rule("hold", kinds=("supersede",), line=3), Rule("reject", line=7, reason="no"), Rule("accept", lossy=False, line=9)), digest="abc123abc123")
    d = evaluate(policy, facts())
    assert (d.decision, d.rule_index, d.rule_line, d.actor) == ("reject", 1, 7, "policy:p@abc123abc123")
    assert "rule 2 (line 7)" in d.reason and "no" in d.reason


def test_no_rule_matches_holds_by_default():
    d = evaluate(Policy("empty"), facts())
    assert (d.decision, d.rule_index, d.rule_line) == ("hold", None, None)
    assert "default" in d.reason


def test_lossy_is_never_accepted_even_by_a_hand_built_policy():
    """A rule built without the loader that would accept a lossy merge holds instead, and says why."""
    for rule in (Rule("accept"), Rule("accept", lossy=True), Rule("accept", kinds=("merge",))):
        d = evaluate(Policy("hand", (rule,)), facts(lossy=True))
        assert d.decision == "hold" and "lossy" in d.reason
    # a non-lossy proposal under an accept rule with no lossy condition (not loadable) still holds
    assert evaluate(Policy("hand", (Rule("accept"),)), facts()).decision == "hold"
    # written correctly, the rule accepts non-lossy proposals
    assert evaluate(Policy("ok", (Rule("accept", lossy=False),)), facts()).decision == "accept"


def test_pinned_notes_are_never_accepted():
    d = evaluate(Policy("p", (Rule("accept", lossy=False),)), facts(pinned=True))
    assert d.decision == "hold" and "pinned" in d.reason


@pytest.mark.parametrize("holds", [("leaves 2 dangling references",), ("pushes 1 index entry past what the agent loads (200 lines)",)])
def test_what_the_agent_would_read_wrong_is_never_accepted(holds):
    """A proposal after which the agent would read the store wrong holds under an accept rule, naming why; a reject rule still rejects it."""
    accept = Policy("p", (Rule("accept", lossy=False),))
    d = evaluate(accept, facts(holds=holds, dangling=2))
    assert d.decision == "hold" and holds[0] in d.reason
    assert evaluate(Policy("p", (Rule("reject"),)), facts(holds=holds)).decision == "reject"
    assert evaluate(accept, facts()).decision == "accept"  # the control: the same rule accepts without the fact


def test_a_rule_accepting_dangling_references_is_a_violation():
    """A rule that would accept proposals leaving dangling references breaks an invariant as written."""
    from daemon.policies.engine import rule_violations

    assert rule_violations(Rule("accept", lossy=False, dangling=True)) == ["a rule may not accept proposals that leave dangling references"]
    assert rule_violations(Rule("accept", lossy=False, dangling=False)) == []


def test_max_retire_holds_big_proposals():
    policy = Policy("p", (Rule("accept", lossy=False),), Limits(max_retire=1))
    assert evaluate(policy, facts()).decision == "accept"
    d = evaluate(policy, facts(retire=("b.md", "c.md")))
    assert d.decision == "hold" and "max_retire 1" in d.reason


@pytest.mark.parametrize(("limits", "counts", "word"), [
    (Limits(max_per_pass=2), Counts(this_pass=2), "max_per_pass 2"),
    (Limits(max_per_day=5), Counts(this_pass=0, today=5), "max_per_day 5"),
])  # fmt: skip
def test_budgets_hold_everything_once_spent(limits, counts, word):
    policy = Policy("p", (Rule("accept", lossy=False, kinds=("merge",)), Rule("reject")), limits)
    assert evaluate(policy, facts(), Counts(this_pass=counts.this_pass - 1 if counts.this_pass else 0, today=max(counts.today - 1, 0))).decision == "accept"
    for f in (facts(), facts(kind="supersede")):
        d = evaluate(policy, f, counts)
        assert d.decision == "hold" and word in d.reason


def test_changed_lines_counts_plus_and_minus_but_not_headers():
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n+more\n"
    assert changed_lines(diff) == 3
