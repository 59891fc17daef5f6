"""A progress bar on stderr for long work (a pass, applies, ``pass --all``), only on a terminal.

click's ``progressbar`` draws it; on a pipe or a file nothing at all is printed (click
would still print the label once), so cron mails and ``2>log`` stay as they were. A log line
written while a bar is drawn (a warning) first wipes the bar's line, so it is never glued on.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from typing import Any

import click

from daemon import logs

SHOWN_FROM = 2  # one item needs no bar


class Bar:
    """``with Bar("applying") as bar: work(progress=bar.progress)``; ``progress(done, total)``
    draws the bar, made when the total is first known."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._stack = ExitStack()
        self._bar: Any = None

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def progress(self) -> Any:
        """The callable to hand to the service, or None when stderr is not a terminal."""
        return self.update if sys.stderr.isatty() else None

    def update(self, done: int, total: int) -> None:
        if total < SHOWN_FROM:
            return
        if self._bar is None:
            self._bar = self._stack.enter_context(click.progressbar(length=total, label=self.label, file=sys.stderr, show_pos=True))
            logs.before_each_line(_clear_line)  # a warning mid-bar gets a line of its own
            self._stack.callback(logs.before_each_line, None)
        self._bar.update(done - self._bar.pos)


def _clear_line() -> None:
    """Wipe the bar's line; the bar draws itself again at its next step."""
    sys.stderr.write("\r\x1b[K")


class Stages:
    """One bar per stage of a long pass (reading notes, detecting, proposing), each ended when
    the next begins: ``with Stages() as stages: run_pass(..., progress=stages.progress)``."""

    def __init__(self) -> None:
        self._stage: str | None = None
        self._bar: Bar | None = None

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)

    @property
    def progress(self) -> Any:
        """The callable to hand to the service, or None when stderr is not a terminal."""
        return self._update if sys.stderr.isatty() else None

    def _update(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            if self._bar is not None:
                self._bar.__exit__(None, None, None)
            self._stage = stage
            self._bar = Bar(stage)
        self._bar.update(done, total)
