"""Before a record store's proposal is stored: every record it writes must be one Dexto accepts.

Pure (no database): the check reads the change's result bytes only. A record the proposal
would write that breaks Dexto's rules (content over 10,000 characters, a field Dexto's
strict schema refuses) or that dreamd would not read back as the same bytes makes the
proposal refused, with the reason.
"""

from __future__ import annotations

from dataclasses import replace

from daemon.core.hashing import hash_bytes
from daemon.core.proposals import Change, Draft
from daemon.core.view import StoreView
from daemon.stores.records import dexto
from daemon.stores.records.merging import merged_record
from daemon.stores.records.rendering import NotRenderable, canonical, render, value_of


def canonical_draft(draft: Draft, view: StoreView) -> Draft:
    """A record store's draft with the survivor's new rendering in dreamd's own form (a
    planner that edited the header, e.g. adding ``merged_from``, wrote it as YAML), a merge
    carrying the retired records' tags and metadata (``merging``); a rendering that stands
    for no valid record is left as it is, for ``result_refusal``."""
    if view.reader != dexto.READER:
        return draft
    draft = merged_record(draft, view)
    if draft.survivor_data is None:
        return draft
    try:
        return replace(draft, survivor_data=canonical(draft.survivor_data))
    except (ValueError, NotRenderable, UnicodeDecodeError):
        return draft


def result_refusal(change: Change, view: StoreView) -> str | None:
    """Why a record this change writes is not a valid Dexto memory; None when all are (or
    when the store is not a record store)."""
    if view.reader != dexto.READER:
        return None
    for path in change.written:
        data = change.after(path)
        if data is None or path.startswith(view.archive_dir + "/"):
            continue  # deleted, or kept in dreamd's blobs as the archive
        if not path.startswith(dexto.KEY_PREFIX):
            return f"{path} is not a memory record (memory:item:<id>); a record store holds nothing else"
        try:
            value = value_of(data)
            same = hash_bytes(render(value)) == hash_bytes(data)
        except (ValueError, NotRenderable, UnicodeDecodeError) as exc:
            return f"{path} would not be a valid Dexto memory: {exc}"
        if not same:
            return f"{path}: its result is not a record as dreamd renders one"
    return None
