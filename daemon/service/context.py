"""What every service call needs, built once by a face: config, database, clock, who and where.

The engine is opened lazily, so commands that never touch the database (``--help``, a dry
run on a machine with no state yet) never create one.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from daemon.config import Config


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def resolve_db_url(given: str | None, config: Config) -> str:
    """--db, else DREAMD_DB, else the config's db, else the SQLite file in the state dir."""
    url = given or os.environ.get("DREAMD_DB") or config.db_url
    if url:
        return url
    from daemon.db.engine import default_db_url

    return default_db_url()


SURFACES = ("cli", "timer")  # what a command may say it was started by; the daemon sets "daemon"


def command_surface() -> str:
    """``$DREAMD_SURFACE``: "timer" when a systemd timer or cron started the command."""
    surface = os.environ.get("DREAMD_SURFACE", "cli")
    if surface not in SURFACES:
        from daemon.core.errors import ConfigError

        raise ConfigError(f"DREAMD_SURFACE={surface!r} is not one of {', '.join(SURFACES)}")
    return surface


def human_actor() -> str:
    try:
        return f"human:{getpass.getuser()}"
    except (KeyError, OSError):
        return "human:unknown"


@dataclass
class App:
    config: Config
    db_url: str
    surface: str = "cli"
    actor: str = field(default_factory=human_actor)
    clock: Callable[[], dt.datetime] = utcnow
    # how a pass reaches a model; tests and the eval harness inject fakes or replays
    model_client: Callable[[Any], Any] | None = field(default=None, repr=False)
    _engine: Engine | None = field(default=None, repr=False)

    def client_for(self, settings: Any) -> Any:
        """The ModelClient for these settings: the injected one, else litellm (imported lazily)."""
        if self.model_client is not None:
            return self.model_client(settings)
        from daemon.llm.litellm_client import LiteLLMClient

        return LiteLLMClient()

    def engine(self) -> Engine:
        """The state database, created and migrated on first use."""
        if self._engine is None:
            from daemon.db.engine import open_engine

            self._engine = open_engine(self.db_url)
        return self._engine

    def read_only_engine(self) -> Engine | None:
        """The state database opened so that nothing can be written, or None if there is none.

        A dry run reads tombstones and earlier state through this; a SQLite file is opened
        ``immutable`` (no lock, no journal, no WAL files), and a missing one is not created.
        Immutable mode ignores the WAL, so while another process holds the database open
        (its committed transactions still in ``-wal``) the file is opened ``mode=ro``
        instead: that never writes the database or the WAL.
        """
        from daemon.db.engine import open_read_only

        return open_read_only(self.db_url)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
