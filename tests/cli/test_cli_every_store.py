"""Commands whose store is optional (history, log, verify, status) cover every store when none
is named: the configured ones and those registered by path, never "which store?"."""

from __future__ import annotations

import json

import pytest

DUPLICATE = "---\nname: build\n---\n\nBuild with make all; the binary lands in out/.\n"


@pytest.fixture
def two_stores(tmp_path, example_store, make_store, cli):
    """A configured store "notes" and a store used by path, one pass over each; returns (config, path store)."""
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\n')
    loose = make_store({"a.md": DUPLICATE, "b.md": DUPLICATE}, name="loose")
    assert cli("--config", str(config), "pass", "notes", "--summary").code == 0
    assert cli("--config", str(config), "pass", "--store", str(loose), "--preset", "generic", "--summary").code == 0
    return str(config), str(loose)


def test_history_with_no_store_lists_every_store(two_stores, cli):
    """``history --json`` with no store is a list with one object per store, configured and by path."""
    config, loose = two_stores
    shown = json.loads(cli("--config", config, "history", "--json").out)
    assert [(h["store"], len(h["passes"])) for h in shown] == [(loose, 1), ("notes", 1)]


def test_history_text_with_no_store_heads_each_store(two_stores, cli):
    """Text ``history`` with no store names each store on its own line before its passes."""
    config, loose = two_stores
    out = cli("--config", config, "history").out.splitlines()
    assert out[0] == f"{loose}:" and out.index("notes:") > 0
    assert sum(line.startswith("pass #") for line in out) == 2


def test_history_of_a_named_store_is_still_one_object(two_stores, cli):
    """``history notes --json`` stays one object, not a list."""
    config, _ = two_stores
    assert json.loads(cli("--config", config, "history", "notes", "--json").out)["store"] == "notes"


def test_verify_with_no_store_checks_every_store(two_stores, cli):
    """``verify`` with no store says each store is clean, exit 0."""
    config, loose = two_stores
    done = cli("--config", config, "verify")
    assert (done.code, done.out, done.err) == (0, f"{loose}: clean\nnotes: clean\n", "")


def test_verify_with_no_store_exits_8_when_one_store_changed(two_stores, cli, example_store):
    """A note edited behind dreamd's back in one store: ``verify --json`` lists both, only that one not clean, exit 8."""
    config, loose = two_stores
    (example_store / "testing-setup.md").write_text("changed by hand\n")
    done = cli("--config", config, "verify", "--json")
    assert done.code == 8
    assert [(v["store"], v["clean"], v["problems"]) for v in json.loads(done.out)] == [
        (loose, True, []), ("notes", False, ["testing-setup.md: modified since dreamd last recorded the store"])
    ]


def test_log_with_no_store_holds_the_events_of_every_store(two_stores, cli):
    """``log --json`` with no store holds events of the configured store and the one used by path."""
    config, loose = two_stores
    assert {e["store"] for e in json.loads(cli("--config", config, "log", "--json").out)} == {loose, "notes"}


def test_status_shows_stores_used_by_path_with_no_schedule(two_stores, cli):
    """``status --json`` lists the store used by path too; its schedule is null (the daemon does not pass over it)."""
    config, loose = two_stores
    rows = {r["store"]: r for r in json.loads(cli("--config", config, "status", "--json").out)["stores"]}
    assert (sorted(rows), rows[loose]["schedule"], rows["notes"]["schedule"]) == ([loose, "notes"], None, "every 6h (jitter 1m)")


def test_status_counts_what_waits_and_since_when(two_stores, cli):
    """``status --json`` gives per store how many proposals wait (pending or accepted) and the oldest one's created_at."""
    config, loose = two_stores
    proposals = json.loads(cli("--config", config, "proposals", "--store", loose, "--json").out)
    cli("--config", config, "accept", str(proposals[0]["id"]))
    row = next(r for r in json.loads(cli("--config", config, "status", "--json").out)["stores"] if r["store"] == loose)
    assert (row["proposals"], row["waiting"], row["waiting_since"]) == ({"accepted": 1}, 1, proposals[0]["created_at"])


def test_status_text_says_waiting_since(two_stores, cli):
    """Text ``status`` ends each store's line with what waits and since when, and says when nothing does."""
    config, loose = two_stores
    oldest = {name: json.loads(cli("--config", config, "proposals", "--store", name, "--json").out)[0]["created_at"][:19] for name in (loose, "notes")}
    lines = cli("--config", config, "status").out.splitlines()
    assert lines[2].startswith(f"{loose}: not scheduled (used by path; the daemon passes over configured stores); last #2 completed ")
    assert lines[2].endswith(f"; 1 pending, waiting since {oldest[loose]}")
    assert lines[3].startswith("notes: every 6h (jitter 1m); next: (daemon not running); last #1 completed ")
    assert lines[3].endswith(f"; 6 pending, waiting since {oldest['notes']}")


def test_status_with_nothing_waiting_says_so(tmp_path, make_store, cli):
    """A store whose pass proposed nothing: ``status`` says nothing waits, and ``waiting_since`` is null."""
    lone = make_store({"a.md": "---\nname: a\n---\n\nOne note.\n"}, name="lone")
    cli("pass", "--store", str(lone), "--preset", "generic")
    assert cli("status").out.endswith("; nothing waits\n")
    assert json.loads(cli("status", "--json").out)["stores"][0]["waiting_since"] is None


def test_status_with_no_store_at_all_gives_advice_that_works(tmp_path, make_store, cli):
    """With no store configured or used, ``status`` exits 2 with advice; doing what it says makes status answer."""
    done = cli("status")
    assert (done.code, done.out) == (2, "")
    home = tmp_path / "xdg-config" / "dreamd" / "config.toml"
    assert done.err == (
        f"error[config]: no stores yet: no config was loaded (no --config, no DREAMD_CONFIG, and no {home}), and none was used by path "
        f"(add [[stores]] to {home} (or give --config FILE), or run dreamd pass --store PATH --preset NAME)\n"
    )
    lone = make_store({"a.md": DUPLICATE, "b.md": DUPLICATE}, name="lone")
    cli("pass", "--store", str(lone), "--preset", "generic")
    assert cli("status").code == 0


def test_status_says_where_the_state_database_lives(two_stores, cli, tmp_path):
    """Text ``status`` starts with the state database's file, and ``--json`` has it as ``database``."""
    config, _ = two_stores
    db_path = tmp_path / "xdg-state" / "dreamd" / "state.db"  # the default: in the state directory
    assert cli("--config", config, "status").out.splitlines()[:2] == [f"state database: {db_path}", "daemon: not running on this host"]
    assert json.loads(cli("--config", config, "status", "--json").out)["database"] == str(db_path)


def test_status_names_a_server_database_without_its_password():
    """A PostgreSQL URL is shown with its password masked (the database need not be reachable to say where it is)."""
    from daemon.service.status import database_location

    assert database_location("postgresql+psycopg://dreamd:secret@db.example:5432/dreamd") == "postgresql+psycopg://dreamd:***@db.example:5432/dreamd"
