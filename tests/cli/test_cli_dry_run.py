"""``dreamd pass --dry-run`` prints what would be proposed and writes nothing anywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DREAMD = str(Path(sys.executable).with_name("dreamd"))


def test_dry_run_console_script_with_no_state_creates_nothing(example_store, tmp_path, snapshot_tree):
    """The installed ``dreamd`` on a machine with no state prints six proposals with diffs and creates no state directory."""
    before = snapshot_tree(example_store)
    done = subprocess.run([DREAMD, "pass", "--dry-run", "--store", str(example_store), "--preset", "deepcode"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("(dry run) ") == 6
    assert done.stdout.count("\ndiff --git ") == 10  # one section a file; a note moved into the archive is one rename
    assert done.stdout.endswith(f"{example_store}: dry run (nothing written): 11 notes, 6 pending\n")
    assert not (tmp_path / "xdg-state").exists()
    assert snapshot_tree(example_store) == before


def test_dry_run_after_a_recorded_pass_leaves_database_folder_byte_for_byte(example_store, tmp_path, cli, snapshot_tree):
    """After a recorded CLI pass, a CLI dry run leaves the state folder (db, -wal/-shm, listing, mtimes) and the store unchanged."""
    state = tmp_path / "xdg-state" / "dreamd"
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    db_before, store_before = snapshot_tree(state), snapshot_tree(example_store)
    assert sorted(db_before) == ["state.db"]
    done = cli("pass", "--dry-run", "--store", str(example_store), "--preset", "deepcode", "--json")
    assert done.code == 0
    assert snapshot_tree(state) == db_before
    assert snapshot_tree(example_store) == store_before


def test_dry_run_json_marks_already_proposed_changes_as_duplicates(example_store, cli):
    """A dry run after a recorded pass reports each change as a duplicate of the stored proposal, with no new id."""
    import json

    first = json.loads(cli("pass", "--store", str(example_store), "--preset", "deepcode", "--json").out)
    dry = json.loads(cli("pass", "--dry-run", "--store", str(example_store), "--preset", "deepcode", "--json").out)
    assert dry["status"] == "dry-run" and dry["pass_id"] is None
    assert [(p["state"], p["id"]) for p in dry["proposals"]] == [("duplicate", p["id"]) for p in first["proposals"]]


def test_dry_run_of_a_store_named_by_its_recorded_name_touches_no_state_file_or_folder(example_store, tmp_path, cli, snapshot_tree):
    """Naming the store as an earlier pass recorded it (its path) leaves the state folder's files, listing and own mtime unchanged."""
    import os

    state = tmp_path / "xdg-state" / "dreamd"
    assert cli("pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    before, folder_mtime = snapshot_tree(state), os.stat(state).st_mtime_ns
    done = cli("pass", str(example_store), "--dry-run")
    assert done.code == 0, done.err
    assert done.out.endswith(f"{example_store}: dry run (nothing written): 11 notes, 6 duplicate\n")
    assert snapshot_tree(state) == before
    assert os.stat(state).st_mtime_ns == folder_mtime


def test_dry_run_with_a_mistyped_store_name_creates_no_database(tmp_path, cli):
    """``dreamd pass typo --dry-run`` on a machine with no state fails with one config line and creates no state folder."""
    done = cli("pass", "typo", "--dry-run")
    assert done.code == 2
    assert done.err.startswith("error[config]: no store named 'typo': no config was loaded (")
    assert not (tmp_path / "xdg-state").exists()


def test_a_dry_run_over_a_corrupt_database_is_one_state_error_line(example_store, tmp_path, cli):
    """The read-only look at the database translates errors like every other open."""
    broken = tmp_path / "state.db"
    broken.write_bytes(b"not a database at all" * 300)
    done = cli("--db", f"sqlite:///{broken}", "pass", "--dry-run", "--store", str(example_store), "--preset", "deepcode")
    assert done.code == 4
    assert done.err.strip().splitlines() == [done.err.strip()] and done.err.startswith("error[state]: state database")
    assert broken.read_bytes() == b"not a database at all" * 300
