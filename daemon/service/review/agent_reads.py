"""What the agent reads after a proposal: the facts ``dreamd show`` prints, and its index as it will load it.

The facts are the proposal's stored read facts in the words of ``core.proposals.read_lines``
(the lines ``show`` prints, computed once, when the proposal was made). The preview is the
index after the proposal: the bytes it writes there, or, when it leaves the index as it is,
the index its pass recorded; cut where the store's reader model says the agent stops loading
it (``LoadLimit.span``: Claude Code's 200 lines or 25,000 characters at a line's end,
DeepCode's 8,000 characters wherever they end).
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.config import StoreConfig
from daemon.core.proposals import read_lines
from daemon.service.proposals import ProposalView
from daemon.service.review.seen import Seen

UNREAD_SHOWN = 20  # lines of what the agent does not load shown after the cut


@dataclass(frozen=True)
class IndexPreview:
    """The index as the agent will load it after the proposal."""

    path: str
    changed: bool  # the proposal writes it
    loaded: str  # what the agent loads, from the top
    rest: str  # what it leaves unread (empty: it loads the whole index)
    limit: str | None  # the load limit in words; None: the agent reads the index whole
    stop_line: int  # the line the agent stops in (or after)
    mid_line: bool  # it stops inside that line

    @property
    def rest_lines(self) -> int:
        return len(self.rest.splitlines())

    @property
    def unread_shown(self) -> str:
        """The first lines the agent does not read, to show below the cut."""
        return "".join(self.rest.splitlines(keepends=True)[:UNREAD_SHOWN])


@dataclass(frozen=True)
class AgentReads:
    """The section "What the agent reads after this" of a proposal's page."""

    facts: list[str]
    pushed_out: list[str]  # notes whose index entry the agent loaded before and not after
    index: IndexPreview | None
    no_preview: str | None  # why there is no preview, when there is none


def agent_reads(view: ProposalView, seen: Seen) -> AgentReads:
    reads = view.reads or {}
    _, store = seen.store(view)
    preview, why = _preview(view, store, seen)
    return AgentReads(read_lines(reads), list(reads.get("pushed_out", [])), preview, why)


def _preview(view: ProposalView, store: StoreConfig, seen: Seen) -> tuple[IndexPreview | None, str | None]:
    spec = store.settings.index
    agent = store.settings.reader.agent
    if spec is None:
        return None, f"this store has no index; its agent ({agent}) finds its notes by listing them"
    changed = spec.path in view.result and view.result[spec.path] != view.base.get(spec.path)
    if changed:
        data = seen.written(view, spec.path)
        if data is None:
            return None, f"this proposal removes {spec.path}" if view.result[spec.path] is None else f"the bytes this proposal writes to {spec.path} cannot be rebuilt from the state database"
    else:
        data = seen.notes(view, [spec.path]).get(spec.path)
        if data is None:
            return None, f"{spec.path} did not exist when this proposal was made"
    text = data.decode("utf-8", "replace")
    stop = spec.limit.span(text)[1] if spec.limit is not None else len(text)
    mid_line = 0 < stop < len(text) and text[stop - 1] != "\n" and text[stop] != "\n"
    describe = spec.limit.describe() if spec.limit is not None else None
    return IndexPreview(spec.path, changed, text[:stop], text[stop:], describe, text.count("\n", 0, max(stop - 1, 0)) + 1, mid_line), None
