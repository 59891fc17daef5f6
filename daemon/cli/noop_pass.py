"""``dreamd pass`` over a store where nothing changed, answered before click is imported.

What cron and a timer run most (``dreamd [--config FILE] [--db URL] pass STORE``, or ``pass
--store PATH --preset NAME``, with ``--summary``/``--quiet`` or not) mostly finds nothing to
do, and click with the command modules behind it costs such a process more than a tenth of
its time. So that command line, and only in these spellings, is tried here first: the no-op
lane (``service/passes/noop.py``) records the skip when it can vouch for one, and this prints
what ``pass`` prints for a skip. Any other command line, any error, and any store the lane
steps aside for go to the whole CLI (``cli/main.py``), which decides from scratch and says
what went wrong (the lane has written nothing then).
"""

from __future__ import annotations

import gc
import sys
from typing import NamedTuple

_GLOBAL = ("--config", "--db")  # the global options taken here, each with a value
_OF_PASS = ("--store", "--preset")  # the pass options taken here, each with a value
_FLAGS = ("--summary", "--quiet")


class PassLine(NamedTuple):
    """A ``dreamd pass`` command line this module answers."""

    config: str | None = None
    db: str | None = None
    name: str | None = None
    path: str | None = None
    preset: str | None = None
    summary: bool = False


def parse(args: list[str]) -> PassLine | None:
    """The pass this command line asks for, or None when it is anything else."""
    values: dict[str, str] = {}
    positional: list[str] = []
    summary = False
    seen_pass = False
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        key, has_value, value = arg.partition("=")
        if not seen_pass and arg == "pass":
            seen_pass = True
        elif key in (_OF_PASS if seen_pass else _GLOBAL) and key not in values:
            if not has_value:
                if not rest or rest[0].startswith("-"):
                    return None
                value = rest.pop(0)
            values[key] = value
        elif seen_pass and arg in _FLAGS:
            summary = True
        elif seen_pass and arg and not arg.startswith("-") and not positional:
            positional.append(arg)
        else:
            return None
    if not seen_pass or (positional and "--store" in values) or not (positional or "--store" in values):
        return None
    return PassLine(values.get("--config"), values.get("--db"), positional[0] if positional else None, values.get("--store"), values.get("--preset"), summary)


def answer(line: PassLine) -> bool:
    """Record and print a skipped pass when the lane can vouch for one; False (nothing written
    or printed) when the whole CLI must take the command.

    The cyclic garbage collector is off meanwhile: the lane's imports and its 10,000 rows
    of stat cache set it off again and again (about 3 ms of a 0.13 s process) and it never
    finds a cycle to free; it is back as it was before the whole CLI, if that runs, or anything else."""
    collecting = gc.isenabled()  # core.heap.collector_paused, inline: the lane imports nothing it can do without
    gc.disable()
    try:
        return _answer(line)
    finally:
        if collecting:
            gc.enable()


def _answer(line: PassLine) -> bool:
    from daemon.cli.lines import one_line
    from daemon.config import load_config
    from daemon.core.errors import DreamdError
    from daemon.logs import configure
    from daemon.service.context import App, command_surface, resolve_db_url
    from daemon.service.passes import skip_named

    configure(False)
    try:
        config = load_config(line.config)
        app = App(config=config, db_url=resolve_db_url(line.db, config), surface=command_surface())
    except DreamdError:  # the whole CLI says it, in its words and with its exit code
        return False
    try:
        found = skip_named(app, line.name, line.path, line.preset)
    finally:
        app.close()
    if found is None:
        return False
    _, report = found
    try:
        if not line.summary:
            for skipped in report.skipped_files:
                print(one_line(f"skipped {skipped.path}: {skipped.reason}"), file=sys.stderr)
        print(one_line(report.summary(f"pass #{report.pass_id}")), flush=True)
    except BrokenPipeError:  # the reader left: as the whole CLI, end quietly (the skip is recorded)
        from daemon.cli.render import reader_gone

        reader_gone()
    return True
