"""Messages about configuration that are right: a misspelt key names the one meant, a command
that needed a config says when none was loaded, and a database URL given that cannot hold a
database says so (not the state directory's variables). One line each, exit 2 or 4."""

from __future__ import annotations

from pathlib import Path

import pytest

STORE = '[[stores]]\nname = "notes"\npath = "{store}"\npreset = "deepcode"\n'


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ('polcy = "default"\n', "stores entry 1: unknown key 'polcy'; did you mean 'policy'? (allowed: apply, cron, every, jitter, llm, name, path, policy, preset, settings, workspace)"),
        ('[stores.settings]\nindex_pth = "MEMORY.md"\n', "store 'notes': unknown store setting 'index_pth'; did you mean 'index_path'? (valid settings: "),
        ('[stores.llm]\nmodle = "openai/gpt-4o-mini"\n', "store 'notes': llm: unknown key 'modle'; did you mean 'model'? (allowed: "),
        ('[notfy]\ncommand = ["true"]\n', "unknown key 'notfy'; did you mean 'notify'? (allowed: db, limits, llm, notify, planner, stores)"),
        ('[limits]\npass_second = 10\n', "limits: unknown key 'pass_second'; did you mean 'pass_seconds'? (allowed: note_seconds, pass_seconds)"),
        ('[notify]\ncommand = ["true"]\ntimeout = 3\n', "notify: unknown key 'timeout'; did you mean 'timeout_s'? (allowed: command, only_new, timeout_s)"),
    ],
    ids=["store-key", "store-setting", "llm-key", "top-key", "limits-key", "notify-key"],
)
def test_a_misspelt_config_key_names_the_key_meant(extra, said, tmp_path, example_store, cli):
    """Exit 2, one line naming the nearest valid key and the allowed ones."""
    config = tmp_path / "dreamd.toml"
    config.write_text(STORE.format(store=example_store) + extra)
    done = cli("--config", str(config), "status")
    assert done.code == 2 and done.err.count("\n") == 1
    assert done.err.startswith(f"error[config]: config {config}: "), done.err
    assert said in done.err, done.err


def test_a_key_far_from_every_valid_one_suggests_none(tmp_path, example_store, cli):
    """Nothing close: the line lists the allowed keys without guessing."""
    config = tmp_path / "dreamd.toml"
    config.write_text(STORE.format(store=example_store) + "colour = 'blue'\n")
    assert cli("--config", str(config), "status").err == f"error[config]: config {config}: stores entry 1: unknown key 'colour' (allowed: apply, cron, every, jitter, llm, name, path, policy, preset, settings, workspace)\n"


def test_a_misspelt_store_name_suggests_the_configured_one(tmp_path, example_store, cli):
    """``dreamd pass note`` with a store ``notes`` configured names it."""
    config = tmp_path / "dreamd.toml"
    config.write_text(STORE.format(store=example_store))
    assert cli("--config", str(config), "pass", "note").err.startswith("error[config]: no store named 'note'; did you mean 'notes'? (known: notes)")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("pass", "notes"), "error[config]: no store named 'notes': no config was loaded (no --config, no DREAMD_CONFIG, and no {home}) (give --config FILE, or name the folder: --store PATH --preset NAME)\n"),
        (("pass", "--all"), "error[config]: --all passes over the stores of a config, and no config was loaded (no --config, no DREAMD_CONFIG, and no {home}) (give --config FILE, or write {home} with [[stores]])\n"),
        (("status",), "error[config]: no stores yet: no config was loaded (no --config, no DREAMD_CONFIG, and no {home}), and none was used by path (add [[stores]] to {home} (or give --config FILE), or run dreamd pass --store PATH --preset NAME)\n"),
        (("run",), "error[config]: dreamd run needs a config file with [[stores]], and no config was loaded (no --config, no DREAMD_CONFIG, and no {home}) (give --config FILE, set DREAMD_CONFIG, or write {home})\n"),
    ],
    ids=["pass-name", "pass-all", "status", "run"],
)
def test_a_command_that_needed_a_config_says_none_was_loaded(args, said, tmp_path, cli):
    """With no config anywhere, the line says so and names the file that would have been read."""
    done = cli(*args)
    assert (done.code, done.err) == (2, said.format(home=tmp_path / "xdg-config" / "dreamd" / "config.toml"))


def test_a_config_without_stores_is_named_instead(tmp_path, cli):
    """A config that was loaded but has no stores: the line names that file, not a missing one."""
    config = tmp_path / "empty.toml"
    config.write_text("")
    assert cli("--config", str(config), "pass", "--all").err == f"error[config]: --all needs stores in the config: {config} has no [[stores]]\n"


@pytest.mark.parametrize("command", [("pass", "--store", "{store}", "--preset", "deepcode"), ("status",)], ids=["pass", "status"])
def test_a_db_given_under_a_file_says_which_file_is_in_the_way(command, tmp_path, example_store, cli):
    """``--db`` naming a file below a file: exit 4, one line naming the file in the way and
    advising another --db, never STATE_DIRECTORY (which would not move it)."""
    (tmp_path / "notes.txt").write_text("not a folder\n")
    db = tmp_path / "notes.txt" / "state.db"
    done = cli("--db", f"sqlite:///{db}", *(arg.format(store=example_store) for arg in command))
    assert (done.code, done.err) == (4, f"error[state]: state database {db} cannot be opened: {tmp_path / 'notes.txt'} is a file, not a folder (give --db (or DREAMD_DB, or the config's db) a file in a folder you can write)\n")


def test_a_db_given_in_a_folder_that_cannot_be_made_says_it_was_given(example_store, cli):
    """A folder that cannot be created for a --db (/proc takes no new folder, even from root):
    the line says it is the folder of the database given."""
    db = Path("/proc/dreamd-test-no-folder/state.db")
    done = cli("--db", f"sqlite:///{db}", "pass", "--store", str(example_store), "--preset", "deepcode")
    assert (done.code, done.err) == (4, f"error[state]: cannot create {db.parent}, the folder of the state database given: No such file or directory (give --db (or DREAMD_DB, or the config's db) a file in a folder you can write)\n")


def test_a_missing_model_key_is_one_line_before_the_pass_starts(tmp_path, example_store, cli, monkeypatch):
    """A model whose key variable is unset: exit 2 and one line naming the variable, with no
    pass recorded and no detector run (it was a failed model call after the whole pass)."""
    monkeypatch.delenv("DREAMD_TEST_UNSET_KEY", raising=False)
    config = tmp_path / "dreamd.toml"
    config.write_text('[llm]\nmodel = "openai/gpt-4o-mini"\napi_key_env = "DREAMD_TEST_UNSET_KEY"\n' + STORE.format(store=example_store))
    done = cli("--config", str(config), "pass", "notes")
    assert (done.code, done.out) == (2, "")
    assert done.err == ("error[model-key]: store notes: model openai/gpt-4o-mini: the environment variable DREAMD_TEST_UNSET_KEY (api_key_env) "
                        "is not set or empty; nothing was passed over (export it where dreamd runs (the units read /etc/dreamd/env))\n")  # fmt: skip
    assert cli("--config", str(config), "status", "--json").out.count('"last_pass": null') == 1
