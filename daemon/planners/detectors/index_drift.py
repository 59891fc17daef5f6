"""Index drift: the index no longer matches the notes it should list.

Agents read the index (MEMORY.md, tasks/_index.md) first, so an entry pointing at a
missing note wastes a lookup, an entry for a retired (superseded or expired) note revives
stale knowledge, and an unlisted live note is never found. A note another draft of
this pass retires is not added (its merge or expiry would take it out again). One reindex draft per pass
fixes all three; it touches only the index. Confidence 0.9: the facts are certain, but a
person may keep an entry on purpose.
"""

from __future__ import annotations

from daemon.core.proposals import REINDEX, Draft
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line, quote


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _names(paths: list[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


class IndexDrift:
    name = "index-drift"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view, index = ctx.view, ctx.view.index_note
        if index is None:
            return []
        listed = view.listed()
        present = set(view.notes) | set(view.other_files) | {index.path}
        dangling = sorted(p for p in listed if p not in present)
        retired = sorted(p for p in listed if p in view.notes and not view.notes[p].live)
        unlisted = sorted(
            n.path
            for n in view.live_notes()
            if view.should_list(n) and n.path not in listed and n.path not in ctx.retiring
        )
        if not (dangling or retired or unlisted):
            return []
        parts = [
            f"drop {_count(len(dangling), 'dangling entry', 'dangling entries')}" if dangling else "",
            f"drop {_count(len(retired), 'entry', 'entries')} for retired notes" if retired else "",
            f"add {_count(len(unlisted), 'unlisted note', 'unlisted notes')}" if unlisted else "",
        ]
        why = [
            f"it lists {_names(dangling)}, which {'does' if len(dangling) == 1 else 'do'} not exist"
            if dangling
            else "",
            f"it still lists retired {_names(retired)}" if retired else "",
            f"live {_names(unlisted)} {'is' if len(unlisted) == 1 else 'are'} not listed" if unlisted else "",
        ]
        evidence = [quote(index, line) for path in (*dangling, *retired) for line in listed[path]]
        evidence += [e for e in map(first_body_line, (view.notes[p] for p in unlisted)) if e]
        return [
            Draft(
                kind=REINDEX,
                source=source_of(self),
                confidence=0.9,
                title=f"Reindex {index.path}: {', '.join(p for p in parts if p)}",
                rationale=f"{index.path} has drifted: {'; '.join(w for w in why if w)}. Only the index changes.",
                evidence=tuple(dict.fromkeys(evidence)),
                index_drop=tuple(sorted(dangling + retired)),
                index_add=tuple(unlisted),
            )
        ]
