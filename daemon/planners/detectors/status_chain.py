"""Status chains: a series of dated or numbered progress notes, where only the newest holds.

Agents checkpoint their work as ``checkpoint_week7_complete``, ``week8``, ``status-0312``,
``phase1_complete``: each note was the current state when written, and once a newer one of
the series exists the older ones are read as current too, with figures that no longer hold.
A note belongs to a series when its file name has a number (or a date) and either a status
word (status, progress, checkpoint...) or only a period word (week, phase, sprint...) beside
words that say how far it got (complete, done, next...). The series is the name with its
numbers and those outcome words taken out, in one folder: ``checkpoint_week7_complete`` and
``checkpoint_week10_complete`` are one series, ``phase2_architecture`` is no status note.

The newest is the one with the highest numbers, a tie broken by its frontmatter date; a
series whose newest cannot be told (a tie, or an older note dated later than the newest)
gets no proposal. Each older note is superseded by the newest. An older checkpoint can still
hold the only record of something, so this waits for a person: confidence 0.6, below what
any shipped policy accepts.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass

from daemon.core.notes import Note
from daemon.core.proposals import SUPERSEDE, Draft
from daemon.core.view import StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.evidence import first_body_line
from daemon.planners.survivor import can_retire
from daemon.planners.wording import count

CONFIDENCE = 0.6
STATUS_WORDS = frozenset({"status", "progress", "checkpoint", "standup", "handoff", "changelog", "devlog", "journal"})
PERIOD_WORDS = frozenset({"week", "phase", "sprint", "milestone", "iteration", "day", "stage", "round"})
# how far a period got, or which report of it: not part of the series' name
OUTCOME_WORDS = frozenset({
    "complete", "completed", "done", "finished", "next", "plan", "planned", "wip", "summary", "final", "update",
    "updates", "report", "current", "latest", "in", "started", "start", "end", "review", "recap", "results",
})  # fmt: skip
# the type prefixes agents put on names (Claude Code's project_, feedback_...): not a topic
TYPE_WORDS = frozenset({"project", "user", "feedback", "reference", "memory", "note", "notes"})
_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


@dataclass(frozen=True)
class Member:
    """One note of a series: where it sits in the order, and what decides it."""

    note: Note
    numbers: tuple[int, ...]
    dated: dt.datetime | None  # frontmatter date, None when it has none


def series_of(path: str) -> tuple[str, tuple[str, ...], tuple[int, ...]] | None:
    """(folder, series name, numbers) of a status note's path; None when it is none."""
    folder, name = posixpath.split(path)
    tokens = [t.lower() if not t.isdigit() else t for t in _TOKEN.findall(posixpath.splitext(name)[0])]
    words = {t for t in tokens if not t.isdigit()}
    numbers = tuple(int(t) for t in tokens if t.isdigit())
    topic = words - STATUS_WORDS - PERIOD_WORDS - OUTCOME_WORDS - TYPE_WORDS
    status = bool(words & STATUS_WORDS) or (bool(words & PERIOD_WORDS) and not topic)
    if not numbers or not status:
        return None
    key = tuple("#" if t.isdigit() else t for t in tokens if t not in OUTCOME_WORDS)
    return folder, key, numbers


class StatusChains:
    name = "status-chain"
    version = 1

    def detect(self, ctx: PlanContext) -> list[Draft]:
        series: dict[tuple[str, tuple[str, ...]], list[Member]] = defaultdict(list)
        for note in ctx.view.live_notes():
            found = series_of(note.path)
            if found is not None:
                folder, key, numbers = found
                dated = note.dated()
                series[(folder, key)].append(Member(note, numbers, dated[0] if dated else None))
        drafts = []
        for (folder, key), members in sorted(series.items()):
            newest = _newest(members)
            if newest is None or newest.note.path in ctx.retiring:
                continue
            older = [m for m in members if m is not newest and can_retire(ctx.view, m.note) and m.note.path not in ctx.retiring]
            if older:
                drafts.append(self._draft(ctx.view, _label(folder, key), newest, sorted(older, key=_order)))
        return drafts

    def _draft(self, view: StoreView, series: str, newest: Member, older: list[Member]) -> Draft:
        names = [m.note.path for m in older]
        chain = " < ".join([*names, newest.note.path])
        evidence = [first_body_line(m.note) for m in (*older, newest)]
        return Draft(
            kind=SUPERSEDE,
            source=source_of(self),
            confidence=CONFIDENCE,
            title=f"Supersede {count(len(names), 'older note')} of the status series {series} with {newest.note.path}",
            rationale=(
                f"{chain} are one series of progress notes ({series}), in the order of their numbers"
                f"{' and dates' if newest.dated else ''}. Each was the current state when written; {newest.note.path} is the newest, "
                f"so {'the older one is' if len(names) == 1 else 'the older ones are'} read as current with what no longer holds. "
                "Each older note is marked superseded by the newest, not deleted. An older checkpoint may still hold the only record "
                "of something (the evidence quotes how each begins), so a person decides."
            ),
            evidence=tuple(e for e in evidence if e),
            retire=tuple(names),
            survivor=newest.note.path,
        )


def _order(member: Member) -> tuple[tuple[int, ...], dt.datetime]:
    return member.numbers, member.dated or dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def _newest(members: list[Member]) -> Member | None:
    """The series' newest note, or None when it cannot be told apart."""
    if len(members) < 2:
        return None
    ranked = sorted(members, key=_order, reverse=True)
    first, second = ranked[0], ranked[1]
    if first.numbers == second.numbers and (first.dated is None or second.dated is None or first.dated == second.dated):
        return None  # same numbers and no date to decide
    later = [m for m in ranked[1:] if first.dated is not None and m.dated is not None and m.dated > first.dated]
    return None if later else first


def _label(folder: str, key: tuple[str, ...]) -> str:
    """The series as a reader recognises it: ``checkpoint_week#``, in its folder."""
    name = "_".join(key).replace("_#", "#")
    return f"{folder}/{name}" if folder else name
