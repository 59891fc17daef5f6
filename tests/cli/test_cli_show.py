"""``show`` takes several ids and ``--stat``, and pages long output on a terminal, like git."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DREAMD = str(Path(sys.executable).with_name("dreamd"))


def _passed(cli, db_url, store):
    assert cli("--db", db_url, "pass", "--store", str(store), "--preset", "deepcode", "--summary").code == 0


def test_stat_lists_files_with_renames_and_line_counts(example_store, cli, db_url):
    _passed(cli, db_url, example_store)
    done = cli("--db", db_url, "show", "1", "2", "--stat")
    assert done.code == 0, done.err
    assert done.out.count("\n#") == 1 and done.out.startswith("#1 ")  # both, one after the other
    assert " build-commands-copy.md => .dreamd-archive/build-commands-copy.md | +3 -0\n" in done.out
    assert " MEMORY.md | +0 -1\n" in done.out and "@@" not in done.out


def test_several_ids_as_json_are_a_list(example_store, cli, db_url):
    import json

    _passed(cli, db_url, example_store)
    assert [p["id"] for p in json.loads(cli("--db", db_url, "show", "2", "1", "--json").out)] == [2, 1]
    assert json.loads(cli("--db", db_url, "show", "1", "--json").out)["id"] == 1


def test_long_output_on_a_terminal_goes_through_the_pager(example_store, cli, db_url, tmp_path):
    """On a pseudo-terminal of 10 lines, ``show`` hands its text to ``$PAGER``; off a terminal it never does."""
    _passed(cli, db_url, example_store)
    paged = tmp_path / "paged.txt"
    pager = tmp_path / "pager"
    pager.write_text(f"#!/bin/sh\ncat > {paged}\n")
    pager.chmod(0o755)
    env = {**os.environ, "PAGER": str(pager), "LINES": "10", "COLUMNS": "80"}
    leader, follower = os.openpty()
    try:
        child = subprocess.Popen([DREAMD, "--db", db_url, "show", "1"], stdin=follower, stdout=follower, stderr=subprocess.DEVNULL, env=env)
        os.close(follower)
        assert child.wait(timeout=60) == 0
    finally:
        os.close(leader)
    assert "#1 merge [pending]" in paged.read_text().splitlines()[0]  # coloured for the terminal it pages to
    paged.unlink()
    piped = subprocess.run([DREAMD, "--db", db_url, "show", "1"], capture_output=True, text=True, env=env, timeout=60)
    assert piped.stdout.startswith("#1 merge [pending]") and not paged.exists()


RENAMED = {
    "MEMORY.md": "- [BGA player metadata](project_bga_player_metadata.md) — how player data is fetched\n- [Deploy](deploy.md) — deploy steps\n",
    "project_bga_player_metadata.md": "---\ndescription: player data\ntype: project\n---\nPlayer records come from the game site's table pages.\n",
    "deploy.md": "---\ndescription: deploy steps\ntype: project\n---\nDeploy with make release.\n\nBefore deploying, check the player data\n"
                 "as described in [[project-bga-player-metadata]] and\nthen tag the release.\n",
}  # fmt: skip


def test_a_near_miss_link_is_offered_as_a_repoint_with_the_lines_around_it_quoted(make_store, cli, db_url):
    """``[[project-bga-player-metadata]]`` when ``project_bga_player_metadata.md`` exists: ``show``
    offers the repoint, and its evidence quotes the link's line with the lines around it."""
    root = make_store(RENAMED, name="claude")
    assert cli("--db", db_url, "pass", "--store", str(root), "--preset", "claude-code", "--summary").code == 0
    done = cli("--db", db_url, "show", "1")
    assert done.out.startswith("#1 relink [pending] Repoint 1 reference in deploy.md\n"), done.out
    assert ("  evidence: deploy.md:7-9\n    | Before deploying, check the player data\n"
            "    | as described in [[project-bga-player-metadata]] and\n    | then tag the release.\n") in done.out  # fmt: skip
    assert "+as described in [[project_bga_player_metadata]] and\n" in done.out


def test_a_long_quote_shows_its_first_lines_and_counts_the_rest():
    """An evidence quote of eight lines shows five, each as it reads, and says three more."""
    from daemon.cli.render import evidence_lines

    quote = "\n".join(f"line {n}" for n in range(1, 9))
    assert evidence_lines({"path": "a.md", "start": 3, "end": 10, "quote": quote}) == [
        "  evidence: a.md:3-10", *[f"    | line {n}" for n in range(1, 6)], "    | … 3 more line(s)"]  # fmt: skip
