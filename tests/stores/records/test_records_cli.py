"""The CLI on a Dexto store: the same commands, records named by key, bad input in one line."""

from __future__ import annotations

import json

import dexto_db


def test_dry_run_shows_the_retired_record_going_to_dreamds_kept_copies(cli, dexto):
    """``pass --dry-run`` prints the merge whose diff moves the duplicate under dreamd:deleted/, and the summary."""
    run = cli("pass", "--store", str(dexto), "--preset", "dexto", "--dry-run")
    assert run.code == 0
    assert "rename from memory:item:Zz9yX8wV7uT6\nrename to dreamd:deleted/memory:item:Zz9yX8wV7uT6\n" in run.out
    assert run.out.endswith(f"{dexto}: dry run (nothing written): 4 notes, 1 pending\n")


def test_pass_json_lists_record_keys_and_rows_dreamd_will_not_touch(cli, dexto):
    """``pass --json`` names the records by key and lists a row that is not JSON under skipped_files."""
    import sqlite3

    conn = sqlite3.connect(dexto, isolation_level=None)
    conn.execute("INSERT INTO kv_store (key, value) VALUES ('memory:item:broken000001', '{')")
    conn.close()
    report = json.loads(cli("pass", "--store", str(dexto), "--preset", "dexto", "--json").out)
    assert report["proposals"][0]["paths"] == ["dreamd:deleted/memory:item:Zz9yX8wV7uT6", "memory:item:Ab3dE_fG-hIj", "memory:item:Zz9yX8wV7uT6"]
    assert [s["path"] for s in report["skipped_files"]] == ["memory:item:broken000001"]
    assert report["skipped_files"][0]["reason"].startswith("invalid-json: ")


def test_accept_apply_verify_revert_on_a_record_store(cli, dexto):
    """accept, apply, verify and revert each exit 0; after revert the table is byte for byte as before."""
    before = dexto_db.values(dexto)
    cli("pass", "--store", str(dexto), "--preset", "dexto")
    assert [cli(*args).code for args in (("accept", "1"), ("apply", "1"), ("verify", "--store", str(dexto)), ("revert", "1"))] == [0, 0, 0, 0]
    assert dexto_db.values(dexto) == before


def test_a_file_that_is_not_a_database_is_one_line_and_exit_3(cli, tmp_path):
    """A text file given as a Dexto store: one error[store] line, exit code 3, the file untouched."""
    bad = tmp_path / "agent.db"
    bad.write_text("hello\n")
    run = cli("pass", "--store", str(bad), "--preset", "dexto", "--dry-run")
    assert (run.code, run.err.splitlines()[-1]) == (3, f"error[store]: {bad} is not an SQLite database (the dexto preset takes the agent's database, ~/.dexto/database/<agentId>.db)")
    assert bad.read_text() == "hello\n"


def test_memories_beyond_the_prompts_limit_are_a_finding_naming_them(cli, tmp_path):
    """Twelve memories where Dexto's prompt shows the ten newest: the pass names the two oldest, in text and JSON."""
    start = 1_733_000_000_000  # ms, as Dexto's Date.now() writes it
    memories = [dexto_db.memory(f"mem{i:09d}", f"Fact number {i}: port {8000 + i} serves service {i}.", start + i * 1_000) for i in range(12)]
    db = dexto_db.create(tmp_path / "agent.db", memories)
    run = cli("pass", "--store", str(db), "--preset", "dexto", "--dry-run")
    assert "finding [over-prompt-limit]: 12 memories, and the agent's prompt shows only the 10 newest (limit 10 in Dexto's bundled agents): 2 are never read\n" in run.err
    report = json.loads(cli("pass", "--store", str(db), "--preset", "dexto", "--json").out)
    assert report["findings"] == [{"kind": "over-prompt-limit", "detail": report["findings"][0]["detail"], "paths": ["memory:item:mem000000000", "memory:item:mem000000001"]}]
    assert report["stats"]["findings"] == 1


def test_a_store_within_the_limit_has_no_finding(cli, dexto):
    """Four memories under a limit of ten: no finding, and no findings count in the stats."""
    report = json.loads(cli("pass", "--store", str(dexto), "--preset", "dexto", "--json").out)
    assert report["findings"] == [] and "findings" not in report["stats"]


def test_show_says_a_proposal_is_about_records(cli, dexto):
    """``show --json`` gives store_kind "records" and the text names what its paths are; a folder store's say "files"."""
    cli("pass", "--store", str(dexto), "--preset", "dexto")
    shown = json.loads(cli("show", "1", "--json").out)
    assert shown["store_kind"] == "records"
    assert "\n  records: paths are record keys; a retired record is deleted from the table, its exact value kept by dreamd\n" in cli("show", "1").out


def test_a_folder_stores_proposals_are_files(cli, example_store):
    """A proposal of a folder store has store_kind "files" and no records line."""
    cli("pass", "--store", str(example_store), "--preset", "deepcode")
    shown = json.loads(cli("show", "1", "--json").out)
    assert shown["store_kind"] == "files" and "records:" not in cli("show", "1").out


def test_export_dir_writes_a_patch_of_the_renderings_that_says_it_is_about_records(cli, dexto, tmp_path):
    """``export --dir`` on a Dexto store: one patch whose header says its paths are record keys
    (applied with dreamd apply, not git apply); the database is untouched."""
    before = dexto_db.values(dexto)
    cli("pass", "--store", str(dexto), "--preset", "dexto")
    done = cli("export", "--pending", "--dir", str(tmp_path / "out"))
    assert done.code == 0, done.err
    (patch,) = sorted((tmp_path / "out").iterdir())
    assert patch.name == "1-merge-memory-item-Ab3dE_fG-hIj.patch"
    text = patch.read_text()
    assert "# store-kind: records (the paths are record keys; the diff is of their rendering: apply it with dreamd apply, not git apply)\n" in text
    assert "# apply: dreamd apply 1 (after dreamd accept 1; git cannot write a record store)\n" in text
    assert "rename to dreamd:deleted/memory:item:Zz9yX8wV7uT6\n" in text
    assert dexto_db.values(dexto) == before


def test_export_html_of_a_record_store_says_records_and_a_branch_is_refused(cli, dexto, tmp_path):
    """``export --html`` writes the report, its proposal page naming records; ``--branch`` is one
    config line (a database is not a git work tree), exit 2, nothing written."""
    cli("pass", "--store", str(dexto), "--preset", "dexto")
    assert cli("export", "--pending", "--html", str(tmp_path / "html")).code == 0
    pages = {p.name: p.read_text() for p in (tmp_path / "html").rglob("*.html")}
    (page,) = [text for name, text in pages.items() if name != "index.html"]
    assert '<span id="records">records: paths are record keys;' in page and "memory:item:Zz9yX8wV7uT6" in page
    before = dexto_db.values(dexto)
    done = cli("export", "--pending", "--branch", "review")
    assert (done.code, done.err.count("\n")) == (2, 1)
    assert done.err.startswith("error[config]: ") and "record store" in done.err
    assert dexto_db.values(dexto) == before
