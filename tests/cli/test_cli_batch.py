"""Batch decisions from the command line: by id or filter, all or none; unreject; revert --pass."""

from __future__ import annotations


def _pass(cli, db_url, store):
    done = cli("--db", db_url, "pass", "--store", str(store), "--preset", "deepcode", "--summary")
    assert done.code == 0, done.err


def test_accept_by_filter_and_a_bad_id_decides_nothing(example_store, cli, db_url):
    _pass(cli, db_url, example_store)
    done = cli("--db", db_url, "accept", "--kind", "merge")
    assert (done.code, done.out) == (0, "#1 accepted\n#2 accepted\n#3 accepted\n")
    bad = cli("--db", db_url, "accept", "4", "99", "5")
    assert bad.code == 5 and bad.err == "error[proposal]: nothing was accepted: #99 does not exist (dreamd proposals --state pending lists what can be decided)\n"
    assert "pending" in cli("--db", db_url, "proposals", "--state", "pending").out.split()[1]


def test_ids_and_filters_together_are_a_usage_error(example_store, cli, db_url):
    _pass(cli, db_url, example_store)
    done = cli("--db", db_url, "accept", "1", "--kind", "merge")
    assert done.code == 2 and "not both" in done.err
    assert cli("--db", db_url, "accept").code == 2


def test_unreject_and_revert_a_whole_pass(example_store, cli, db_url, read_tree):
    before = read_tree(example_store)
    _pass(cli, db_url, example_store)
    assert cli("--db", db_url, "reject", "--source", "detector:ttl@", "--reason", "keep it").code == 0
    rejected = cli("--db", db_url, "proposals", "--state", "rejected").out.split()[0]
    again = cli("--db", db_url, "unreject", rejected.lstrip("#"))
    assert (again.code, again.out) == (0, f"{rejected} pending\n")
    assert cli("--db", db_url, "accept", "--kind", "merge").code == 0
    assert cli("--db", db_url, "apply").code == 0
    reverted = cli("--db", db_url, "revert", "--pass", "1")
    assert (reverted.code, reverted.out) == (0, "#3 reverted\n#2 reverted\n#1 reverted\n")
    assert read_tree(example_store) == before
