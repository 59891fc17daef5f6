"""Findings: what a pass reports about a store that no proposal can fix by itself.

Dexto puts only the newest memories in its agent's prompt (``## User Memories``, the
first ``limit`` by ``updatedAt``: 10 in its bundled agents). A store with more has
memories the agent never reads: a person should know, and merges or expiries are how to
make room. The pass says so every time it looks, with the keys left out.
"""

from __future__ import annotations

from typing import Any

from daemon.config import StoreConfig
from daemon.core.view import StoreView

OVER_PROMPT_LIMIT = "over-prompt-limit"


def findings(store: StoreConfig, view: StoreView) -> list[dict[str, Any]]:
    """The store's findings (only record stores of Dexto have any yet)."""
    if store.preset != "dexto":
        return []
    from daemon.stores.records import dexto
    from daemon.stores.records.rendering import parse_value, value_of

    records: dict[str, Any] = {}
    for path, note in view.notes.items():
        try:
            records[path] = parse_value(value_of(note.data))  # a record Dexto's rules accept
        except ValueError:
            continue  # rows dreamd cannot read are reported as skipped already
    shown = set(dexto.prompt_order(records))
    unread = sorted(set(records) - shown)
    if not unread:
        return []
    detail = (
        f"{len(records)} memories, and the agent's prompt shows only the {len(shown)} newest "
        f"(limit {dexto.PROMPT_LIMIT} in Dexto's bundled agents): {len(unread)} are never read"
    )
    return [{"kind": OVER_PROMPT_LIMIT, "detail": detail, "paths": unread}]
