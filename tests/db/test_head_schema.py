"""A new SQLite database is made from head_schema.py, and that is exactly the schema the
migrations make: the same tables, indexes, triggers and revision, byte for byte as SQLite
keeps them. After a new migration, rewrite head_schema.py with::

    DREAMD_WRITE_HEAD_SCHEMA=1 .venv/bin/pytest -n0 tests/db/test_head_schema.py
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from daemon.db import fresh, head_schema
from daemon.db.engine import open_engine
from daemon.db.migrating import upgrade
from daemon.db.quick import HEAD_REVISION

HEAD_SCHEMA = Path(head_schema.__file__)
KINDS = ("table", "index", "trigger", "view")  # the order they are made in: what each needs exists first


def _statements(path: Path) -> list[str]:
    """What SQLite keeps of the schema in ``path``, kind by kind, each in the order it was made
    (its own tables and automatic indexes left out: SQLite makes those)."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
    return [sql for kind in KINDS for type_, sql in rows if type_ == kind]


def _clauses(sql: str | None) -> tuple[str, ...] | None:
    """A statement as the set of its lines, one clause each: the migrations list a table's
    constraints in an order that changes from run to run (Alembic's batch mode gathers them
    in a set), and the order of constraints means nothing to SQLite (columns': see _schema)."""
    return None if sql is None else tuple(sorted(line.strip().rstrip(", ") for line in sql.split("\n")))


def _schema(path: Path) -> dict[str, object]:
    """Everything of the database's schema a difference could hide in."""
    with sqlite3.connect(path) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {
            "master": sorted(((kind, name, table, _clauses(sql)) for kind, name, table, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")), key=repr),
            "columns": {table: conn.execute(f'PRAGMA table_xinfo("{table}")').fetchall() for table in tables},
            "revision": conn.execute("SELECT version_num FROM alembic_version").fetchall(),
            "pragmas": [conn.execute(f"PRAGMA {name}").fetchall() for name in ("user_version", "application_id", "auto_vacuum", "encoding", "journal_mode")],
            "rows": {table: conn.execute(f'SELECT count(*) FROM "{table}"').fetchone() for table in tables},
        }


def _migrated(path: Path) -> Path:
    """A database at ``path`` brought to head by Alembic's run of every migration."""
    engine = open_engine(f"sqlite:///{path}", migrate=False)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return path


def _write(statements: list[str]) -> None:
    lines = [f'"""{head_schema.__doc__}"""', "", f"REVISION = {HEAD_REVISION!r}", "STATEMENTS = ("]
    lines += [f"    {statement!r}," for statement in statements]
    HEAD_SCHEMA.write_text("\n".join([*lines, ")", ""]))


def test_head_schema_is_what_the_migrations_make(tmp_path):
    wanted = _statements(_migrated(tmp_path / "migrated.db"))
    if os.environ.get("DREAMD_WRITE_HEAD_SCHEMA") == "1":
        _write(wanted)
        pytest.skip(f"wrote {HEAD_SCHEMA}")
    assert head_schema.REVISION == HEAD_REVISION, "rewrite it: see this module's docstring"
    assert [_clauses(sql) for sql in head_schema.STATEMENTS] == [_clauses(sql) for sql in wanted], "rewrite it: see this module's docstring"


def test_a_new_database_opened_is_the_migrated_one(tmp_path):
    engine = open_engine(f"sqlite:///{tmp_path / 'new.db'}")
    engine.dispose()
    assert _schema(tmp_path / "new.db") == _schema(_migrated(tmp_path / "migrated.db"))


def test_a_new_database_is_made_without_running_alembic(tmp_path):
    """Alembic is not even imported: the whole point (0.26 s of a first pass)."""
    code = textwrap.dedent(f"""
        import sys
        from daemon.db.engine import open_engine
        open_engine({f"sqlite:///{tmp_path / 'new.db'}"!r}).dispose()
        print(sorted(m for m in sys.modules if m.split(".")[0] == "alembic"))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout == "[]\n"
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD_REVISION,)]


def test_a_database_with_tables_of_its_own_is_left_to_the_migrations(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE their_notes (id INTEGER PRIMARY KEY, text TEXT)")
        conn.execute("INSERT INTO their_notes (text) VALUES ('kept')")
    engine = open_engine(f"sqlite:///{path}", migrate=False)
    try:
        assert fresh.create_at_head(engine) is False
    finally:
        engine.dispose()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("their_notes",)]
    open_engine(f"sqlite:///{path}").dispose()  # the migrations add dreamd's tables beside theirs
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT text FROM their_notes").fetchall() == [("kept",)]
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD_REVISION,)]


def test_statements_of_another_revision_are_never_used(tmp_path, monkeypatch):
    monkeypatch.setattr(fresh, "REVISION", "0012_passes_by_status")
    engine = open_engine(f"sqlite:///{tmp_path / 'new.db'}", migrate=False)
    try:
        assert fresh.create_at_head(engine) is False
    finally:
        engine.dispose()
    with sqlite3.connect(tmp_path / "new.db") as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_processes_opening_one_new_file_at_once_make_it_once(tmp_path):
    """Each waits for the write lock and finds the schema made: none fails, none makes it twice."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    go = tmp_path / "go"
    code = textwrap.dedent(f"""
        import os, time
        from daemon.db.engine import open_engine
        while not os.path.exists({str(go)!r}):
            time.sleep(0.001)
        open_engine({url!r}).dispose()
    """)
    openers = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True) for _ in range(4)]
    go.touch()
    for opener in openers:
        assert opener.wait(timeout=60) == 0, opener.stderr.read() if opener.stderr else ""
    assert _schema(tmp_path / "shared.db") == _schema(_migrated(tmp_path / "migrated.db"))
