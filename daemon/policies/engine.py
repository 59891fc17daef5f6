"""Deciding one proposal under one policy: ``evaluate``, pure, with the hard invariants.

The invariants hold whatever the rules say, also for a Policy built by hand rather than
loaded: a lossy proposal, one touching a pinned note, or one after which the agent would
read the store wrong (``Facts.holds``: dangling references, an index past what the agent
loads) is never accepted; a proposal that
retires more notes than ``max_retire`` holds; once the per-pass or per-day budget is spent,
everything holds.
"""

from __future__ import annotations

from daemon.core.proposals import MERGE
from daemon.policies.model import (
    ACCEPT,
    DEFAULT_DECISION,
    HOLD,
    Counts,
    Decision,
    Facts,
    Policy,
    Rule,
)


def rule_violations(rule: Rule) -> list[str]:
    """Hard invariants a rule breaks as written (load refuses the policy; evaluate ignores the rule)."""
    if rule.decide != ACCEPT:
        return []
    problems = []
    if rule.lossy is True:
        problems.append("a rule may not accept lossy proposals (lossy merges always wait for a person)")
    elif rule.lossy is None and (rule.kinds is None or MERGE in rule.kinds):
        problems.append(
            "an accept rule that can match merges must say lossy = false "
            "(lossy merges are never auto-accepted), or name only other kinds"
        )
    if rule.frontmatter and any("pin" in key.lower() for key in rule.frontmatter):
        problems.append("a rule may not accept pinned notes (pinned notes are never auto-accepted)")
    if rule.dangling is True:
        problems.append("a rule may not accept proposals that leave dangling references")
    return problems


def budget_spent(policy: Policy, counts: Counts) -> str | None:
    """Why every further proposal holds, whatever its facts: a spent per-pass or daily budget."""
    limits = policy.limits
    if limits.max_per_pass is not None and counts.this_pass >= limits.max_per_pass:
        return f"budget spent: {counts.this_pass} accepted in this pass (max_per_pass {limits.max_per_pass})"
    if limits.max_per_day is not None and counts.today >= limits.max_per_day:
        return f"budget spent: {counts.today} accepted today (max_per_day {limits.max_per_day})"
    return None


def evaluate(policy: Policy, facts: Facts, counts: Counts | None = None) -> Decision:
    """The decision of ``policy`` on a proposal described by ``facts``; first matching rule wins."""
    counts = counts or Counts()
    actor = policy.actor
    limits = policy.limits

    def held(reason: str, index: int | None = None, line: int | None = None) -> Decision:
        return Decision(HOLD, index, line, reason, actor)

    if limits.max_retire is not None and len(facts.retire) > limits.max_retire:
        return held(f"retires {len(facts.retire)} notes, more than max_retire {limits.max_retire}")
    spent = budget_spent(policy, counts)
    if spent:
        return held(spent)

    for index, rule in enumerate(policy.rules):
        if rule.mismatch(facts) is not None:
            continue
        where = f"rule {index + 1}" + (f" (line {rule.line})" if rule.line else "")
        because = f"{where} matched: {rule.describe()}" + (f" — {rule.reason}" if rule.reason else "")
        if rule.decide == ACCEPT:
            broken = rule_violations(rule)
            if broken:
                return held(f"{where} would accept, but {broken[0]}", index, rule.line or None)
            if facts.lossy:
                return held(f"{where} would accept, but lossy proposals are never auto-accepted", index, rule.line or None)
            if facts.pinned:
                return held(f"{where} would accept, but it touches a pinned note", index, rule.line or None)
            if facts.holds:
                return held(f"{where} would accept, but it {facts.holds[0]}: what the agent reads would be wrong", index, rule.line or None)
        return Decision(rule.decide, index, rule.line or None, because, actor)
    return Decision(DEFAULT_DECISION, None, None, f"no rule matched: {DEFAULT_DECISION} (the default)", actor)


def explain_misses(policy: Policy, facts: Facts) -> list[str]:
    """For each rule, why it did or did not match (what ``policy explain`` prints)."""
    lines = []
    for index, rule in enumerate(policy.rules):
        why = rule.mismatch(facts)
        head = f"rule {index + 1}" + (f" (line {rule.line})" if rule.line else "") + f" [{rule.decide}]"
        lines.append(f"{head}: " + ("matches" if why is None else f"no: {why}"))
    return lines
