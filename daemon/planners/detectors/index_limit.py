"""An index longer than its agent loads: the entries past the cut are never seen.

Claude Code loads the first 200 lines or 25,000 characters of MEMORY.md, DeepCode the first
8,000 characters; whatever lies beyond is not in the prompt, and new entries go at the
bottom. A reindex brings the index back within the limit without losing an entry: runs of
blank lines become one, and the longest entry lines are shortened after their link, at a
word boundary, to the shortest width that fits. When even that cannot bring every entry
back (more entries than lines the agent loads), nothing is proposed: only a person can
decide which notes to fold together. Shortened hooks take words out of what the agent
reads, so the proposal is lossy and waits for a person.
"""

from __future__ import annotations

from daemon.core.index import COMPACT_WIDTHS, compact, unseen
from daemon.core.proposals import REINDEX, Draft
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import quote
from daemon.planners.wording import names


class IndexLimit:
    name = "index-limit"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view, note = ctx.view, ctx.view.index_note
        spec = view.index
        if note is None or spec is None or spec.limit is None:
            return []
        text = view.parsed_index.text
        if spec.limit.fits(text):
            return []
        hidden = unseen(spec, text, view.notes, set(view.listed_paths))
        tightest, _ = compact(spec, text, view.notes, COMPACT_WIDTHS[-1], view.parsed_index)
        if len(unseen(spec, tightest, view.notes, set(view.listed_paths))) >= len(hidden):
            return []  # shortening cannot bring back a single entry
        lines = text.count("\n") + (0 if text.endswith("\n") else 1)
        first_cut = min((e.line for path in hidden for e in view.parsed_index.by_path.get(path, ())), default=lines)
        return [
            Draft(
                kind=REINDEX,
                source=source_of(self),
                confidence=0.7,
                title=f"Bring {spec.path} within what {view.reader.agent} loads ({spec.limit.describe()})",
                rationale=(
                    f"{spec.path} is {lines} lines and {len(text):,} characters, and {view.reader.agent} loads only the first "
                    f"{spec.limit.describe()}: {len(hidden)} entr{'y' if len(hidden) == 1 else 'ies'} ({names(sorted(hidden))}) "
                    "never reach the agent. This shortens the longest entry lines after their link, at a word boundary, "
                    "and collapses runs of blank lines, until the index fits; no entry is removed, and the shortened words "
                    "stay in the notes and in the history. 'show' says how many entries remain unseen after it."
                ),
                evidence=(quote(note, first_cut),),
                index_compact=True,
            )
        ]
