"""Where a pass's plans go: into the state database (a pass), or nowhere (a dry run).

Both run the same planning (``run._propose``): the detectors, the model, the checks and the
proposals are one pipeline, and only its sink differs, so a dry run cannot drift from what a
pass would propose. A sink answers what earlier passes and decisions say (values and changes
rejected before, what the model was shown) and takes each batch of planned proposals:
``Recording`` writes them, ``Discarding`` only says what would have become of them, reading
the database (when there is one) without writing a byte.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from daemon.core.proposals import OPEN, PENDING
from daemon.db import repo
from daemon.service.context import App
from daemon.service.passes.coverage import Ledger
from daemon.service.passes.report import Outcome
from daemon.service.passes.storing import DUPLICATE, Prior, store_planned

if TYPE_CHECKING:
    from daemon.core.view import StoreView
    from daemon.service.passes.llm_pass import LLMOutcome
    from daemon.service.passes.proposing import Planned

Remembered = tuple[dict[str, str], frozenset[str]]  # retired values, rejected change keys


class Recording:
    """A pass's sink: every batch stored in its own transaction, the model's calls and what
    it was shown recorded with the pass."""

    def __init__(self, app: App, store_id: int, pass_id: int, now: dt.datetime, index: str | None) -> None:
        self.app, self.store_id, self.pass_id, self.now, self.index = app, store_id, pass_id, now, index

    def remembered(self) -> Remembered:
        with self.app.engine().connect() as conn:
            return repo.value_tombstones(conn, self.store_id), repo.rejected_changes(conn, self.store_id)

    def ledger(self) -> Ledger:
        from daemon.db.ledger import ledger_rows

        with self.app.engine().connect() as conn:
            return Ledger.of(ledger_rows(conn, self.store_id))

    def keep(self, batch: Sequence[Planned]) -> list[Outcome]:
        with self.app.engine().begin() as conn:
            return store_planned(self.app, conn, self.store_id, self.pass_id, batch, self.now, index=self.index)

    def model_answered(self, ledger: Ledger, view: StoreView, llm: LLMOutcome, refused: Sequence[Planned]) -> list[Outcome]:
        """The calls, what they showed and the refused proposals, in one transaction (a failed
        model part too: what the model read, it read)."""
        from daemon.service.passes.llm_pass import record_calls, record_ledger

        with self.app.engine().begin() as conn:
            record_calls(conn, self.store_id, self.pass_id, llm.calls, self.now)
            record_ledger(conn, self.store_id, self.pass_id, ledger, view, llm, self.now)
            return store_planned(self.app, conn, self.store_id, self.pass_id, refused, self.now)


class Discarding:
    """A dry run's sink: nothing written; each proposal's state is what a pass would record
    (a duplicate of one open in the database or earlier in this run, a change rejected before).

    ``conn_of`` opens a read-only connection, or is None when there is no database yet (or it
    has never seen the store: ``store_id`` None). ``carried``: a ledger a run of dry passes
    carries from one to the next (``dreamd eval``), which the model's calls are added to.
    """

    def __init__(self, conn_of: Any, store_id: int | None, carried: Ledger | None = None) -> None:
        self.conn_of, self.store_id, self.carried = conn_of, store_id, carried
        self.proposed: set[str] = set()  # change keys this run would have recorded open

    def _reading(self) -> bool:
        return self.conn_of is not None and self.store_id is not None

    def remembered(self) -> Remembered:
        if not self._reading():
            return {}, frozenset()
        with self.conn_of() as conn:
            return repo.value_tombstones(conn, self.store_id), repo.rejected_changes(conn, self.store_id)

    def ledger(self) -> Ledger:
        if self.carried is not None:
            return self.carried
        if not self._reading():
            return Ledger()
        from daemon.db.ledger import ledger_rows

        with self.conn_of() as conn:
            return Ledger.of(ledger_rows(conn, self.store_id))

    def keep(self, batch: Sequence[Planned]) -> list[Outcome]:
        if not batch:
            return []
        prior = Prior({}, set(), {})
        if self._reading():
            with self.conn_of() as conn:
                prior = Prior.read(conn, self.store_id, batch)  # type: ignore[arg-type]
        outcomes = []
        for item in batch:
            if item.state == PENDING and item.key in self.proposed:
                outcomes.append(Outcome(item.slim(), DUPLICATE, None, "already proposed by this pass"))
                continue
            state, existing, note = prior.known(item)
            if state in OPEN:
                self.proposed.add(item.key)
            outcomes.append(Outcome(item.slim(), state, existing, note))
        return outcomes

    def model_answered(self, ledger: Ledger, view: StoreView, llm: LLMOutcome, refused: Sequence[Planned]) -> list[Outcome]:
        from daemon.service.passes.llm_pass import take_in

        if ledger is self.carried:  # a run of dry passes carries what the model was shown
            take_in(ledger, view, llm)
        return self.keep(refused)


Sink = Recording | Discarding
