"""`dreamd pass --all` for crontab, and one pass per store at a time."""

from __future__ import annotations

import datetime as dt
import json
import re

from daemon.config import load_config
from daemon.db import repo
from daemon.service.context import App
from daemon.service.passes.run import run_pass


def _config(tmp_path, stores):
    text = "".join(f'[[stores]]\nname = "{name}"\npath = "{path}"\npreset = "{preset}"\n' for name, path, preset in stores)
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def _hold(db_url, store_name, holder="otherhost:4242"):
    app = App(config=load_config(None), db_url=db_url, clock=lambda: dt.datetime.now(dt.timezone.utc))
    with app.engine().begin() as conn:
        store_id = repo.find_store(conn, store_name).id
        repo.acquire_lease(conn, store_id, holder, dt.datetime.now(dt.timezone.utc), dt.timedelta(hours=1))
    app.close()


def test_quiet_when_nothing_waits_for_review(tmp_path, make_store, cli, db_url):
    """A store with nothing to propose prints nothing and exits 0."""
    root = make_store({"a.md": "one fact\n", "b.md": "another fact entirely\n"})
    config = _config(tmp_path, [("tidy", root, "generic")])
    result = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert (result.code, result.out, result.err) == (0, "", "")


def test_one_line_per_store_that_needs_review(tmp_path, example_store, make_store, cli, db_url):
    """Only the store with pending proposals gets a line, naming the command to review them."""
    tidy = make_store({"a.md": "one fact\n"}, name="tidy")
    config = _config(tmp_path, [("messy", example_store, "deepcode"), ("tidy", tidy, "generic")])
    result = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert result.code == 0 and result.err == ""
    assert re.fullmatch(r"messy: (\d+) proposal\(s\) wait for a person \(\1 pending; \1 new\): dreamd review messy\n", result.out)


def test_a_failing_store_exits_11_and_the_others_still_run(tmp_path, example_store, cli, db_url):
    """A missing store folder is one error line; the other store is still passed; exit 11."""
    config = _config(tmp_path, [("gone", tmp_path / "missing", "generic"), ("messy", example_store, "deepcode")])
    result = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert result.code == 11
    assert result.err.startswith("gone: error[store]: store root ") and "messy: " in result.out


def test_a_store_held_by_another_run_is_skipped_with_exit_12(tmp_path, example_store, cli, db_url):
    """When another process holds the store, the pass is recorded as skipped with who holds it; exit 12."""
    config = _config(tmp_path, [("messy", example_store, "deepcode")])
    cli("--config", str(config), "--db", db_url, "pass", "--all")
    _hold(db_url, "messy")
    result = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert result.code == 12 and "otherhost:4242" in result.err
    history = cli("--config", str(config), "--db", db_url, "history", "messy", "--json")
    last = json.loads(history.out)["passes"][0]
    assert last["status"] == "skipped" and "otherhost:4242" in last["error"]


def test_a_pass_does_not_run_while_another_holds_the_store(example_store, make_app, db_url):
    """run_pass over a store leased by another live process records nothing but a skipped pass."""
    from daemon.config import adhoc_store

    app = make_app()
    store = adhoc_store(example_store, "deepcode")
    run_pass(app, store)
    _hold(db_url, store.name)
    report = run_pass(app, store)
    assert report.status == "busy" and report.outcomes == [] and "otherhost:4242" in report.busy


def test_a_timer_or_cron_run_records_its_surface(example_store, tmp_path, monkeypatch, cli):
    """The units and the crontab set DREAMD_SURFACE=timer: passes and events say so."""
    import json

    db = f"sqlite:///{tmp_path / 'timer.db'}"
    monkeypatch.setenv("DREAMD_SURFACE", "timer")
    done = cli("--db", db, "pass", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0, done.err
    log = json.loads(cli("--db", db, "log", "--json").out)
    assert log and {e["surface"] for e in log} == {"timer"}
    monkeypatch.setenv("DREAMD_SURFACE", "web")
    refused = cli("--db", db, "log")
    assert refused.code == 2 and "DREAMD_SURFACE='web' is not one of cli, timer" in refused.err


def test_cron_status_and_notify_count_what_waits_alike(tmp_path, example_store, cli, db_url):
    """One proposal accepted and not applied, the rest pending: the cron line, ``status`` and
    the ``[notify]`` program all count every one of them."""
    got = tmp_path / "got"
    config = tmp_path / "config.toml"
    config.write_text(f'[notify]\ncommand = ["sh", "-c", "echo $2 $4 >> {got}", "notify"]\n'
                      f'[[stores]]\nname = "messy"\npath = "{example_store}"\npreset = "deepcode"\n')  # fmt: skip
    first = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert cli("--config", str(config), "--db", db_url, "accept", "1").code == 0
    again = cli("--config", str(config), "--db", db_url, "pass", "--all")
    waiting = json.loads(cli("--config", str(config), "--db", db_url, "status", "--json").out)["stores"][0]["waiting"]
    pending = waiting - 1
    assert first.out == f"messy: {waiting} proposal(s) wait for a person ({waiting} pending; {waiting} new): dreamd review messy\n"
    assert again.out == f"messy: {waiting} proposal(s) wait for a person ({pending} pending, 1 accepted, not applied; 0 new): dreamd review messy\n"
    assert got.read_text().splitlines() == [f"{waiting} {waiting}", f"{waiting} 0"]


def test_only_accepted_proposals_waiting_point_to_apply(tmp_path, example_store, cli, db_url):
    """With nothing pending and proposals accepted, not applied, the cron line names ``dreamd apply``, and JSON has both counts."""
    config = _config(tmp_path, [("messy", example_store, "deepcode")])
    cli("--config", str(config), "--db", db_url, "pass", "--all")
    cli("--config", str(config), "--db", db_url, "accept", "--store", "messy")
    accepted = len(json.loads(cli("--config", str(config), "--db", db_url, "proposals", "--state", "accepted", "--json").out))
    done = cli("--config", str(config), "--db", db_url, "pass", "--all")
    assert done.out == f"messy: {accepted} proposal(s) wait for a person ({accepted} accepted, not applied; 0 new): dreamd apply --store messy\n"
    row = json.loads(cli("--config", str(config), "--db", db_url, "pass", "--all", "--json").out)[0]
    assert (row["pending"], row["waiting"], row["new"]) == (0, accepted, 0)
