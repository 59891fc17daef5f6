"""structlog set up once by a face: JSON lines when stderr is not a terminal (journald, cron
mail, files), readable key=value on a terminal. Note text never goes into a log event.

Loggers come from ``get_logger``: a logger that imports structlog only when an event passes
the level ``configure`` set, so a command run by hand (warnings and errors only) that logs
nothing never pays for structlog's import (it brings asyncio along: ~0.05 s of a no-op pass).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40  # the stdlib logging levels (not imported: it costs too)
_LEVELS = {"debug": DEBUG, "info": INFO, "warning": WARNING, "error": ERROR}
_level = 0  # what configure() lets through; everything until a face configures (tests)
_pending: dict[str, Any] | None = None  # configure()'s settings, applied on first use of structlog
_before_line: Callable[[], None] | None = None  # what a face drawing on stderr does before a log line


def before_each_line(clear: Callable[[], None] | None) -> None:
    """While a face draws on stderr (a progress bar), ``clear`` runs before each log line, so
    the line starts at the left edge instead of being glued onto what was drawn; None: done."""
    global _before_line
    _before_line = clear


class _Stderr:
    """stderr as log lines reach it (print writes a line's text, then its newline)."""

    def __init__(self) -> None:
        self._at_start = True

    def write(self, text: str) -> int:
        if self._at_start and _before_line is not None:
            _before_line()
        self._at_start = text.endswith("\n")
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(debug: bool = False, info: bool = False) -> None:
    """``info``: the daemon and its workers log every pass (journald keeps them); commands
    run by hand log warnings and errors only."""
    global _level, _pending
    _level = DEBUG if debug else INFO if info else WARNING
    _pending = {"tty": sys.stderr.isatty(), "level": _level}
    if "structlog" in sys.modules:  # already paid for: set it up now
        _apply()


def reset() -> None:
    """Forget ``configure``: every event goes on to structlog as it stands (a test suite
    starts each case so, after ``structlog.reset_defaults()``)."""
    global _level, _pending
    _level, _pending = 0, None


def _apply() -> None:
    """Configure structlog as ``configure`` asked (once)."""
    global _pending
    if _pending is None:
        return
    import structlog

    settings, _pending = _pending, None
    renderer = structlog.dev.ConsoleRenderer(colors=False) if settings["tty"] else structlog.processors.JSONRenderer(sort_keys=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(settings["level"]),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


class Logger:
    """A structlog logger that is made (and structlog imported) on the first event the
    configured level lets through; ``bind`` adds context as structlog's does."""

    def __init__(self, name: str, context: dict[str, Any] | None = None) -> None:
        self._name = name
        self._context = context or {}

    def bind(self, **context: Any) -> Logger:
        return Logger(self._name, {**self._context, **context})

    def _emit(self, method: str, event: str, values: dict[str, Any]) -> None:
        if _LEVELS[method] < _level:
            return
        _apply()
        import structlog

        getattr(structlog.get_logger(self._name).bind(**self._context), method)(event, **values)

    def debug(self, event: str, **values: Any) -> None:
        self._emit("debug", event, values)

    def info(self, event: str, **values: Any) -> None:
        self._emit("info", event, values)

    def warning(self, event: str, **values: Any) -> None:
        self._emit("warning", event, values)

    def error(self, event: str, **values: Any) -> None:
        self._emit("error", event, values)


def get_logger(name: str) -> Logger:
    return Logger(name)


def route_library_logs(*names: str, level: int = WARNING) -> None:
    """Render a library's stdlib logging (APScheduler's) like our own lines, not as bare text."""
    import logging

    import structlog

    _apply()
    renderer = structlog.processors.JSONRenderer(sort_keys=True) if not sys.stderr.isatty() else structlog.dev.ConsoleRenderer(colors=False)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)],
        )
    )
    for name in names:
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
