"""Facts about a stored proposal, for the engine: from its view, and its notes' frontmatter.

Frontmatter comes from the blobs the proposal recorded as its base (what the pass saw), so it
costs one query; a note's age counts from its frontmatter ``updated_at`` (else ``created_at``).
A note without either has an unknown age, and a rule about age does not match it. ``pinned``
is true when a note the proposal changes says ``pinned: true``; pinned globs in store settings
are not looked up here (apply checks them again, whatever decided).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from daemon.core.notes import Note, as_utc
from daemon.core.proposals import MERGE, REINDEX, SOFT_EXPIRE, SUPERSEDE
from daemon.policies.model import Facts, changed_lines

ARCHIVE = ".dreamd-archive/"


def facts_of(view: Any, blobs: Mapping[str, bytes] | None = None, now: dt.datetime | None = None, pinned: bool = False) -> Facts:
    """Facts of a ``ProposalView``; ``blobs`` (hash -> bytes) give frontmatter and ages when known."""
    base, result = view.base, view.result
    cited = [e["path"] for e in view.evidence if isinstance(e, dict) and "path" in e]
    removed = [p for p in sorted(base) if base[p] is not None and result.get(p) is None]
    notes = tuple(p for p in dict.fromkeys(cited + removed) if not p.startswith(ARCHIVE) and base.get(p, "absent") is not None)
    if view.kind in (MERGE, SUPERSEDE):
        retire = tuple(p for p in removed if p in notes or not p.startswith(ARCHIVE))
    elif view.kind == SOFT_EXPIRE:
        retire = tuple(p for p in notes if p in result and result[p] != base.get(p))
    else:
        retire = ()
    meta: dict[str, dict[str, Any]] = {}
    ages: dict[str, float] = {}
    for note in notes if blobs is not None else ():
        data = blobs.get(base.get(note) or "")
        if data is None:
            continue
        parsed = Note(note, data, base.get(note) or "")
        if parsed.frontmatter_error:
            continue  # unreadable frontmatter: unknown
        meta[note] = parsed.meta
        age = _age(meta[note], now)
        if age is not None:
            ages[note] = age
    changed = [n for n in notes if n in meta and result.get(n, base.get(n)) != base.get(n)]
    pinned = pinned or any(meta[n].get("pinned") is True for n in changed)
    return Facts(
        kind=view.kind, source=view.source, confidence=float(view.confidence), lossy=bool(view.lossy),
        notes=notes if view.kind != REINDEX else tuple(cited), retire=retire,
        changed_lines=changed_lines(view.diff), frontmatter=meta, ages_days=ages, pinned=pinned,
    )  # fmt: skip


def _age(meta: Mapping[str, Any], now: dt.datetime | None) -> float | None:
    """Days since ``updated_at`` (else ``created_at``); None when unknown or unreadable."""
    if now is None:
        return None
    for key in ("updated_at", "created_at"):
        if meta.get(key) is not None:
            moment = as_utc(meta[key])
            return None if moment is None else max(0.0, (now - moment).total_seconds() / 86400)
    return None