"""Facts about a stored proposal, for the engine: from its view, and its files' bytes.

Frontmatter comes from the proposal's base (what the pass saw); which notes it retires, from
comparing base and result, so a note retired in place (marked, not moved) counts like an
archived one. A note's age counts from its frontmatter ``updated_at`` (else ``created_at``);
a note without either has an unknown age, and a rule about age does not match it. ``pinned``
is true when a note the proposal changes is pinned by its own bytes (``Note.pinned``: any
spelling, or frontmatter in doubt); pinned globs in store settings are not looked up here
(apply checks them again, whatever decided).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from daemon.core.notes import Note, as_utc, retired_notes
from daemon.core.proposals import MERGE, REINDEX, SOFT_EXPIRE, SUPERSEDE, ReadFacts
from daemon.policies.model import Facts, changed_lines

def facts_of(view: Any, blobs: Mapping[str, bytes], now: dt.datetime) -> Facts:
    """Facts of a ``ProposalView``; ``blobs`` (hash -> bytes) hold both sides of its files."""
    base, result = view.base, view.result
    cited = [e["path"] for e in view.evidence if isinstance(e, dict) and "path" in e]
    retired = retired_notes({p: (base[p], result.get(p)) for p in base}, blobs) if view.kind != REINDEX else []
    notes = tuple(p for p in dict.fromkeys(cited + retired) if base.get(p) is not None)
    retire = tuple(retired) if view.kind in (MERGE, SUPERSEDE, SOFT_EXPIRE) else ()
    meta: dict[str, dict[str, Any]] = {}
    ages: dict[str, float] = {}
    pinned = False
    for note in notes:
        data = blobs.get(base.get(note) or "")
        if data is None:
            continue
        parsed = Note(note, data, base.get(note) or "")
        pinned = pinned or (parsed.pinned and result.get(note, base.get(note)) != base.get(note))
        if parsed.frontmatter_error:
            continue  # unreadable frontmatter: unknown (and, being in doubt, pinned)
        meta[note] = parsed.meta
        age = _age(meta[note], now)
        if age is not None:
            ages[note] = age
    reads = ReadFacts.from_dict(getattr(view, "reads", None))
    return Facts(
        kind=view.kind, source=view.source, confidence=float(view.confidence), lossy=bool(view.lossy),
        notes=notes if view.kind != REINDEX else tuple(cited), retire=retire,
        changed_lines=changed_lines(view.diff), frontmatter=meta, ages_days=ages, pinned=pinned,
        dangling=len(reads.dangling), holds=reads.holds,
    )  # fmt: skip


def _age(meta: Mapping[str, Any], now: dt.datetime) -> float | None:
    """Days since ``updated_at`` (else ``created_at``); None when unknown or unreadable."""
    for key in ("updated_at", "created_at"):
        if meta.get(key) is not None:
            moment = as_utc(meta[key])
            return None if moment is None else max(0.0, (now - moment).total_seconds() / 86400)
    return None