"""The model ledger: which notes the model has been shown as they are, and which related notes
it has not yet been shown together, so a pass can prove its coverage (DESIGN invariant 9).

A note is due for the model until a call whose reply was used has shown it with its current
bytes: a changed note, a note never shown, a note of a call that failed or that a budget
never made. A candidate group whose notes were all shown, but in different calls (a large
store's clusters cut it), stays *open* until a call holds it whole. An unchanged store with
nothing due and nothing open costs no call; one with notes left sends them at the next pass,
as many calls as its budget allows, the most promising first.

The ledger lives in the state database (``db/ledger.py``); a dry run reads it and writes
nothing, and ``dreamd eval`` keeps one in memory to run a store's passes until it is covered.
A database upgraded from before the ledger has no rows, so every note is due once: the passes
before it recorded which notes changed, not which the model was shown, and could not prove
that any was.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from daemon.core.hashing import hash_text
from daemon.core.view import StoreView
from daemon.db.ledger import NOTE, OPEN, LedgerRow

OPEN_REASON = "related, never shown together"


def group_key(paths: Iterable[str]) -> str:
    return "g:" + hash_text("\0".join(sorted(paths)))


def group_digest(view: StoreView, paths: Iterable[str]) -> str:
    return hash_text("\0".join(f"{p}={view.notes[p].hash}" for p in sorted(paths)))


@dataclass
class Ledger:
    """One store's ledger, read once per pass (``rows``) and changed in memory by ``record``."""

    notes: dict[str, str] = field(default_factory=dict)  # path -> the hash it had when shown
    open: dict[str, LedgerRow] = field(default_factory=dict)  # group key -> its row

    @classmethod
    def of(cls, rows: Iterable[LedgerRow]) -> Ledger:
        ledger = cls()
        for row in rows:
            if row.kind == NOTE:
                ledger.notes[row.key] = row.digest
            elif row.kind == OPEN:
                ledger.open[row.key] = row
        return ledger

    def due(self, view: StoreView) -> set[str]:
        """Notes not yet shown to the model as they are now."""
        return {path for path, note in view.notes.items() if self.notes.get(path) != note.hash}

    def pending(self, view: StoreView) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """Open groups still as they were when opened: (paths, reasons), in key order. A group
        with a note changed or gone is not: its changed notes are due, and bring their own groups."""
        out = []
        for row in self.open.values():
            paths = tuple((row.members or {}).get("paths", ()))
            if len(paths) > 1 and all(p in view.notes for p in paths) and group_digest(view, paths) == row.digest:
                out.append((paths, tuple((row.members or {}).get("reasons", ())) or (OPEN_REASON,)))
        return out

    def record(self, view: StoreView, shown: Iterable[str], held: Iterable[Iterable[str]], opened: Iterable[tuple[Iterable[str], Iterable[str]]]) -> tuple[list[LedgerRow], list[str]]:
        """Take in what a pass showed: the notes of its used calls (``shown``), the groups a call
        held whole (``held``: closed) and the groups shown only apart (``opened``: (paths,
        reasons)). Returns the rows to write and the keys to delete, and updates this ledger."""
        rows: list[LedgerRow] = []
        gone: list[str] = []
        for path in sorted(set(shown)):
            note = view.notes.get(path)
            if note is not None and self.notes.get(path) != note.hash:
                self.notes[path] = note.hash
                rows.append(LedgerRow(path, NOTE, note.hash, None))
        for path in sorted(set(self.notes) - set(view.notes)):
            del self.notes[path]
            gone.append(path)
        for paths in held:
            key = group_key(paths)
            if self.open.pop(key, None) is not None:
                gone.append(key)
        for paths, reasons in opened:
            ordered = tuple(paths)
            key = group_key(ordered)
            row = LedgerRow(key, OPEN, group_digest(view, ordered), {"v": 1, "paths": list(ordered), "reasons": list(reasons)})
            if self.open.get(key) != row:
                self.open[key] = row
                rows.append(row)
        for key, row in list(self.open.items()):
            paths = (row.members or {}).get("paths", ())
            if not all(p in view.notes for p in paths):
                del self.open[key]
                gone.append(key)
        return rows, gone
