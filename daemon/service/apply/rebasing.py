"""Small edits of shared notes, placed again on what dreamd's own applies left there.

Every proposal of a pass is made from one state of the store, and several edit the same
notes: all of them the index, every merge whose retired note one note refers to that note's
links. Applied one after another, each would find those notes changed and go stale. So a
file whose edit is small (``core.rebase.shared``: the index, a note the proposal only
rewords) and that differs from what the proposal saw is placed again by what the edit means
(``core.rebase.rebase``), when everything between the two is dreamd's own: a chain of
finished journal steps leads from the bytes the proposal saw to the bytes there now
(``Written``). Anything else stays strict: a note the proposal merges, retires or creates
must be exactly what it saw, and a file anyone else changed makes the proposal stale.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

from sqlalchemy import Connection

from daemon.core.errors import StaleError
from daemon.core.patch import blocks
from daemon.core.rebase import rebase, shared
from daemon.db import repo
from daemon.service import recorded
from daemon.stores.presets import StoreSettings


class Written:
    """The states dreamd's own finished writes moved each file of a store between, and by
    which proposal: read once per run, then kept up to date by the run's own applies."""

    def __init__(self, writes: list[tuple[int, list[dict[str, str | None]]]]) -> None:
        self._moves: dict[str, dict[str | None, dict[str | None, int]]] = {}
        for proposal_id, steps in reversed(writes):  # oldest first: a later write by another proposal is the one named
            self.add(proposal_id, steps)

    @classmethod
    def load(cls, conn: Connection, store_id: int) -> Written:
        return cls(repo.journal_writes(conn, store_id))

    def add(self, proposal_id: int, steps: list[dict[str, str | None]]) -> None:
        for step in steps:
            self._moves.setdefault(str(step["path"]), {}).setdefault(step["before"], {})[step["after"]] = proposal_id

    def chain(self, path: str, start: str | None, end: str | None) -> list[int] | None:
        """The proposals whose writes lead ``path`` from ``start`` to ``end``, in order; None
        when no chain of dreamd's writes does (someone else wrote it)."""
        moves = self._moves.get(path, {})
        came: dict[str | None, tuple[str | None, int] | None] = {start: None}
        todo = deque([start])
        while todo:
            state = todo.popleft()
            if state == end:
                by: list[int] = []
                while came[state] is not None:
                    state, proposal_id = came[state]  # type: ignore[misc]
                    by.insert(0, proposal_id)
                return by
            for after, proposal_id in moves.get(state, {}).items():
                if after not in came:
                    came[after] = (state, proposal_id)
                    todo.append(after)
        return None


def rebased(diff: str, files: recorded.Files, blobs: Mapping[str, bytes], current: Mapping[str, str | None], read: Mapping[str, bytes], settings: StoreSettings, written: Written) -> dict[str, bytes]:
    """The bytes each changed file gets with the proposal's edit placed on it; StaleError
    saying why when a changed file is not one to rebase or its edit no longer means what was
    reviewed. ``current`` and ``read``: the hashes and bytes the compare-and-swap found."""
    changed = sorted(p for p, (base, _) in files.items() if current.get(p) != base)
    small = shared(files, blobs, settings.index_path)
    chains = {p: written.chain(p, files[p][0], current.get(p)) for p in changed if p in small}
    if any(chains.get(p) is None for p in changed):
        raise StaleError(f"changed since proposed: {', '.join(changed)}")
    placed: dict[str, bytes] = {}
    for path in changed:
        by = ", ".join(f"#{n}" for n in dict.fromkeys(chains[path]))  # type: ignore[union-attr]
        base, result = files[path]
        try:
            if path not in read:
                raise StaleError("it is gone")
            index = settings.index if path == settings.index_path else None
            placed[path] = rebase(blocks(diff, path), blobs[base], blobs[result], read[path], index)  # type: ignore[index]
        except StaleError as exc:
            raise StaleError(f"{path} changed since proposed (dreamd's applies since: {by}), and {exc}") from None
    return placed


def still_applies(conn: Connection, store_id: int, proposal_id: int, files: recorded.Files, manifest: Mapping[str, str], settings: StoreSettings, written: Written) -> bool:
    """Whether an open proposal whose files differ from ``manifest`` may still be applied:
    every file that differs is one it edits in a small way, changed by dreamd's own applies
    alone (apply then places the edit again, or says why not)."""
    changed = [p for p, (base, _) in files.items() if manifest.get(p) != base]
    if changed != [settings.index_path]:  # the index is always a small edit: no bytes needed to tell
        _, blobs = recorded.proposal_bytes(conn, store_id, proposal_id)
        small = shared(files, blobs, settings.index_path)
        if not set(changed) <= small:
            return False
    return all(written.chain(p, files[p][0], manifest.get(p)) is not None for p in changed)


def in_order(conn: Connection, store_id: int, ids: list[int], settings: StoreSettings, cache: dict[str, bytes]) -> list[int]:
    """``ids`` in their order, except that a proposal whose small edit touches a note another
    of them merges, retires or reads goes after that one: applied first, it would change what
    the other must find as it saw it; applied after, its edit is placed on the other's result.
    Only proposals that share a note (the index aside) have their bytes read to tell."""
    given = list(dict.fromkeys(ids))
    found = repo.files_of(conn, store_id, given)
    files = {pid: found.get(pid, {}) for pid in given}
    users: dict[str, list[int]] = {}
    for pid, its in files.items():
        for path in its:
            if path != settings.index_path:
                users.setdefault(path, []).append(pid)
    common = {path: pids for path, pids in users.items() if len(pids) > 1}
    small = {pid: shared(files[pid], recorded.proposal_bytes(conn, store_id, pid, cache)[1], settings.index_path) for pid in {p for pids in common.values() for p in pids}}
    first: dict[int, set[int]] = {}  # proposal -> the proposals to apply before it
    for path, pids in common.items():
        for pid in (p for p in pids if path in small[p]):
            first.setdefault(pid, set()).update(q for q in pids if path not in small[q])
    order: list[int] = []
    left = dict.fromkeys(files)
    while first and left:
        ready = next((pid for pid in left if first.get(pid, set()).isdisjoint(left)), next(iter(left)))  # a cycle keeps the given order
        order.append(ready)
        del left[ready]
    return order + list(left)
