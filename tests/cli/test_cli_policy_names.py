"""The shipped policies (default, strict, trusting) can be named wherever a policy is asked for."""

from __future__ import annotations

import json

import pytest

from daemon.policies.load import SHIPPED, load_policy, shipped_policy


@pytest.mark.parametrize("name", SHIPPED)
def test_policy_check_takes_a_shipped_name(name, cli):
    """``policy check NAME`` checks the shipped file of that name and prints its identity."""
    policy = load_policy(shipped_policy(name))
    done = cli("policy", "check", name)
    assert (done.code, done.out) == (0, f"ok: policy {name}@{policy.digest}, {len(policy.rules)} rules\n")


def test_policy_check_of_an_unknown_name_names_the_shipped_ones(cli, tmp_path, monkeypatch):
    """A bare name that is neither shipped nor a file: exit 2, one line naming the shipped policies."""
    monkeypatch.chdir(tmp_path)
    done = cli("policy", "check", "lenient")
    assert (done.code, done.err) == (2, "error[config]: policy 'lenient' is neither a shipped policy nor a file (shipped policies: default, strict, trusting; or give the path of a policy file)\n")


def test_a_misspelt_policy_name_suggests_the_shipped_one_meant(cli, tmp_path, monkeypatch):
    """``strct`` is one letter from ``strict``: the line says which was most likely meant."""
    monkeypatch.chdir(tmp_path)
    assert cli("policy", "check", "strct").err.startswith("error[config]: policy 'strct' is neither a shipped policy nor a file; did you mean 'strict'? (")


def test_a_store_config_with_a_misspelt_policy_is_refused_naming_the_shipped_ones(tmp_path, example_store, cli):
    """``policy = "defualt"`` in a store's config: exit 2, one line, with the name meant and the shipped ones."""
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\npolicy = "defualt"\n')
    done = cli("--config", str(config), "status")
    assert (done.code, done.err) == (2, f"error[config]: config {config}: store 'notes': policy 'defualt' is neither a shipped policy nor a file; did you mean 'default'? (shipped policies: default, strict, trusting; or give the path of a policy file)\n")


def test_a_policy_file_named_without_a_folder_is_still_read_as_a_file(cli, tmp_path, monkeypatch):
    """A bare name that is a file here is that file, not a misspelt shipped name."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").write_text('name = "mine"\n[[rules]]\ndecide = "hold"\nreason = "every proposal waits"\n')
    done = cli("policy", "check", "mine")
    assert done.code == 0 and done.out.startswith("ok: policy mine@"), done.err


def test_policy_explain_takes_a_shipped_name(example_store, cli):
    """``policy explain ID --policy trusting`` judges with the shipped trusting policy: it accepts an exact duplicate."""
    items = json.loads(cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json").out)["proposals"]
    merge = next(p for p in items if p["source"].startswith("detector:exact-duplicate"))
    done = cli("policy", "explain", str(merge["id"]), "--policy", "trusting")
    assert done.code == 0 and done.out.splitlines()[-1].startswith(f"accept by policy:trusting@{load_policy(shipped_policy('trusting')).digest}: ")


def test_a_store_config_may_name_a_shipped_policy(tmp_path, example_store, cli):
    """``policy = "strict"`` in a store's config loads the shipped strict policy, and its pass records decisions by it."""
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\npolicy = "strict"\n')
    done = cli("--config", str(config), "pass", "notes", "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["stats"]["policy"]["actor"] == f"policy:strict@{load_policy(shipped_policy('strict')).digest}"
