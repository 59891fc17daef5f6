"""A merge of Dexto records is a record: one content, the others' tags and metadata, nothing
dropped unsaid.

Dexto shows each memory as one prompt item (``- <content> [Tags: a, b]``), filters
``memory_list`` by tags and by ``metadata.source``, and keeps whatever else metadata holds
(``dexto``). The planners choose the content: one text, the longest or a model's merged
sentence checked for loss (``daemon.planners.merge.one_text``). This step gives the surviving
record what the retired ones carry besides:

- tags: the survivor's, then each retired record's it lacks, in order; past Dexto's limit
  (``MAX_TAGS``) the rest are dropped, which makes the merge lossy and holds it for a person;
- metadata: each key a retired record has and the survivor lacks (its ``source``, when the
  survivor has none); a key both have with other values keeps the survivor's, and the other
  value is dropped (lossy: Dexto keeps one ``source`` a memory, user or system);
- ``merged_from`` is the planners' record of the votes, left as they set it; a pinned survivor
  is never changed, so whatever the others add is dropped instead.

The rationale lists each record's source and every tag and value the merge drops. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from daemon.core.hashing import hash_bytes
from daemon.core.proposals import MERGE, Draft
from daemon.core.view import StoreView
from daemon.stores.records import dexto
from daemon.stores.records.rendering import NotRenderable, render, value_of

VOTES = "merged_from"  # set by the planners (daemon.planners.merge), never taken from a retired record here


@dataclass
class Union:
    """The surviving record, and what the retired records carried that it could not keep."""

    record: dict[str, Any]
    dropped: list[str] = field(default_factory=list)  # each as the rationale says it
    over_limit: list[str] = field(default_factory=list)  # tags past Dexto's limit


def merged_record(draft: Draft, view: StoreView) -> Draft:
    """A record store's merge with the retired records' tags and metadata on its survivor, and
    lossy (and, past the tag limit, held) when any of them cannot be kept. Any other draft,
    or one whose records do not parse (``checks.result_refusal`` says why), as it is."""
    if draft.kind != MERGE or draft.survivor not in view.notes:
        return draft
    survivor = view.notes[draft.survivor]
    try:
        record = _record(draft.survivor_data if draft.survivor_data is not None else survivor.data)
        others = [(path.removeprefix(dexto.KEY_PREFIX), _record(view.notes[path].data)) for path in draft.retire if path in view.notes]
    except (ValueError, NotRenderable, UnicodeDecodeError):
        return draft
    union = _union(record, others, frozen=survivor.pinned)
    data = render(dexto.serialise(union.record))
    said = _sources(record, others, draft.survivor.removeprefix(dexto.KEY_PREFIX)) + _drops(union)
    held = (f"would give {draft.survivor} more than Dexto's {dexto.MAX_TAGS} tags: {', '.join(union.over_limit)} would be dropped",) if union.over_limit else ()
    return replace(
        draft,
        survivor_data=None if hash_bytes(data) == survivor.hash else data,
        lossy=draft.lossy or bool(union.dropped),
        held=draft.held + held,
        rationale=draft.rationale + said,
    )


def _record(data: bytes) -> dict[str, Any]:
    return json.loads(value_of(data))


def _union(record: dict[str, Any], others: list[tuple[str, dict[str, Any]]], *, frozen: bool) -> Union:
    """``record`` with the others' tags and metadata; ``frozen``: nothing may be added to it."""
    out = Union(dict(record))
    tags = list(record.get("tags") or ())
    new = [t for t in dict.fromkeys(t for _, other in others for t in other.get("tags") or ()) if t not in tags]
    room = 0 if frozen else dexto.MAX_TAGS - len(tags)
    if new[:room]:
        out.record["tags"] = tags + new[:room]
    out.over_limit = new[room:] if not frozen else []
    out.dropped += [f"tag {t!r}" for t in new[room:]]
    metadata = dict(record.get("metadata") or {})
    for ident, other in others:
        for key, value in (other.get("metadata") or {}).items():
            if key == VOTES or (key in metadata and metadata[key] == value):
                continue  # the planners' votes, or a value the survivor has already
            if key in metadata or frozen:
                out.dropped.append(f"metadata.{key} {json.dumps(value, ensure_ascii=False)} of {ident}")
            else:
                metadata[key] = value
    if metadata:
        out.record["metadata"] = metadata
    return out


def _sources(record: dict[str, Any], others: list[tuple[str, dict[str, Any]]], ident: str) -> str:
    """The ``metadata.source`` of every record merged, when any has one."""
    found = [(ident, record), *others]
    sources = [(i, (r.get("metadata") or {}).get("source")) for i, r in found]
    if not any(source for _, source in sources):
        return ""
    return " Sources (metadata.source): " + ", ".join(f"{i} {source or 'none'}" for i, source in sources) + "."


def _drops(union: Union) -> str:
    if not union.dropped:
        return ""
    limit = f" (Dexto keeps at most {dexto.MAX_TAGS} tags)" if union.over_limit else ""
    return f" The merged record cannot keep {', '.join(union.dropped)}{limit}: they leave the memory (revert brings them back). Lossy."
