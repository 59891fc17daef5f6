"""Loading policy files: line-numbered errors, the hard invariants, identity, the shipped policies."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.core.errors import ConfigError
from daemon.core.hashing import hash_bytes
from daemon.policies.engine import evaluate
from daemon.policies.load import PolicyError, load_policy, parse_policy
from daemon.policies.model import Counts, Facts

SHIPPED = Path(__file__).resolve().parents[2] / "policies"


def problems(text: str) -> list[str]:
    with pytest.raises(PolicyError) as raised:
        parse_policy(text.encode(), "p.toml")
    assert isinstance(raised.value, ConfigError) and raised.value.exit_code == 2
    return raised.value.problems


def test_identity_is_name_and_blake3_of_the_bytes(tmp_path):
    data = b'name = "mine"\n\n[[rules]]\ndecide = "hold"\n'
    (tmp_path / "p.toml").write_bytes(data)
    policy = load_policy(tmp_path / "p.toml")
    assert policy.actor == f"policy:mine@{hash_bytes(data)[:12]}"
    assert policy.rules[0].line == 3


def test_syntax_errors_carry_the_line():
    assert problems('name = "x"\n\n[[rules]]\ndecide = \n') == ["p.toml:4: TOML syntax: Invalid value"]


def test_semantic_errors_name_the_line_of_the_key_or_rule():
    text = (
        'name = "x"\n'             # 1
        "colour = 1\n"            # 2
        "[limits]\n"              # 3
        "max_per_pass = -1\n"     # 4
        "max_budget = 3\n"        # 5
        "[[rules]]\n"             # 6
        'decide = "hold"\n'       # 7
        "[[rules]]\n"             # 8
        'decide = "maybe"\n'      # 9
        'kind = ["merge", "explode"]\n'  # 10
        "min_confidence = 1.5\n"  # 11
        "[[rules]]\n"             # 12
        'kind = "merge"\n'        # 13
        "[[rules]]\n"             # 14
        'decide = "hold"\n'       # 15
        "min_notes = 3\n"         # 16
        "max_notes = 2\n"         # 17
        "frontmatter = 3\n"       # 18
    )  # fmt: skip
    found = problems(text)
    lines = [p.split(":")[1] for p in found]
    assert lines == ["2", "4", "5", "9", "10", "11", "12", "16", "18"], found
    assert "unknown policy key 'colour'" in found[0]
    assert "'explode' is not one of" in found[4]
    assert "needs decide" in found[6]
    assert "never match" in found[7]


@pytest.mark.parametrize("rule", [
    'decide = "accept"\nkind = "merge"\n',
    'decide = "accept"\n',
    'decide = "accept"\nsource = "model:*"\nmin_confidence = 0.9\n',
    'decide = "accept"\nkind = "soft-expire"\nlossy = true\n',
])  # fmt: skip
def test_a_rule_that_could_accept_a_lossy_merge_is_refused_at_load(rule):
    found = problems(f'name = "greedy"\n\n[[rules]]\n{rule}')
    assert len(found) == 1 and found[0].startswith("p.toml:3: rule 1 refused:") and "lossy" in found[0]


def test_accepting_other_kinds_without_lossy_is_fine_and_lossy_false_merges_too():
    parse_policy(b'name = "a"\n[[rules]]\ndecide = "accept"\nkind = ["soft-expire", "reindex"]\n')
    parse_policy(b'name = "a"\n[[rules]]\ndecide = "accept"\nkind = "merge"\nlossy = false\n')
    parse_policy(b'name = "a"\n[[rules]]\ndecide = "reject"\nlossy = true\n')


@pytest.mark.parametrize(("text", "line"), [
    ('name = "x"\nallow_pinned = true\n', 2),
    ('name = "x"\n[[rules]]\ndecide = "hold"\nskip_cas = true\n', 4),
    ('name = "x"\n[[rules]]\ndecide = "hold"\nignore_scope = true\n', 4),
    ('name = "x"\n[limits]\ncompare_and_swap = false\n', 3),
    ('name = "x"\n[[rules]]\ndecide = "hold"\npinned = true\n', 4),
])  # fmt: skip
def test_settings_about_pinned_scope_or_cas_are_refused(text, line):
    found = problems(text)
    assert found == [f"p.toml:{line}: {found[0].split(': ', 1)[1]}"]
    assert "hard invariants" in found[0]


def test_an_accept_rule_naming_pinned_notes_is_refused():
    found = problems('name = "x"\n[[rules]]\ndecide = "accept"\nkind = "supersede"\nfrontmatter = { pinned = true }\n')
    assert len(found) == 1 and "pinned" in found[0] and found[0].startswith("p.toml:2:")


def test_a_missing_name_and_an_unreadable_file(tmp_path):
    assert "name" in problems('[[rules]]\ndecide = "hold"\n')[0]
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "absent.toml")


def shipped(name: str):
    return load_policy(SHIPPED / f"{name}.toml")


EXACT = Facts("merge", "detector:exact-duplicate@1", 1.0, False, ("a.md", "b.md"), ("b.md",))
TTL = Facts("soft-expire", "detector:ttl@2", 0.95, False, ("old.md",), ("old.md",))
NEAR = Facts("merge", "detector:near-duplicate@1", 0.9, False, ("a.md", "b.md"), ("b.md",))
MODEL = Facts("merge", "model:some-llm", 0.9, False, ("a.md", "b.md"), ("b.md",))
MODEL_UNSURE = Facts("merge", "model:some-llm", 0.8, False, ("a.md", "b.md"), ("b.md",))
MODEL_LOSSY = Facts("merge", "model:some-llm", 0.99, True, ("a.md", "b.md"), ("b.md",))
SUPERSEDE = Facts("supersede", "detector:declared-supersession@1", 0.95, False, ("v1.md", "v2.md"), ("v1.md",))
REINDEX = Facts("reindex", "detector:index-drift@1", 0.9, False, ("MEMORY.md",))
ALL = [EXACT, TTL, NEAR, MODEL, MODEL_UNSURE, MODEL_LOSSY, SUPERSEDE, REINDEX]


@pytest.mark.parametrize(("name", "accepted"), [
    ("default", [EXACT, TTL]),
    ("strict", []),
    ("trusting", [EXACT, TTL, MODEL]),
])  # fmt: skip
def test_shipped_policies_load_and_behave_as_described(name, accepted):
    policy = shipped(name)
    assert policy.name == name and policy.actor.startswith(f"policy:{name}@")
    for f in ALL:
        expected = "accept" if any(f is a for a in accepted) else "hold"
        assert evaluate(policy, f).decision == expected, (name, f)


def test_shipped_budgets_hold_once_spent():
    policy = shipped("default")
    assert evaluate(policy, EXACT, Counts(this_pass=policy.limits.max_per_pass)).decision == "hold"
    assert evaluate(policy, EXACT, Counts(today=policy.limits.max_per_day)).decision == "hold"
