"""The ``dreamd`` command's entry: a no-op ``pass`` is answered before click is imported
(cli/noop_pass.py); everything else is the whole CLI (cli/main.py). Run as the program
itself, a command ends its process without tearing the interpreter down (``end_process``)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """The command line ``argv`` (``sys.argv[1:]`` when None); ends with SystemExit, or, run as
    the program itself (``argv`` None), with the process's end."""
    args = sys.argv[1:] if argv is None else argv
    from daemon.cli.noop_pass import answer, parse

    line = parse(args)
    if line is not None and answer(line):
        if argv is None:
            end_process(0)
        sys.exit(0)
    from daemon.cli.main import main as whole

    if argv is not None:
        whole(args)
        return
    try:
        whole(args)
    except SystemExit as ended:
        end_process(ended.code)
        raise


def end_process(code: object) -> None:
    """End the process with ``code`` as an ordinary exit would, but without freeing every
    module: that teardown cost 40 to 60 ms a command (SQLAlchemy's and numpy's modules) and
    0.15 s after a first pass over 10,000 notes (its tables too), 3 % of that pass.

    What an ordinary exit does first is done here too: the exit handlers run (logging's
    among them) and stdout and stderr are flushed. Returns, for the ordinary exit to
    follow, when that exit would do more than this: a thread other than this one that
    the interpreter would wait for, a code that is not a number (printed by the ordinary
    exit), or a flush that fails (reported by it). Everything dreamd writes is closed or
    committed before a command returns; the state database keeps what was committed (its
    WAL is replayed by the next opening)."""
    import atexit
    import os

    if not (code is None or isinstance(code, int)):
        return
    threading = sys.modules.get("threading")  # not imported: no thread of its was started (nor is it imported here, 2 ms)
    if threading is not None and any(t is not threading.current_thread() and not t.daemon for t in threading.enumerate()):
        return
    run_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; elsewhere, the ordinary exit
    if run_handlers is None:
        return
    run_handlers()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: started without one (pythonw, a closed descriptor)
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)
