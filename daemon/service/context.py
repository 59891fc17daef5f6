"""What every service call needs, built once by a face: config, database, clock, who and where.

The engine is opened lazily, so commands that never touch the database (``--help``, a dry
run on a machine with no state yet) never create one. An App made ``read_only`` (commands
that only look: proposals, show, log, history, status) never writes, migrates or creates
the database, so they also work while another process holds the write lock, on a
read-only file or folder, and on a full disk.
"""

from __future__ import annotations

import datetime as dt
import getpass
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon.config import Config

if TYPE_CHECKING:  # the database layer is imported by the first use of the engine, not before
    from sqlalchemy.engine import Engine

    from daemon.db.quick import Kept


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def resolve_db_url(given: str | None, config: Config) -> str:
    """--db, else DREAMD_DB, else the config's db, else the SQLite file in the state dir."""
    from daemon.locations import default_db_url

    return given or os.environ.get("DREAMD_DB") or config.db_url or default_db_url()


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


class App:
    """One face's context. A plain class, as every class a pass that finds nothing to do
    builds (see service/passes/noop.py)."""

    def __init__(self, config: Config, db_url: str, surface: str = "cli", actor: str | None = None, clock: Callable[[], dt.datetime] = utcnow,
                 model_client: Callable[[Any], Any] | None = None, ledgers: dict[str, Any] | None = None, read_only: bool = False) -> None:  # fmt: skip
        self.config = config
        self.db_url = db_url
        self.surface = surface
        self.actor = human_actor() if actor is None else actor
        self.clock = clock
        # how a pass reaches a model; tests and the eval harness inject fakes or replays
        self.model_client = model_client
        # store name -> the model ledger a run of dry passes carries from one to the next (dreamd
        # eval, until a store is covered); None: each pass reads the database's and a dry run keeps nothing
        self.ledgers = ledgers
        # a command that only reads: engine() opens the database read-only, never migrates it
        # (an older schema is refused with what to do), and a missing one reads as empty
        self.read_only = read_only
        self._engine: Engine | None = None
        self._lane: Kept | None = None  # the no-op lane's connection (db/quick.py)

    def __repr__(self) -> str:
        return f"App(db_url={self.db_url!r}, surface={self.surface!r}, actor={self.actor!r}, read_only={self.read_only})"

    def client_for(self, settings: Any) -> Any:
        """The ModelClient for these settings: the injected one, else litellm (imported lazily)."""
        if self.model_client is not None:
            return self.model_client(settings)
        from daemon.llm.litellm_client import LiteLLMClient

        return LiteLLMClient()

    def engine(self) -> Engine:
        """The state database, created and migrated on first use (opened read-only, and
        neither created nor migrated, when the App is ``read_only``)."""
        if self._engine is None:
            if self.read_only:
                from daemon.db.read_only import open_empty, open_read_only

                self._engine = open_read_only(self.db_url, current=True) or open_empty()
            else:
                from daemon.db.engine import open_engine

                self._engine = open_engine(self.db_url)
        return self._engine

    def lane(self) -> Kept:
        """The no-op lane's connection keeper, which this App closes."""
        if self._lane is None:
            from daemon.db.quick import Kept

            self._lane = Kept()
        return self._lane

    def reading(self) -> App:
        """A read-only twin of this App (same config, clock, actor); close it after use."""
        return App(self.config, self.db_url, self.surface, self.actor, self.clock, self.model_client, self.ledgers, read_only=True)

    def read_only_engine(self) -> Engine | None:
        """The state database opened so that nothing can be written, or None if there is none.

        A dry run reads tombstones and earlier state through this; a SQLite file is opened
        ``immutable`` (no lock, no journal, no WAL files), and a missing one is not created.
        While the WAL or a rollback journal holds something immutable mode would miss, the
        file is opened ``mode=ro`` instead: that never writes the database or the WAL. The
        schema is checked only when the App is ``read_only`` (see ``db.read_only.open_read_only``);
        the caller disposes it.
        """
        from daemon.db.read_only import open_read_only

        return open_read_only(self.db_url, current=self.read_only)

    def migrate_existing(self) -> None:
        """Open the database now, migrating it, if there is one; create none.

        For commands that write but first look up a store read-only (by its name or
        folder): those reads expect this code's schema. A missing database is left to the
        first write, so a mistyped name leaves none behind.
        """
        engine = self.read_only_engine()
        if engine is not None:
            engine.dispose()
            self.engine()

    def close(self) -> None:
        if self._lane is not None:
            self._lane.close()
            self._lane = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None
