"""Proposals found applied: the store already holds their result, written by someone else.

A review branch (``dreamd export --branch``) merged into the store's repository, or the same
edit made by hand, leaves every file a proposal changes holding its result bytes. That is the
proposal applied, not a proposal gone stale: it is recorded as applied, with a done ``apply``
journal of the same steps dreamd would have written (base -> result), so ``dreamd revert``
restores the exact base bytes as for any apply, and an event says it was found so and by whom.

On a branch every commit after the first edits an index the commit before it changed already
(each proposal of a pass edits the same index), so after the merge the index holds none of
their results. The pass then replays the branch as export made it: proposals whose other
files hold their results, in id order, each index edit placed by what it means on the one before.
When that ends at the index the store holds, each is applied, its index step going from
the index before it to the index after it, so reverting them newest first gives back the base.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from daemon.core.errors import StaleError
from daemon.core.hashing import hash_bytes, root_hash
from daemon.core.index import IndexSpec
from daemon.core.patch import blocks
from daemon.core.rebase import rebase
from daemon.core.proposals import APPLIED
from daemon.db import repo
from daemon.service import recorded
from daemon.service.apply import journal
from daemon.service.context import App
from daemon.service.apply.recovery import manifest_before, retired_values

FOUND = "found applied: the store already holds its result (merged from a branch, or the same edit made by hand)"


@dataclass(frozen=True)
class Found:
    """A proposal found applied: the steps from the store before it to the store after it,
    and the bytes of any index state between two proposals (not stored anywhere yet)."""

    proposal_id: int
    files: recorded.Files
    steps: list[journal.Step]
    between: dict[str, bytes]


def holds_result(files: recorded.Files, current: Mapping[str, str | None]) -> bool:
    """Whether every file of the proposal holds its result hash (absent where it removes one)."""
    return any(base != result for base, result in files.values()) and all(current.get(p) == result for p, (_, result) in files.items())


def exact_steps(files: recorded.Files) -> list[journal.Step]:
    return [journal.Step(p, base, result) for p, (base, result) in files.items() if base != result]


def found_in_store(conn: Connection, store_id: int, spec: IndexSpec | None, rows: list[Any], manifest: Mapping[str, str]) -> list[Found]:
    """The open proposals (``rows``, oldest first) the store holds applied: each whose every
    file holds its result, then the chain of a merged branch on the index (``spec``, see above)."""
    index = spec.path if spec is not None else None
    found, chain = [], []
    for row in rows:
        files = repo.proposal_files(conn, store_id, row.id)
        if holds_result(files, manifest):
            found.append(Found(row.id, files, exact_steps(files), {}))
        elif index is not None and _on_chain(files, index, manifest):
            chain.append((row, files))
    index_only = [item for item in chain if set(item[1]) == {index}]
    for tried in (chain, [item for item in chain if item not in index_only]):
        replayed = _replay(conn, store_id, spec, tried, manifest.get(index)) if tried else None  # type: ignore[arg-type]
        if replayed:
            return found + replayed
    return found


def _on_chain(files: recorded.Files, index: str, manifest: Mapping[str, str]) -> bool:
    """Edits the index, and every other file holds its result. An index-only proposal may
    be part of a chain, but a chain of those alone is not taken: nothing else shows a merge."""
    base, result = files.get(index, (None, None))
    return base is not None and result is not None and base != result and all(manifest.get(p) == r for p, (_, r) in files.items() if p != index)


def _replay(conn: Connection, store_id: int, spec: IndexSpec, chain: list[tuple[Any, recorded.Files]], current: str | None) -> list[Found] | None:
    """The chain's index edits replayed in id order as ``dreamd export --branch`` made them
    (each placed by what it means on the index the one before left, core/rebase.py), one
    that does not place left out as there; None unless it ends at ``current``."""
    index = spec.path
    if not any(set(files) != {index} for _, files in chain):
        return None
    state = chain[0][1][index][0]
    data = repo.get_blobs(conn, [state]).get(state)  # type: ignore[list-item]
    replayed = []
    for row, files in chain:
        base, result = files[index]
        blobs = recorded.proposal_bytes(conn, store_id, row.id)[1]
        try:
            new = blobs[result] if state == base else rebase(blocks(row.diff, index), blobs[base], blobs[result], data, spec) if data is not None else None  # type: ignore[index]
        except StaleError:
            new = None
        if new is None:
            continue
        digest = hash_bytes(new)
        steps = [s for s in exact_steps(files) if s.path != index] + [journal.Step(index, state, digest)]
        replayed.append(Found(row.id, files, steps, {digest: new}))
        state, data = digest, new
    return replayed if replayed and state == current else None


def record_found_applied(app: App, conn: Connection, store_id: int, found: Found, after: Mapping[str, str], now: dt.datetime) -> None:
    """Record an open proposal as applied without writing a byte: journal, snapshots, state,
    the values it retired, and a ``proposal.applied`` event by ``app.actor`` saying it was found.

    ``after`` is the store's manifest now, its files' bytes stored by the caller; the
    proposal's base bytes were stored by its own pass, so a revert can restore them.
    """
    repo.put_blobs(conn, found.between)
    steps = found.steps
    journal_id = repo.open_journal(conn, store_id, found.proposal_id, "apply", [s.as_dict() for s in steps], now)
    repo.close_journal(conn, store_id, journal_id, "done", now)
    before = manifest_before(steps, after)
    before_id = repo.save_manifest(conn, store_id, root_hash(before), before)
    after_id = repo.save_manifest(conn, store_id, root_hash(dict(after)), after, base=(before_id, before))
    repo.add_snapshot(conn, store_id, before_id, "apply-before", now, proposal_id=found.proposal_id)
    repo.add_snapshot(conn, store_id, after_id, "apply-after", now, proposal_id=found.proposal_id)
    repo.set_state(conn, store_id, found.proposal_id, APPLIED, now, FOUND)
    _, blobs = recorded.proposal_bytes(conn, store_id, found.proposal_id)
    for path, value in retired_values(found.files, blobs).items():
        repo.add_tombstone(conn, store_id, "value", value, now, proposal_id=found.proposal_id, note_path=path, reason="retired")
    payload = {"files": [s.as_dict() for s in steps], "found": True, "reason": FOUND, "journal": journal_id}
    repo.add_event(conn, store_id, "proposal.applied", app.actor, app.surface, now, payload, proposal_id=found.proposal_id)
