"""structlog set up once by a face: JSON lines when stderr is not a terminal (journald, cron
mail, files), readable key=value on a terminal. Note text never goes into a log event."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(debug: bool = False, info: bool = False) -> None:
    """``info``: the daemon and its workers log every pass (journald keeps them); commands
    run by hand log warnings and errors only."""
    renderer = (
        structlog.dev.ConsoleRenderer(colors=False)
        if sys.stderr.isatty()
        else structlog.processors.JSONRenderer(sort_keys=True)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG if debug else logging.INFO if info else logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def route_library_logs(*names: str, level: int = logging.WARNING) -> None:
    """Render a library's stdlib logging (APScheduler's) like our own lines, not as bare text."""
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
