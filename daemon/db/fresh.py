"""A new SQLite state database made at the head schema in one transaction.

Running every migration on a new file took 0.17 s, and importing Alembic 0.09 s more: a
twentieth of a first pass over 10,000 notes, paid by every first pass and by every test
that opens a database. ``head_schema.py`` holds the statements SQLite keeps for the schema
the migrations make (``sqlite_master``), and a test fails whenever the two differ; the
migrations stay the one source of the schema, for PostgreSQL and for every database that
already has tables.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from daemon.db.head_schema import REVISION, STATEMENTS
from daemon.db.quick import HEAD_REVISION


def create_at_head(engine: Engine) -> bool:
    """Make the head schema in the SQLite database of ``engine`` if it has no schema at all
    (a new or zero-byte file); whether it did. Under the write lock (``BEGIN IMMEDIATE``),
    so of two processes opening a new file at once one makes it and the other finds it made.
    False too when the statements are not this code's head revision's (the migrations run)."""
    if engine.dialect.name != "sqlite" or REVISION != HEAD_REVISION:
        return False
    with engine.begin() as conn:
        if conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
            return False
        for statement in STATEMENTS:
            conn.exec_driver_sql(statement)
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:revision)"), {"revision": REVISION})
    return True
