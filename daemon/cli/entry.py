"""The ``dreamd`` command's entry: a no-op ``pass`` is answered before click is imported
(cli/noop_pass.py); everything else is the whole CLI (cli/main.py)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """The command line ``argv`` (``sys.argv[1:]`` when None); ends with SystemExit, or, for a
    no-op pass run as the program itself (``argv`` None), with the process's end."""
    args = sys.argv[1:] if argv is None else argv
    from daemon.cli.noop_pass import answer, parse

    line = parse(args)
    if line is not None and answer(line):
        if argv is None:
            _end_now()
        sys.exit(0)
    from daemon.cli.main import main as whole

    whole(args)


def _end_now() -> None:
    """End the process once the lane has answered, without tearing the interpreter down:
    freeing every module and the walk's tables took 8 ms of a 0.13 s no-op pass over 10,000
    notes. Nothing is left to close by then (the skip is committed, its database closed, no
    exit handler registered) but stdout and stderr, flushed here; if a flush fails, the
    ordinary exit reports it as it always has."""
    import os

    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(0)
