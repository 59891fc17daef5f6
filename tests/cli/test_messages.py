"""What a user reads when the state database, the config or an argument is broken: one line
``error[code]: ...`` with the documented exit code, never a traceback, and nothing lost.

Real files, real SQLite and real processes: a database damaged on disk, a schema altered
by hand, a config nested a hundred thousand deep, a FIFO where a file was expected, a write
lock held by a second process, a database nobody but its owner may write, a full disk.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from daemon.db.quick import HEAD_REVISION

BIG = 2**63  # the first id no SQLite or PostgreSQL row can have
REPO = Path(__file__).resolve().parents[2]
POLICY = str(REPO / "policies" / "default.toml")


def _one_line(result, code, start):
    """``result`` failed with exit ``code`` and exactly one stderr line starting with ``start``."""
    assert result.code == code, result
    assert result.err.count("\n") == 1 and result.err.endswith("\n"), result.err
    assert result.err.startswith(start), result.err
    assert "Traceback" not in result.err + result.out


def _state_line(result, what=""):
    """Exit 4 and one ``error[state]`` line (containing ``what``)."""
    _one_line(result, 4, "error[state]: state database ")
    assert what in result.err, result.err


@pytest.fixture
def recorded(example_store, tmp_path, cli):
    """A real state database written by a real pass (six pending proposals), closed again;
    returns ``(url, path)``."""
    path = tmp_path / "db" / "state" / "state.db"
    url = f"sqlite:///{path}"
    done = cli("--db", url, "pass", "--store", str(example_store), "--preset", "deepcode")
    assert done.code == 0, done.err
    assert not path.with_name("state.db-wal").exists()  # the last connection checkpointed it
    return url, path


@pytest.fixture
def config_file(example_store, tmp_path):
    """A config naming the example store (``status`` needs one)."""
    path = tmp_path / "dreamd.toml"
    path.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\n')
    return path


def _commands(store, config):
    """Every command that opens the database, as (name, args)."""
    s = str(store)
    return {
        "pass": ("pass", "--store", s, "--preset", "deepcode"),
        "pass --dry-run": ("pass", "--dry-run", "--store", s, "--preset", "deepcode"),
        "proposals": ("proposals",),
        "show": ("show", "1"),
        "accept": ("accept", "1"),
        "reject": ("reject", "2", "--reason", "no"),
        "apply": ("apply",),
        "revert": ("revert", "1"),
        "log": ("log",),
        "history": ("history", "--store", s),
        "verify": ("verify", "--store", s),
        "status": ("--config", str(config), "status"),
        "policy explain": ("policy", "explain", "1", "--policy", POLICY),
    }


READS = ("proposals", "show", "log", "history", "verify", "status", "policy explain", "pass --dry-run")


# 1. A damaged database file ------------------------------------------------------------


def _garble_schema(path: Path) -> None:
    """Overwrite the name in ``CREATE TABLE proposals`` with bytes that are not UTF-8, so
    that SQLite's "malformed database schema ... near ..." quotes them."""
    data = bytearray(path.read_bytes())
    at = data.index(b"CREATE TABLE proposals") + len(b"CREATE TABLE ")
    data[at : at + 9] = b"p \xff\xfe\xfd\xfc\xfb\xfa\xf9"
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("command", list(_commands(".", ".")))
def test_a_database_with_a_garbled_schema_is_one_state_line_for_every_command(command, recorded, example_store, config_file, cli, read_tree):
    """SQLite's complaint about a damaged schema quotes bytes that are not text (the driver
    raised UnicodeDecodeError): every command says, in one line with exit 4, that the file
    is corrupt, and neither the file nor the store is touched."""
    url, path = recorded
    _garble_schema(path)
    damaged, notes = path.read_bytes(), read_tree(example_store)
    result = cli("--db", url, *_commands(example_store, config_file)[command])
    _state_line(result, f"{path} is corrupt (move it aside and restore a backup)")
    assert path.read_bytes() == damaged
    assert read_tree(example_store) == notes


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("UPDATE proposals SET evidence = '{\"items\": [' WHERE id = 1", "is corrupt: a stored JSON value does not parse"),
        ("UPDATE proposals SET created_at = '2026-1x-01 13:40:07.000000' WHERE id = 1", "is corrupt: a stored time does not parse"),
        ("UPDATE proposals SET title = CAST(x'41ff42' AS TEXT) WHERE id = 1", "is corrupt: column 'title' holds bytes that are not UTF-8 text"),
    ],
    ids=["json", "time", "text"],
)
def test_a_damaged_value_is_one_state_line(damage, said, recorded, cli):
    """A stored value that no longer parses (a flipped bit in JSON, a time, UTF-8 text) is a
    damaged file, said in one line with exit 4, not a ValueError or the row's text."""
    url, path = recorded
    with sqlite3.connect(path) as raw:
        raw.execute(damage)
    raw.close()
    for args in (("proposals",), ("show", "1"), ("proposals", "--json")):
        _state_line(cli("--db", url, *args), said)


def test_random_bytes_anywhere_in_the_file_give_one_line_or_a_normal_answer(recorded, example_store, cli):
    """Forty-eight random bytes written into the middle of each page in turn: every read
    either works (the page was not needed) or fails with one ``error[state]`` line."""
    url, path = recorded
    clean = path.read_bytes()
    page = int.from_bytes(clean[16:18], "big")
    chance = random.Random(20261201)
    failures = []
    for start in range(page, len(clean), page):  # page 1 (the header) is covered elsewhere
        damaged = bytearray(clean)
        at = start + page // 2
        damaged[at : at + 48] = bytes(chance.randrange(256) for _ in range(48))
        path.write_bytes(bytes(damaged))
        for args in (("proposals", "--json"), ("log", "--json"), ("history", "--store", str(example_store))):
            result = cli("--db", url, *args)
            lines = result.err.splitlines()
            if result.code != 0 and not (result.code == 4 and len(lines) == 1 and lines[0].startswith("error[state]: ")):
                failures.append((start // page + 1, args[0], result.code, result.err[:200]))
    path.write_bytes(clean)
    assert failures == []


# 2. A schema altered by hand -------------------------------------------------------------


@pytest.mark.parametrize("command", ["proposals", "show", "accept", "reject", "policy explain", "verify"])
def test_a_dropped_column_is_one_line_naming_it(command, recorded, example_store, config_file, cli):
    """``ALTER TABLE proposals DROP COLUMN reads`` behind dreamd's back: one line with exit 4
    naming the missing column (not six lines of SQL), and no proposal changes state."""
    url, path = recorded
    with sqlite3.connect(path) as raw:
        raw.execute("ALTER TABLE proposals DROP COLUMN reads")
    raw.close()
    result = cli("--db", url, *_commands(example_store, config_file)[command])
    if command == "verify":  # verify reads no proposal: it still works
        assert result.code == 0, result
        return
    _one_line(result, 4, f"error[state]: state database {path} does not match this dreamd's schema: column proposals.reads is missing (")
    with sqlite3.connect(path) as raw:
        assert {state for (state,) in raw.execute("SELECT state FROM proposals")} == {"pending"}
    raw.close()


def test_an_older_schema_is_refused_by_reading_commands_and_migrated_by_a_pass(recorded, example_store, cli):
    """A command that only reads never migrates: on a database of an older dreamd it says so
    in one line (exit 4) and leaves it as it is; the next pass migrates it."""
    from alembic import command

    from daemon.db.engine import open_engine
    from daemon.db.migrating import alembic_config

    url, path = recorded
    engine = open_engine(url)
    with engine.connect() as conn:
        command.downgrade(alembic_config(conn), "-1")
        conn.commit()
    engine.dispose()
    with sqlite3.connect(path) as raw:
        (older,) = raw.execute("SELECT version_num FROM alembic_version").fetchone()
    raw.close()
    before = path.read_bytes()
    for args in (("proposals",), ("show", "1"), ("log",)):
        _one_line(cli("--db", url, *args), 4, f"error[state]: state database {path} has an older schema ({older}) than this dreamd ({HEAD_REVISION}) (")
    assert path.read_bytes() == before
    assert cli("--db", url, "pass", "--store", str(example_store), "--preset", "deepcode").code == 0
    assert cli("--db", url, "proposals").out.count("pending") == 6


# 3. A config nested too deeply -------------------------------------------------------------


@pytest.mark.parametrize("nesting", ["[" * 100_000, "{a = " * 100_000], ids=["arrays", "inline-tables"])
def test_a_deeply_nested_config_is_one_config_line(nesting, tmp_path, cli):
    """``a = [[[[...`` a hundred thousand deep: exit 2, one line naming the file (tomllib
    recursed into a RecursionError)."""
    path = tmp_path / "deep.toml"
    path.write_text(f"a = {nesting}\n")
    _one_line(cli("--config", str(path), "proposals"), 2, f"error[config]: config file {path} is not valid TOML for dreamd: its arrays or tables nest too deeply")


def test_a_deeply_nested_policy_is_one_policy_line(tmp_path, example_store, cli):
    """The same in a policy file: ``policy check`` and a config naming it, exit 2, one line."""
    policy = tmp_path / "deep-policy.toml"
    policy.write_text('name = "deep"\nrules = ' + "[" * 100_000 + "\n")
    _one_line(cli("policy", "check", str(policy)), 2, f"error[policy]: {policy}:1: TOML nests arrays or tables too deeply to read")
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\npolicy = "{policy}"\n')
    _one_line(cli("--config", str(config), "proposals"), 2, f"error[config]: {policy}:1: TOML nests arrays or tables too deeply to read")


@pytest.mark.parametrize("url", ["sqlite://relative.db", "sqlite://user@host/state.db", "sqlite://:5432/state.db"])
@pytest.mark.parametrize("command", [("proposals",), ("log",), ("pass", "--store", "{store}", "--preset", "deepcode")], ids=["proposals", "log", "pass"])
def test_a_sqlite_url_with_a_host_is_one_config_line(url, command, example_store, tmp_path, cli, monkeypatch):
    """``sqlite://relative.db`` names a host, not a file (SQLAlchemy would open an empty database
    in memory and answer "no proposals"): exit 2, one line saying how to write the path, nothing created."""
    monkeypatch.chdir(tmp_path)
    args = [part.replace("{store}", str(example_store)) for part in command]
    _one_line(cli("--db", url, *args), 2, f"error[config]: the state database URL {url} names a host, and SQLite has none: its file comes after the third slash (")
    assert not list(tmp_path.glob("*.db")) and not (tmp_path / "relative.db").exists()


# 4. Ids beyond 64 bits ---------------------------------------------------------------------


ID_COMMANDS = {
    "show": ("show",),
    "accept": ("accept",),
    "reject": ("reject", "--reason", "x"),
    "apply": ("apply",),
    "revert": ("revert",),
    "policy explain": ("policy", "explain", "--policy", POLICY),
}


@pytest.mark.parametrize("number", [BIG, 10**20, -BIG - 1], ids=["2^63", "10^20", "-2^63-1"])
@pytest.mark.parametrize("command", list(ID_COMMANDS))
def test_an_id_beyond_64_bits_is_an_unknown_proposal(command, number, recorded, cli):
    """An id no database can hold is answered like any unknown id: exit 5, one line (not an
    OverflowError from the driver)."""
    url, _ = recorded
    result = cli("--db", url, *ID_COMMANDS[command], "--", str(number))  # "--": a negative number is no option
    assert result.code == 5, result
    assert result.err == f"error[proposal]: no proposal #{number} (dreamd proposals lists them)\n"


def test_a_journal_id_beyond_64_bits_is_an_unknown_journal(recorded, cli):
    url, _ = recorded
    result = cli("--db", url, "resolve", str(BIG))
    assert (result.code, result.err) == (5, f"error[proposal]: no journal {BIG} (dreamd verify names conflicted journals)\n")


def test_accepting_a_known_and_a_too_large_id_accepts_neither(recorded, cli):
    """The ids are checked before anything is decided: proposal 1 stays pending."""
    url, _ = recorded
    result = cli("--db", url, "accept", "1", str(BIG))
    assert (result.code, result.out) == (5, "")
    assert json.loads(cli("--db", url, "show", "1", "--json").out)["state"] == "pending"


def test_the_largest_64_bit_id_is_an_ordinary_unknown_id(recorded, cli):
    url, _ = recorded
    result = cli("--db", url, "show", str(BIG - 1))
    assert (result.code, result.err) == (5, f"error[proposal]: no proposal #{BIG - 1} (dreamd proposals lists them)\n")


# 5. A FIFO where a file was expected ---------------------------------------------------


def _dreamd(*args, timeout=30, env=None, prefix=()):
    """``dreamd ARGS`` in a process of its own (``python -m daemon``)."""
    return subprocess.run([*prefix, sys.executable, "-m", "daemon", *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("command", [("proposals",), ("run",)], ids=["proposals", "run"])
def test_a_fifo_as_config_is_refused_at_once(command, tmp_path):
    """``--config`` naming a FIFO: exit 2 and one line, without waiting for a writer that
    never comes (a plain read blocks forever)."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    started = time.monotonic()
    done = _dreamd("--db", f"sqlite:///{tmp_path / 'state.db'}", "--config", str(fifo), *command)
    assert time.monotonic() - started < 20
    assert done.returncode == 2, done
    assert done.stderr == f"error[config]: config file {fifo} is a FIFO (named pipe), not a regular file (give --config the path of a TOML file)\n"


def test_a_folder_as_config_is_one_config_line(tmp_path, cli):
    _one_line(cli("--config", str(tmp_path), "proposals"), 2, f"error[config]: config file {tmp_path} is a folder, not a regular file")


def test_a_fifo_as_policy_is_refused_at_once(tmp_path, example_store):
    """A policy named as a FIFO, by ``policy check`` and by a config: exit 2, one line, at once."""
    fifo = tmp_path / "policy.toml"
    os.mkfifo(fifo)
    done = _dreamd("policy", "check", str(fifo))
    assert (done.returncode, done.stderr) == (2, f"error[policy]: {fifo}: cannot read: it is a FIFO (named pipe), not a regular file\n")
    config = tmp_path / "dreamd.toml"
    config.write_text(f'[[stores]]\nname = "notes"\npath = "{example_store}"\npreset = "deepcode"\npolicy = "{fifo}"\n')
    done = _dreamd("--config", str(config), "proposals")
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"error[config]: {fifo}: cannot read: it is a FIFO (named pipe), not a regular file") and done.stderr.count("\n") == 1


# 6. Reading while the database cannot be written ---------------------------------------------


HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "spill":
    conn.execute("PRAGMA cache_size=1")  # uncommitted pages go out into the WAL
conn.execute("BEGIN EXCLUSIVE")
conn.execute("UPDATE proposals SET title = 'uncommitted'")
if sys.argv[2] == "spill":
    conn.execute("CREATE TABLE filler(x)")
    conn.execute("INSERT INTO filler SELECT randomblob(100000) FROM proposals")
print("holding", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@pytest.mark.parametrize("held", ["lock", "spill"], ids=["lock-only", "uncommitted-pages-in-wal"])
def test_reading_commands_work_while_another_process_holds_the_write_lock(held, recorded, example_store, config_file, cli):
    """A second process holds ``BEGIN EXCLUSIVE`` with an uncommitted change: every reading
    command answers at once (no busy wait), from what was committed; a write waits its busy
    timeout and says "locked" in one line; nothing is lost."""
    url, path = recorded
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), held], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        wal = path.with_name("state.db-wal").stat().st_size
        assert (wal > 0) == (held == "spill")
        commands = _commands(example_store, config_file)
        for name in READS:
            started = time.monotonic()
            result = cli("--db", url, *commands[name])
            assert (name, result.code, result.err) == (name, 0, ""), result
            assert time.monotonic() - started < 4, name  # the busy timeout is 5 s
            assert "uncommitted" not in result.out
        if held == "lock":
            _state_line(cli("--db", url, "accept", "1"), "is locked by another process")
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    listed = json.loads(cli("--db", url, "proposals", "--json").out)
    assert [p["state"] for p in listed] == ["pending"] * 6 and "uncommitted" not in str(listed)


def test_reading_commands_write_nothing_beside_the_database(recorded, example_store, config_file, cli, snapshot_tree):
    """A reading command creates no ``-wal``/``-shm`` file and touches nothing in the folder."""
    url, path = recorded
    folder = path.parent.parent
    before = snapshot_tree(folder)
    commands = _commands(example_store, config_file)
    for name in READS:
        assert cli("--db", url, *commands[name]).code == 0, name
        assert snapshot_tree(folder) == before, name


def test_reading_commands_create_no_database(tmp_path, example_store, config_file, cli):
    """No database yet: reading commands answer as on an empty one and create nothing."""
    missing = tmp_path / "none" / "state.db"
    url = f"sqlite:///{missing}"
    assert cli("--db", url, "proposals").out == "no proposals\n"
    _one_line(cli("--db", url, "show", "1"), 5, "error[proposal]: no proposal #1 (dreamd proposals lists them)")
    assert cli("--db", url, "log").code == 0
    assert cli("--db", url, "history", "--store", str(example_store)).code == 0
    assert cli("proposals").out == "no proposals\n"  # the default database, in the state directory
    assert not missing.parent.exists() and not (tmp_path / "xdg-state").exists()


def _can_run_as_nobody() -> str | None:
    """Why dropping to the ``nobody`` user cannot be tested here, or None when it can."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to run dreamd as another user"
    probe = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", "import daemon.cli.main"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"user nobody cannot run this Python: {probe.stderr.strip()[:200]}"


@pytest.fixture
def shared(cli):
    """A world-readable folder (outside pytest's private tmp) with a store and a state
    database written by root: another user can read them and write nothing."""
    why = _can_run_as_nobody()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="dreamd-readonly-"))
    try:
        store = folder / "store"
        shutil.copytree(REPO / "examples" / "deepcode-memory", store)
        path = folder / "state" / "state.db"
        assert cli("--db", f"sqlite:///{path}", "pass", "--store", str(store), "--preset", "deepcode").code == 0
        (folder / "dreamd.toml").write_text(f'[[stores]]\nname = "notes"\npath = "{store}"\npreset = "deepcode"\n')
        for entry in [folder, *folder.rglob("*")]:
            entry.chmod(0o755 if entry.is_dir() else 0o644)
        yield folder
    finally:
        shutil.rmtree(folder)


def test_reading_commands_work_for_a_user_who_cannot_write_the_database(shared, snapshot_tree):
    """The database and its folder belong to root (0644/0755); dreamd run as ``nobody``
    reads everything, refuses writes in one line (exit 4), and leaves no file behind."""
    path = shared / "state" / "state.db"
    url = f"sqlite:///{path}"
    env = {"PATH": os.environ["PATH"], "HOME": str(shared), "XDG_STATE_HOME": str(shared / "xdg")}
    nobody = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
    before = snapshot_tree(shared)
    for name, args in _commands(shared / "store", shared / "dreamd.toml").items():
        done = _dreamd("--db", url, *args, env=env, prefix=nobody)
        if name in READS:
            assert (name, done.returncode, done.stderr) == (name, 0, ""), done
        else:
            assert done.returncode == 4 and done.stderr.count("\n") == 1, (name, done)
            assert done.stderr.startswith(f"error[state]: state database {path} "), done.stderr
    assert snapshot_tree(shared) == before


@pytest.fixture
def immutable_folder(recorded):
    """The database file and its folder marked immutable (``chattr +i``): even root cannot
    write them or create the WAL beside them."""
    _, path = recorded
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("needs root and chattr")
    marked = []
    try:
        for target in (path, path.parent):
            done = subprocess.run(["chattr", "+i", str(target)], capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"chattr +i is not supported here: {done.stderr.strip()}")
            marked.append(target)
        yield recorded
    finally:
        for target in marked:
            subprocess.run(["chattr", "-i", str(target)], check=True)


def test_reading_commands_work_on_an_immutable_database_even_as_root(immutable_folder, example_store, config_file, cli):
    url, path = immutable_folder
    before = path.read_bytes()
    commands = _commands(example_store, config_file)
    for name in READS:
        result = cli("--db", url, *commands[name])
        assert (name, result.code, result.err) == (name, 0, ""), result
    _state_line(cli("--db", url, "accept", "1"))
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["state.db"]


@pytest.fixture
def full_disk(recorded, tmp_path):
    """The database on a 1 MiB tmpfs filled to the last block; unmounted afterwards."""
    _, path = recorded
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root and mount to make a small tmpfs")
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        moved = mount / "state.db"
        shutil.copyfile(path, moved)
        filler = mount / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass  # ENOSPC: full
        finally:
            os.close(fd)
        assert os.statvfs(mount).f_bavail == 0
        yield f"sqlite:///{moved}", moved, filler
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_reading_commands_work_on_a_full_disk(full_disk, example_store, config_file, cli):
    """A full disk: reading commands work; a write says "the disk is full" in one line
    (exit 4) and loses nothing; with space again the same write goes through."""
    url, path, filler = full_disk
    before = path.read_bytes()
    commands = _commands(example_store, config_file)
    for name in READS:
        result = cli("--db", url, *commands[name])
        assert (name, result.code, result.err) == (name, 0, ""), result
    for args in (("accept", "1"), ("reject", "1", "--reason", "no")):
        _state_line(cli("--db", url, *args), "cannot grow: the disk is full (free some space, then retry)")
    assert path.read_bytes() == before
    filler.unlink()
    assert cli("--db", url, "accept", "1").out == "#1 accepted\n"
    assert [p["state"] for p in json.loads(cli("--db", url, "proposals", "--json").out)] == ["accepted"] + ["pending"] * 5
