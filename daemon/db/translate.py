"""Turn database failures a user can meet into one-line ``StateError``s.

A locked, missing, corrupt or too-new state database is an operating problem, not a bug:
the user should read what is wrong and what to do, not a traceback. Constraint
violations (``IntegrityError``) are left alone, they are the caller's business (a
duplicate key means something to the repo layer); so are SQL mistakes and bad values
(``ProgrammingError``, ``DataError``, ``NotSupportedError``), which are bugs and should
show a traceback. Known messages are matched first, so PostgreSQL's "relation does not
exist" (a ``ProgrammingError``) still reads as an unmigrated database.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine, ExceptionContext
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, OperationalError

from daemon.core.errors import StateError

# (patterns searched in the driver's message, what is wrong, what to do). First match wins.
_KNOWN: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("database is locked", "database table is locked", "lock timeout", "could not obtain lock"),
        "is locked by another process",
        "retry, or stop the other dreamd",
    ),
    (
        ("file is not a database", "file is encrypted"),
        "is not an SQLite database",
        "move the file aside, or point dreamd at another database",
    ),
    (
        ("database disk image is malformed",),
        "is corrupt",
        "move it aside and restore a backup",
    ),
    (
        ("unable to open database file",),
        "cannot be opened",
        "check that the path names a file in a directory you can write",
    ),
    (
        ("readonly database", "read-only transaction"),
        "is read-only",
        "check the file's and its directory's permissions, or that the server accepts writes",
    ),
    (("database or disk is full",), "cannot grow: the disk is full", "free some space, then retry"),
    (("disk i/o error",), "hit a disk I/O error", "check the disk and filesystem, then retry"),
    (
        ("no such table", r'relation "[^"]*" does not exist'),
        "has no dreamd tables, or older ones",
        "let dreamd migrate it: open it with migrations enabled",
    ),
]

# sqlite3 reports mistakes in SQL as OperationalError too; those stay tracebacks.
_BUGS = ("syntax error", "no such column", "has no column named", "no such function")
_UNKNOWN_REVISION = re.compile(
    r"(?:can't locate revision identified by|no such revision or branch) '([^']*)'", re.IGNORECASE
)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_alembic_error(exc: BaseException) -> bool:
    """Alembic's revision errors, without importing Alembic on every start (~0.1 s):
    if it was never imported, it raised nothing."""
    if "alembic.util" not in sys.modules:
        return False
    from alembic.script.revision import ResolutionError
    from alembic.util import CommandError

    return isinstance(exc, (CommandError, ResolutionError))


def state_error_for(what: str, exc: BaseException) -> StateError | None:
    """The ``StateError`` that explains ``exc`` about ``what``, or None to let it through."""
    if isinstance(exc, IntegrityError):
        return None
    if _is_alembic_error(exc):
        match = _UNKNOWN_REVISION.search(str(exc))
        if match is None:
            return None
        return StateError(
            f"{what} was written by a newer dreamd (unknown schema revision {match.group(1)})",
            hint="upgrade dreamd, or point it at another database",
        )
    if isinstance(exc, ArgumentError):
        return StateError(
            f"{what}: the database URL is not valid ({_first_line(exc)})",
            hint="use sqlite:///PATH or postgresql+psycopg://USER@HOST/DBNAME",
        )
    if not isinstance(exc, DatabaseError):
        return None
    message = _first_line(exc)
    lowered = message.lower()
    for needles, problem, remedy in _KNOWN:
        if any(re.search(needle, lowered) for needle in needles):
            return StateError(f"{what} {problem}", hint=remedy)
    if any(bug in lowered for bug in _BUGS):
        return None
    if isinstance(exc, OperationalError) or type(exc) is DatabaseError:
        hint = "check the database server or file, then retry"
        return StateError(f"{what}: {message}", hint=hint)
    return None  # DataError, ProgrammingError, NotSupportedError...: a bug, show a traceback


@contextmanager
def translate_db_errors(what: str) -> Iterator[None]:
    """Re-raise database failures inside the block as ``StateError`` about ``what``.

    ``what`` names the database as the user knows it, e.g. "state database /x/state.db".
    """
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, (DatabaseError, ArgumentError)) and not _is_alembic_error(exc):
            raise
        error = state_error_for(what, exc)
        if error is None:
            raise
        raise error from exc


def json_reader(what: str) -> Any:
    """json.loads for a SQLite engine's JSON columns, where text that does not parse can only
    be a damaged file (dreamd wrote it as JSON): a StateError, not a traceback. It is raised
    while rows are read, where the ``handle_error`` hook does not reach."""

    def loads(text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            raise StateError(f"{what} is corrupt: a stored JSON value does not parse", hint="move it aside and restore a backup") from None

    return loads


def checked_times(engine: Engine, what: str) -> Engine:
    """Make a stored time SQLite hands back as text that does not parse a StateError, like
    ``json_reader`` does for JSON: this engine's dialect reads DateTime columns with a
    DATETIME whose parser says the file is damaged instead of raising ValueError."""
    from sqlalchemy import types
    from sqlalchemy.dialects.sqlite import DATETIME

    class CheckedDateTime(DATETIME):
        def result_processor(self, dialect: Any, coltype: Any) -> Any:
            parse = super().result_processor(dialect, coltype)

            def process(value: Any) -> Any:
                try:
                    return parse(value)
                except ValueError:
                    raise StateError(f"{what} is corrupt: a stored time does not parse", hint="move it aside and restore a backup") from None

            return process

    engine.dialect.colspecs = {**engine.dialect.colspecs, types.DateTime: CheckedDateTime}
    return engine


# a column this code's schema has and the database lacks: SQLite's and PostgreSQL's words
_MISSING_COLUMN = (
    re.compile(r"no such column: (?:(?P<table>\w+)\.)?(?P<column>\w+)"),
    re.compile(r"table (?P<table>\w+) has no column named (?P<column>\w+)"),
    re.compile(r'column "(?P<column>\w+)" of relation "(?P<table>\w+)" does not exist'),
    re.compile(r'column (?:"?(?P<table>\w+)"?\.)?"?(?P<column>\w+)"? does not exist'),
)

SQLITE_IOERR, SQLITE_CORRUPT = 10, 11  # primary result codes, whatever extended code came with them
_NOT_TEXT = re.compile(r"could not decode to utf-8 column '([^']*)'", re.IGNORECASE)


def _missing_column(message: str) -> str | None:
    """``table.column`` when ``message`` says a column of this code's schema is missing.

    A column the schema does not have is a mistake in dreamd's SQL and stays a traceback.
    """
    from daemon.db.schema import metadata

    for pattern in _MISSING_COLUMN:
        found = pattern.search(message)
        if found is None:
            continue
        table, column = found.group("table"), found.group("column")
        tables = [metadata.tables[table]] if table in metadata.tables else [] if table else list(metadata.tables.values())
        owners = [t.name for t in tables if column in t.c]
        return f"{owners[0]}.{column}" if owners else None
    return None


def _beyond_translate(what: str, exc: BaseException, *, from_driver: bool, folder: Path | None = None) -> StateError | None:
    """The failures ``translate`` leaves alone, or words too vaguely, that are the
    database's, not a bug's.

    ``from_driver``: ``exc`` is the driver's own error (its message is the database's).
    """
    if isinstance(exc, UnicodeDecodeError):  # SQLite quoting garbage bytes: a corrupt file
        return StateError(f"{what} is corrupt", hint="move it aside and restore a backup")
    if not from_driver:
        return None
    primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    message = str(exc).strip()
    message = message.splitlines()[0] if message else ""
    if primary == SQLITE_CORRUPT or message.startswith("malformed database schema"):
        # also a schema entry whose SQL no longer parses, which reads like a "syntax error"
        return StateError(f"{what} is corrupt", hint="move it aside and restore a backup")
    not_text = _NOT_TEXT.search(message)
    if not_text:
        return StateError(f"{what} is corrupt: column {not_text.group(1)!r} holds bytes that are not UTF-8 text", hint="move it aside and restore a backup")
    column = _missing_column(message)
    if column:
        return StateError(
            f"{what} does not match this dreamd's schema: column {column} is missing",
            hint="if an older dreamd wrote it, a pass migrates it; if it was changed by hand, restore a backup or point --db at another database",
        )
    if primary == SQLITE_IOERR and folder is not None and _no_space_left(folder):
        # growing the WAL index on a full disk fails as an I/O error, not as SQLITE_FULL
        return StateError(f"{what} cannot grow: the disk is full", hint="free some space, then retry")
    return None


def _no_space_left(folder: Path) -> bool:
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def error_hook(what: str, folder: Path | None = None) -> Any:
    """The ``handle_error`` hook of an engine on ``what`` (a SQLite file lives in ``folder``)."""

    def handle_error(context: ExceptionContext) -> BaseException | None:
        if context.is_pre_ping:
            return None
        original = context.original_exception
        wrapped = context.sqlalchemy_exception
        return _beyond_translate(what, original, from_driver=wrapped is not None, folder=folder) or state_error_for(what, wrapped or original)

    return handle_error
