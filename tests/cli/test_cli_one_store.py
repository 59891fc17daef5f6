"""One folder, one store: every command resolves --store PATH (or a path where a name goes)
to the same store, and a folder registered with another preset is refused, saying what to do."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

NOTES = {
    "MEMORY.md": "# Memory\n\n- [Ports](ports.md) — where things listen\n",
    "ports.md": "---\nname: Ports\n---\nThe API listens on 8080, the admin UI on 8081.\n",
    "ports-copy.md": "---\nname: Ports copy\n---\nthe API listens on 8080,  the admin UI on 8081.\n",
}


def _stores(db) -> list[tuple[str, str, str]]:  # noqa: ANN001
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT name, root, preset FROM stores ORDER BY id"))


@pytest.fixture
def here(make_store, monkeypatch, tmp_path):  # noqa: ANN001, ANN201
    root = make_store(NOTES, name="work/mem")
    monkeypatch.chdir(tmp_path / "work")
    os.symlink(root, tmp_path / "work" / "link")
    return root


def test_every_spelling_of_a_folder_is_one_store_on_every_command(here, cli, db_url, db_path):
    """Relative, ./, trailing slash, absolute and symlinked paths name the one store a first pass registered, for pass, show, proposals, apply, verify, history, log and status."""
    assert cli("--db", db_url, "pass", "--store", "mem", "--preset", "claude-code").code == 0
    spellings = ["mem", "./mem", "mem/", str(here), "link", "./link/"]
    for spelled in spellings:
        assert cli("--db", db_url, "pass", "--store", spelled).code == 0  # the registered preset is kept
        assert cli("--db", db_url, "verify", "--store", spelled).code == 0
        assert cli("--db", db_url, "verify", spelled).code == 0
        listed = json.loads(cli("--db", db_url, "proposals", "--store", spelled, "--json").out)
        assert [p["store"] for p in listed] == [str(here)]
        assert json.loads(cli("--db", db_url, "history", spelled, "--json").out)["store"] == str(here)
        assert cli("--db", db_url, "log", spelled).code == 0
        assert cli("--db", db_url, "apply", "--store", spelled).code == 0
    assert _stores(db_path) == [(str(here), str(here), "claude-code")]


def test_another_preset_for_a_registered_folder_is_refused(here, cli, db_url, db_path):
    """Naming a registered folder with another preset is a one-line config error that says what to do, and registers nothing."""
    assert cli("--db", db_url, "pass", "--store", "mem", "--preset", "claude-code").code == 0
    done = cli("--db", db_url, "pass", "--store", "./link", "--preset", "serena")
    assert done.code == 2
    assert done.err == (
        f"error[config]: ./link is already the store {str(here)!r}, with preset 'claude-code', not 'serena' "
        "(leave out --preset, or use --preset claude-code; one folder is one store, with one layout)\n"
    )
    assert _stores(db_path) == [(str(here), str(here), "claude-code")]


def _config(tmp_path, here, preset: str = "claude-code", name: str = "notes"):  # noqa: ANN001, ANN202
    path = tmp_path / "dreamd.toml"
    path.write_text(f'[[stores]]\nname = "{name}"\npath = "{here}"\npreset = "{preset}"\n')
    return str(path)


def test_a_configured_store_is_found_by_any_path_to_its_folder(here, cli, db_url, db_path, tmp_path):
    """With a config naming the folder, --store PATH and a path in place of a name mean the configured store."""
    config = _config(tmp_path, here)
    assert json.loads(cli("--config", config, "--db", db_url, "pass", "--store", "./link/", "--json").out)["store"] == "notes"
    assert [p["store"] for p in json.loads(cli("--config", config, "--db", db_url, "proposals", "--store", "mem", "--json").out)] == ["notes"]
    assert cli("--config", config, "--db", db_url, "verify", "mem/").out == "notes: clean\n"
    assert _stores(db_path) == [("notes", str(here), "claude-code")]


def test_a_configured_store_takes_over_the_history_of_its_folder(here, cli, db_url, db_path, tmp_path):
    """A folder first passed as --store PATH and then configured under a name is still one store: its history moves to the name."""
    assert cli("--db", db_url, "pass", "--store", "mem", "--preset", "claude-code").code == 0
    config = _config(tmp_path, here)
    assert cli("--config", config, "--db", db_url, "pass", "notes").code == 0
    assert _stores(db_path) == [("notes", str(here), "claude-code")]
    history = json.loads(cli("--config", config, "--db", db_url, "history", "notes", "--json").out)
    assert len(history["passes"]) == 2


def test_a_configured_store_with_another_preset_than_its_folder_had_is_refused(here, cli, db_url, db_path, tmp_path):
    """Configuring a registered folder with another preset fails the pass with one line, and changes nothing recorded."""
    assert cli("--db", db_url, "pass", "--store", "mem", "--preset", "claude-code").code == 0
    done = cli("--config", _config(tmp_path, here, preset="serena"), "--db", db_url, "pass", "notes")
    assert done.code == 2 and done.err.startswith(f"error[config]: folder {here} is already the store {str(here)!r} (preset 'claude-code')")
    assert _stores(db_path) == [(str(here), str(here), "claude-code")]


@pytest.mark.parametrize(
    "second",
    ['path = "{root}"', 'path = "{root}/"', 'path = "{root}/sub"', 'path = "{parent}"'],
    ids=["same", "trailing-slash", "nested", "around"],
)
def test_two_configured_stores_on_one_folder_are_refused_at_load(here, cli, tmp_path, second):
    """Two [[stores]] whose folders are the same, nest, or hold each other's archive are refused when the config loads."""
    (here / "sub").mkdir()
    config = tmp_path / "dreamd.toml"
    other = second.format(root=here, parent=here.parent)
    config.write_text(f'[[stores]]\nname = "a"\npath = "{here}"\npreset = "serena"\n\n[[stores]]\nname = "b"\n{other}\npreset = "generic"\n')
    done = cli("--config", str(config), "status")
    assert done.code == 2 and "overlap" in done.err and done.err.count("\n") == 1


def test_an_archive_root_beside_a_folder_cannot_be_another_store(here, cli, tmp_path):
    """A Serena store's archive root beside its notes is in its scope: a store configured there is refused."""
    archive = here.parent / "mem.dreamd-archive"
    archive.mkdir()
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "a"\npath = "{here}"\npreset = "serena"\n\n[[stores]]\nname = "b"\npath = "{archive}"\npreset = "generic"\n')
    done = cli("--config", str(config), "status")
    assert done.code == 2 and "the archive root" in done.err


def test_overlap_is_found_among_many_stores_and_names_both_in_config_order(tmp_path):
    """300 disjoint stores load; one more nested inside the 150th is refused naming that store
    first (config order) and the nested one second, with both folders."""
    from daemon.config import parse_config
    from daemon.core.errors import ConfigError

    roots = [tmp_path / f"s{i:03d}" for i in range(300)]
    for root in roots:
        root.mkdir()
    stores = [{"name": f"s{i:03d}", "path": str(root), "preset": "generic"} for i, root in enumerate(roots)]
    assert len(parse_config({"stores": stores}).stores) == 300
    (roots[150] / "inner").mkdir()
    with pytest.raises(ConfigError) as caught:
        parse_config({"stores": [{"name": "inner", "path": str(roots[150] / "inner"), "preset": "generic"}, *stores]})
    assert "stores 'inner' and 's150' overlap: the notes folder " + str(roots[150] / "inner") + " and the notes folder " + str(roots[150]) in caught.value.one_line()
