"""``dreamd policy check`` and ``dreamd policy explain`` on a real pass over the example store."""

from __future__ import annotations

import json
from pathlib import Path

POLICIES = Path(__file__).resolve().parents[2] / "policies"


def test_check_prints_identity_of_a_good_policy(cli):
    from daemon.policies.load import load_policy

    policy = load_policy(POLICIES / "default.toml")
    result = cli("policy", "check", str(POLICIES / "default.toml"))
    assert (result.code, result.out, result.err) == (0, f"ok: policy default@{policy.digest}, 2 rules\n", "")


def test_check_lists_every_problem_with_its_line_and_exits_2(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n\n[[rules]]\ndecide = "accept"\nkind = "merge"\n\n[[rules]]\ndecide = "hold"\ncolour = "red"\n')
    result = cli("policy", "check", str(bad))
    assert result.code == 2 and result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"error[policy]: {bad}:3: rule 1 refused:") and "lossy" in lines[0]
    assert lines[1].startswith(f"error[policy]: {bad}:9: unknown rule key 'colour'")


def test_check_reports_a_syntax_error_line(cli, tmp_path):
    bad = tmp_path / "syntax.toml"
    bad.write_text('name = "x"\n[[rules]\n')
    result = cli("policy", "check", str(bad))
    assert result.code == 2 and f"{bad}:2: TOML syntax" in result.err


def test_explain_names_the_deciding_rule(cli, example_store):
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    found = json.loads(cli("proposals", "--json").out)
    exact = next(p for p in found if p["source"].startswith("detector:exact-duplicate@"))
    near = next(p for p in found if p["source"].startswith("detector:near-duplicate@"))
    ttl = next(p for p in found if p["kind"] == "soft-expire")

    result = cli("policy", "explain", str(exact["id"]), "--policy", str(POLICIES / "default.toml"))
    assert result.code == 0, result.err
    last = result.out.splitlines()[-1]
    assert last.startswith("accept by policy:default@") and "rule 1 (line " in last and "exact duplicates lose nothing" in last

    ttl_out = cli("policy", "explain", str(ttl["id"]), "--policy", str(POLICIES / "default.toml")).out
    assert ttl_out.splitlines()[-1].startswith("accept by policy:default@") and "rule 2" in ttl_out.splitlines()[-1]

    near_out = cli("policy", "explain", str(near["id"]), "--policy", str(POLICIES / "default.toml")).out
    assert "rule 1 (line 17) [accept]: no: source detector:near-duplicate@6 matches none of detector:exact-duplicate@*" in near_out
    assert near_out.splitlines()[-1].startswith("hold by policy:default@") and "no rule matched" in near_out

    strict = cli("policy", "explain", str(exact["id"]), "--policy", str(POLICIES / "strict.toml")).out
    assert strict.splitlines()[-1].startswith("hold by policy:strict@")
    # explaining decides nothing
    assert json.loads(cli("show", str(exact["id"]), "--json").out)["state"] == "pending"


def test_explain_an_unknown_proposal_or_a_bad_policy(cli, example_store, tmp_path):
    cli("pass", "--store", str(example_store), "--preset", "deepcode")
    assert cli("policy", "explain", "999", "--policy", str(POLICIES / "default.toml")).code == 5
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    result = cli("policy", "explain", "1", "--policy", str(bad))
    assert result.code == 2 and "error[config]:" in result.err and ":1: TOML syntax" in result.err


def test_explain_reads_frontmatter_and_ages_from_the_recorded_notes(cli, example_store, tmp_path):
    """A rule on frontmatter type and note age matches the TTL proposal's note (type project, updated_at set)."""
    cli("pass", "--store", str(example_store), "--preset", "deepcode")
    ttl = next(p for p in json.loads(cli("proposals", "--json").out) if p["kind"] == "soft-expire")
    policy = tmp_path / "fm.toml"
    policy.write_text('name = "fm"\n[[rules]]\ndecide = "reject"\nfrontmatter = { type = ["project"] }\nmin_age_days = 30\n')
    out = cli("policy", "explain", str(ttl["id"]), "--policy", str(policy)).out
    assert "age unknown" not in out
    assert out.splitlines()[-1].startswith("reject by policy:fm@")
