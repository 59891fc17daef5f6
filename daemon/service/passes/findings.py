"""Findings: what a pass reports about a store that no proposal can fix by itself.

Dexto puts only the newest memories in its agent's prompt (``## User Memories``, the
first ``limit`` by ``updatedAt``: 10 in its bundled agents). A store with more has
memories the agent never reads: a person should know, and merges or expiries are how to
make room. The pass says so every time it looks, with the keys left out.

A reference (or an index entry) that lands on no live note and could mean several is not
repointed: only a person can tell which note was meant, so the pass names it with its
candidates (``ambiguous-reference``), every time it looks, until someone fixes the link or
renames a note.

Two Cline task files with one id (``tasks/TASK004-search.md`` and ``tasks/TASK004-search-v2.md``)
make the index line and every ``[TASK004]`` mean either: the agent takes one, and no proposal
can tell which was meant, or whether they are one task or two that need their own ids. The
pass names each such id with its files (``duplicate-task-id``) every time it looks; a proposal
that retires one of them is held for a person (``daemon.core.changes``), and the ambiguous
``[TASK004]`` references are this finding, not one each.
"""

from __future__ import annotations

from typing import Any

from daemon.config import StoreConfig
from daemon.core.reader import TASK_ID
from daemon.core.view import StoreView

OVER_PROMPT_LIMIT = "over-prompt-limit"
AMBIGUOUS = "ambiguous-reference"
DUPLICATE_TASK_ID = "duplicate-task-id"
MAX_AMBIGUOUS = 20  # findings of that kind a pass lists; one more counts the rest


def findings(store: StoreConfig, view: StoreView) -> list[dict[str, Any]]:
    """The store's findings."""
    return _duplicate_task_ids(view) + _ambiguous(view) + (_over_prompt_limit(view) if store.preset == "dexto" else [])


def _duplicate_task_ids(view: StoreView) -> list[dict[str, Any]]:
    index = view.index.path if view.index else ""
    return [
        {
            "kind": DUPLICATE_TASK_ID,
            "detail": f"{' and '.join(paths)} share the task id {ident}, so [{ident}] in {index} and in other notes could mean "
            f"{'either' if len(paths) == 2 else 'any of them'}: merge them if they are one task, or give "
            f"{'one' if len(paths) == 2 else 'all but one'} a new id",
            "paths": list(paths),
        }
        for ident, paths in sorted(view.shared_task_ids.items())
    ]


def _ambiguous(view: StoreView) -> list[dict[str, Any]]:
    from daemon.planners.detectors.dangling import ambiguous
    from daemon.planners.detectors.index_drift import ambiguous_entries

    said = [
        (f"{ref.source} line {ref.line}: {ref.written!r} lands on no live note and could mean {' or '.join(found)}", [ref.source, *found])
        for ref, found in ambiguous(view)
        if ref.syntax != TASK_ID  # a task id two files share is its own finding
    ]
    said += [(f"{view.index.path if view.index else ''} lists {path}, which does not exist and could mean {' or '.join(found)}", [path, *found]) for path, found in ambiguous_entries(view)]
    out = [{"kind": AMBIGUOUS, "detail": f"{detail}: no repoint until a person says which", "paths": paths} for detail, paths in said[:MAX_AMBIGUOUS]]
    if len(said) > MAX_AMBIGUOUS:
        rest = said[MAX_AMBIGUOUS:]
        out.append({"kind": AMBIGUOUS, "detail": f"and {len(rest)} more such references", "paths": sorted({p for _, paths in rest for p in paths[:1]})})
    return out


def _over_prompt_limit(view: StoreView) -> list[dict[str, Any]]:
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
