"""One person's review of pending proposals, one at a time, with an undo (``dreamd review``).

Each decision goes through ``review.decide`` as its own transaction, so what was decided
stays decided whatever happens to the review afterwards. The review re-reads a proposal
before it is shown and when it is answered: one that went stale or was decided elsewhere
meanwhile is never decided here. The undo takes back only what this review decided, also
once the last proposal is answered.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from daemon.core.errors import ProposalError
from daemon.core.proposals import PENDING
from daemon.db import repo
from daemon.service.context import App
from daemon.service.proposals import ProposalView, Selection, decide, get_proposal, locate, select_pending, unaccept, unreject

OUTCOMES = ("accepted", "rejected", "skipped", "gone")  # gone: stale or decided elsewhere meanwhile


def base_notes(app: App, proposal_id: int) -> list[tuple[str, bytes | None]]:
    """Every file a proposal touches with its bytes as the proposal saw them (None: it did not
    exist yet), from the state database, so what is shown is what was reviewed."""
    store_id, _ = locate(app, proposal_id)
    with app.engine().connect() as conn:
        files = repo.proposal_files(conn, store_id, proposal_id)
        blobs = repo.get_blobs(conn, [base for base, _ in files.values() if base])
    return [(path, blobs.get(base) if base else None) for path, (base, _) in sorted(files.items())]


@dataclass(frozen=True)
class Undone:
    """A decision the undo took back: the proposal, pending again, and what was decided."""

    view: ProposalView
    decision: str


class Review:
    """The pending proposals of one store (or of every store), oldest first, and what this
    review made of each. ``total`` is how many there were when it began."""

    def __init__(self, app: App, store_name: str | None = None) -> None:
        self.app = app
        ids = sorted(select_pending(app, Selection(store=store_name)))  # ids grow: oldest first across stores
        self.position = {pid: n for n, pid in enumerate(ids, 1)}
        self.total = len(ids)
        self.queue: deque[int] = deque(ids)
        self.outcome: dict[int, str] = {}
        self.decided: list[tuple[int, str]] = []  # the undo's stack: (proposal id, "accept" | "reject")

    def next(self) -> ProposalView | None:
        """The next proposal, as it is now; None when none is left. One no longer pending
        comes back too, already counted as gone, so the face can say what became of it."""
        if not self.queue:
            return None
        view = get_proposal(self.app, self.queue.popleft())
        if view.state != PENDING:
            self.outcome[view.id] = "gone"
        return view

    def accept(self, view: ProposalView) -> None:
        self._decide(view, "accept")

    def reject(self, view: ProposalView, reason: str) -> None:
        self._decide(view, "reject", reason)

    def skip(self, view: ProposalView) -> None:
        self.outcome[view.id] = "skipped"

    def put_back(self, view: ProposalView) -> None:
        """The proposal being answered when the review stops: it stays pending, left for later."""
        self.queue.appendleft(view.id)

    @property
    def can_undo(self) -> bool:
        """Whether this review has a decision it may take back."""
        return bool(self.decided)

    def undo(self, current: ProposalView | None = None) -> Undone:
        """Take back this review's last decision still standing; that proposal is next, and
        ``current`` (the one being answered) after it."""
        if not self.decided:
            raise ProposalError("nothing to undo: this review has decided nothing yet")
        proposal_id, decision = self.decided.pop()
        if decision == "accept":
            view = unaccept(self.app, proposal_id, "accept undone in review")
        else:
            view = unreject(self.app, proposal_id, "rejection undone in review")
        del self.outcome[proposal_id]
        if current is not None:
            self.queue.appendleft(current.id)
        self.queue.appendleft(proposal_id)
        return Undone(view, decision)

    def summary(self) -> dict[str, int]:
        """How many this review accepted, rejected, skipped and found gone, and how many it
        left pending without an answer."""
        counts = {name: 0 for name in OUTCOMES}
        for outcome in self.outcome.values():
            counts[outcome] += 1
        return {**counts, "left": len(self.queue)}

    def _decide(self, view: ProposalView, decision: str, reason: str | None = None) -> None:
        """Decide, or refuse in one error when the proposal moved on since it was shown."""
        try:
            decide(self.app, view.id, decision, reason)
        except ProposalError:
            now = get_proposal(self.app, view.id)
            if now.state == PENDING:
                raise
            self.outcome[view.id] = "gone"
            why = f" ({now.state_reason})" if now.state_reason else ""
            raise ProposalError(f"#{view.id} is {now.state} now{why}; it was not {decision}ed") from None
        self.outcome[view.id] = f"{decision}ed"
        self.decided.append((view.id, decision))
