"""The CLI contract scripts rely on: JSON keys, plain output off a terminal, one-line errors with
documented exit codes, and a light ``--help`` (no SQLAlchemy, never litellm)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


DREAMD = str(Path(sys.executable).with_name("dreamd"))
# The README's "JSON output (stable)": every proposal of show/proposals/pass --json has these keys.
DOCUMENTED = {
    "id", "store", "store_kind", "kind", "state", "paths", "source", "confidence", "lossy", "title", "rationale",
    "evidence", "base", "result", "diff", "state_reason", "reads", "pass_id", "created_at", "updated_at", "decisions",
}  # fmt: skip
REQUIRED = {"id", "store", "kind", "state", "paths", "source", "confidence", "rationale", "base", "result", "diff"}
PASS_KEYS = {"store", "status", "pass_id", "root_hash", "stats", "proposals", "skipped_files", "external_changes", "stale", "findings"}
ANSI = re.compile(r"\x1b\[")


def _pass_json(cli, store, *extra):
    done = cli("pass", "--store", str(store), "--preset", "deepcode", "--json", *extra)
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_pass_json_has_the_documented_keys(example_store, cli):
    """``pass --json`` and ``pass --dry-run --json`` print the documented report keys and proposal keys."""
    assert REQUIRED <= DOCUMENTED
    for extra in ((), ("--dry-run",)):
        report = _pass_json(cli, example_store, *extra)
        assert set(report) == PASS_KEYS
        assert report["proposals"]
        for item in report["proposals"]:
            assert set(item) == DOCUMENTED


def test_pass_json_values_have_the_documented_shapes(example_store, cli):
    """Each pass proposal maps every path to a 64-hex hash or null in base/result, and paths are the sorted result keys."""
    report = _pass_json(cli, example_store)
    hexhash = re.compile(r"^[0-9a-f]{64}$")
    for item in report["proposals"]:
        assert item["paths"] == sorted(item["result"])
        assert set(item["base"]) == set(item["result"])
        assert all(h is None or hexhash.match(h) for h in (*item["base"].values(), *item["result"].values()))
        assert item["source"].startswith("detector:") and 0.0 <= item["confidence"] <= 1.0
        assert isinstance(item["id"], int) and item["pass_id"] == report["pass_id"]
        assert item["diff"].startswith("diff --git ")


def test_proposals_and_show_json_have_the_documented_keys_and_agree(example_store, cli):
    """``proposals --json`` is a list and ``show ID --json`` one object, both with exactly the documented keys, and equal."""
    _pass_json(cli, example_store)
    listed = json.loads(cli("proposals", "--json").out)
    assert len(listed) == 6
    for item in listed:
        assert set(item) == DOCUMENTED
        shown = cli("show", str(item["id"]), "--json")
        assert shown.code == 0
        assert json.loads(shown.out) == item


def test_show_off_a_terminal_has_no_ansi_escapes(example_store, cli, db_path):
    """``dreamd show`` writing to a pipe prints the diff and header without a single escape sequence."""
    _pass_json(cli, example_store)
    done = subprocess.run([DREAMD, "show", "1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "\ndiff --git " in done.stdout
    assert not ANSI.search(done.stdout + done.stderr)


def test_show_on_a_terminal_colours_the_diff(example_store, cli):
    """On a pseudo-terminal the same ``show`` colours added and removed lines."""
    _pass_json(cli, example_store)
    leader, follower = os.openpty()
    chunks = []
    try:
        child = subprocess.Popen([DREAMD, "show", "1"], stdout=follower, stderr=subprocess.DEVNULL, env={**os.environ, "PAGER": "cat"})
        os.close(follower)
        while True:  # read while it writes, so a full terminal buffer never blocks it
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert child.wait(timeout=60) == 0
    finally:
        os.close(leader)
    text = b"".join(chunks).decode()
    assert "\x1b[32m+" in text and "\x1b[31m-" in text


def _one_line(result, code, prefix):
    assert result.code == code, result
    assert result.err.count("\n") == 1 and result.err.endswith("\n"), result.err
    assert result.err.startswith(prefix), result.err
    assert "Traceback" not in result.err + result.out


@pytest.mark.parametrize(
    ("config", "prefix"),
    [
        ("x = [\n", "error[config]: config file "),
        ("colour = true\n", "error[config]: config "),
        ('[[stores]]\nname = "a"\npath = "."\npreset = "nope"\n', "error[config]: config "),
        ('[[stores]]\nname = "a"\npath = "."\npreset = "deepcode"\nsettings = { retire = "x" }\n', "error[config]: config "),
    ],
    ids=["invalid-toml", "unknown-key", "unknown-preset", "unknown-setting"],
)
def test_bad_config_is_one_line_with_exit_2(config, prefix, tmp_path, cli):
    """Invalid TOML, an unknown key, preset or store setting: exit 2, one line, no traceback."""
    path = tmp_path / "dreamd.toml"
    path.write_text(config)
    _one_line(cli("--config", str(path), "proposals"), 2, prefix)


def test_bad_config_from_environment_is_reported_too(tmp_path, cli, monkeypatch):
    """DREAMD_CONFIG naming a file with an unknown key gives the same one-line exit 2."""
    path = tmp_path / "env.toml"
    path.write_text("colour = true\n")
    monkeypatch.setenv("DREAMD_CONFIG", str(path))
    _one_line(cli("proposals"), 2, f"error[config]: config {path}: unknown key 'colour'")


def test_unknown_preset_on_the_command_line_is_one_line_with_exit_2(example_store, cli):
    """``--preset nope`` exits 2 naming the valid presets."""
    result = cli("pass", "--store", str(example_store), "--preset", "nope")
    _one_line(result, 2, "error[config]: unknown store preset 'nope' (valid presets: claude-code, cline, deepcode, dexto, generic, serena)")


@pytest.mark.parametrize("dry", [False, True], ids=["recorded", "dry-run"])
def test_missing_store_path_is_one_line_with_exit_3(tmp_path, cli, dry):
    """A store folder that does not exist: exit 3, one line."""
    missing = tmp_path / "no-such-store"
    result = cli("pass", "--store", str(missing), "--preset", "deepcode", *(["--dry-run"] if dry else []))
    _one_line(result, 3, f"error[store]: store root {missing}: No such file or directory")
    assert not list(tmp_path.rglob("state.db")), "a typo'd store path must not create or fill a state database"


def test_database_path_that_is_a_directory_is_one_line_with_exit_4(tmp_path, cli):
    """``--db`` naming a directory: exit 4 with one line saying the database cannot be opened."""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    _one_line(cli("--db", f"sqlite:///{folder}", "proposals"), 4, f"error[state]: state database {folder} cannot be opened")


def test_locked_database_is_one_line_with_exit_4(example_store, cli, tmp_path):
    """While another connection holds the write lock, ``accept`` waits its busy timeout then exits 4 with one line."""
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    holder = sqlite3.connect(tmp_path / "xdg-state" / "dreamd" / "state.db", isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        result = cli("accept", "1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    _one_line(result, 4, "error[state]: state database ")
    assert "is locked by another process (retry, or stop the other dreamd)" in result.err
    assert json.loads(cli("show", "1", "--json").out)["state"] == "pending"


def test_debug_shows_the_traceback(example_store):
    """With --debug an error prints Python's traceback (and still exits non-zero)."""
    done = subprocess.run([DREAMD, "--debug", "show", "42"], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr
    assert "ProposalError: no proposal #42" in done.stderr


def test_python_dash_m_daemon_help_works():
    """``python -m daemon --help`` prints the usage and every command."""
    done = subprocess.run([sys.executable, "-m", "daemon", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: dreamd [OPTIONS] COMMAND [ARGS]...")
    for command in ("pass", "proposals", "show", "accept", "reject", "apply", "revert", "history", "log", "verify"):
        assert re.search(rf"^  {command} ", done.stdout, re.MULTILINE), command


def test_help_imports_neither_sqlalchemy_nor_litellm():
    """``dreamd --help`` and ``dreamd pass --help`` load no sqlalchemy, alembic or litellm module."""
    probe = textwrap.dedent(
        """
        import sys
        from daemon.cli.main import main
        for args in (["--help"], ["pass", "--help"], ["apply", "--help"]):
            try:
                main(args)
            except SystemExit as exc:
                assert exc.code == 0, exc.code
        print(sorted({m.split(".")[0] for m in sys.modules} & {"sqlalchemy", "alembic", "litellm"}), file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"


def test_no_command_imports_litellm(example_store, tmp_path):
    """Running every command once in one process never imports (or tries to import) litellm."""
    probe = textwrap.dedent(
        f"""
        import sys
        tried = []
        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "litellm":
                    tried.append(name)
                    raise ImportError("litellm must not be imported")
                return None
        sys.meta_path.insert(0, Refuse())
        from daemon.cli.main import main
        store = ["--store", {str(example_store)!r}, "--preset", "deepcode"]
        runs = [["pass", "--dry-run", *store], ["pass", *store], ["proposals"], ["show", "1"], ["accept", "1"],
                ["apply", "1"], ["revert", "1"], ["reject", "2", "--reason", "no"], ["history", *store],
                ["log", "--json"], ["verify", *store]]
        codes = []
        for args in runs:
            try:
                main(args)
            except SystemExit as exc:
                codes.append(exc.code)
        print(codes, tried, sorted(m for m in sys.modules if m.startswith("litellm")), file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] [] []"


def test_show_says_what_a_proposal_does_to_what_the_agent_reads(make_store, cli, db_url):
    """show prints the references a merge rewrites, the ones it leaves dangling with file and line, and why no policy may accept it."""
    ports = "---\nname: Ports\n---\nThe API listens on 8080.\n"
    root = make_store({
        "MEMORY.md": "# M\n- [Ports](ports.md)\n", "ports.md": ports, "ports-copy.md": ports.replace("Ports", "Ports copy"),
        "rules.md": "---\npinned: true\n---\nSee [the copy](ports-copy.md).\n", "more-rules.md": "---\npinned: true\n---\nSee [ports](ports.md).\n",
        "howto.md": "Also [the copy](ports-copy.md).\n",
    })  # fmt: skip
    assert cli("--db", db_url, "pass", "--store", str(root), "--preset", "deepcode").code == 0
    (merge,) = [p for p in json.loads(cli("--db", db_url, "proposals", "--json").out) if p["kind"] == "merge"]
    out = cli("--db", db_url, "show", str(merge["id"])).out
    assert "  references: 1 rewritten to point at the note that stays\n" in out
    assert "  holds: leaves 1 dangling reference (no policy may accept this; a person may)\n" in out
    assert "  dangling: rules.md:4 markdown 'ports-copy.md': it sits in rules.md, which is pinned\n" in out
    assert merge["reads"]["dangling"] == [{"source": "rules.md", "line": 4, "syntax": "markdown", "written": "ports-copy.md", "why": "it sits in rules.md, which is pinned"}]


def test_names_and_text_from_notes_cannot_drive_the_terminal(make_store, cli, db_url):
    """Escape sequences in a note's file name, title and body reach pass, proposals and show only as visible escapes, never raw."""
    evil_name = "evil\x1b[2J.md"
    body = "# Title \x1b]0;pwned\x07 here\nThe build runs make test before every push to main.\n"
    root = make_store({"MEMORY.md": "# M\n", evil_name: body, "copy.md": body})
    outputs = [cli("--db", db_url, "pass", "--store", str(root), "--preset", "deepcode").out]
    outputs.append(cli("--db", db_url, "proposals").out)
    ids = [p["id"] for p in json.loads(cli("--db", db_url, "proposals", "--json").out)]
    outputs += [cli("--db", db_url, "show", str(i)).out for i in ids]
    text = "".join(outputs)
    assert ids and "\x1b" not in text and "\x07" not in text
    assert "\\x1b" in text  # shown, escaped, so a reader sees what is there
