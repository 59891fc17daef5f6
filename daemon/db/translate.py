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

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

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
