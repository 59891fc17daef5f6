"""Index drift: the index no longer matches the notes it should list.

Agents read the index (MEMORY.md, tasks/_index.md) first, so an entry pointing at a
missing note wastes a lookup, an entry for a retired (superseded or expired) note revives
stale knowledge, and an unlisted live note is never found. A note another draft of
this pass retires is not added (its merge or expiry would take it out again). One reindex
draft fixes all three; it touches only the index. New entries go into the section their
note belongs to (a Cline task's status, a note's type) and are not cut mid-word; a Cline
task whose status cannot be read is left unlisted rather than filed under a wrong one. A
Cline task is listed by its id, once: a file whose id has a line already is not added again,
and files that share an id none of whose lines lists are left for a person (the pass names
them: ``duplicate-task-id``).

An entry whose note exists under another name (moved to another folder, re-spelled in case
or ``_``/``-``/space: ``daemon.planners.targets``) is repointed, not dropped: the line keeps its
words and its link names the note, which is then not added a second time. An entry that
could mean several notes is left as it is for a person (the pass reports it with the
dangling references it could mean several notes for).

An index line can be the only record of what it names: a Cline task line whose file is
missing holds the task's name, status and note. Such lines are never dropped; a draft for
each of those tasks writes it a file from its line (one file a proposal, ``MAX_FILES``), so
the entry resolves and nothing leaves what the agent reads. A MEMORY.md line whose note
exists nowhere is dropped, and the rationale says where dreamd looked; when the line says
more than the link (a hook), dropping it takes words out of what the agent reads: that
draft is lossy and says so. The index's own edit is one proposal for the index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from daemon.core.changes import new_entry
from daemon.core.index import BY_STATUS, CLINE_TASKS, LINKS, drop_lines, fitting, status_named, task_id, task_status
from daemon.core.notes import Note
from daemon.core.proposals import REINDEX, Draft
from daemon.core.view import StoreView
from daemon.planners.context import PlanContext, source_of
from daemon.planners.detectors.dangling import MAX_FILES
from daemon.planners.evidence import MAX_EVIDENCE, first_body_line, quote
from daemon.planners.targets import Targets
from daemon.planners.wording import count, names

_LINK = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)")
_WORDS = re.compile(r"\w")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_TASK_LINE = re.compile(r"^\s*[-*]\s*\[(TASK[0-9A-Za-z_]+?)(?:(?:\.\.|-)[0-9A-Za-z_]+)?\]\s*(.*?)\s*$")


class IndexDrift:
    name = "index-drift"
    version = 4  # 2: sections, record lines kept, lossy drops said so; 3: repoints, one task file a proposal; 4: a task listed once, by its id

    def detect(self, ctx: PlanContext) -> list[Draft]:
        view, index = ctx.view, ctx.view.index_note
        if index is None or view.index is None:
            return []
        listed = view.listed()
        present = set(view.notes) | set(view.other_files) | {index.path}
        missing = sorted(p for p in listed if p not in present)
        retired = sorted(p for p in listed if p in view.notes and not view.notes[p].live)
        candidates = [n for n in view.live_notes() if view.should_list(n) and n.path not in listed and n.path not in ctx.retiring]
        shared: list[str] = []
        if view.index.format == CLINE_TASKS:  # a task is listed by its id, once
            ids = {task_id(p) for p in listed}
            candidates = [n for n in candidates if task_id(n.path) not in ids]
            shared = [n.path for n in candidates if task_id(n.path) in view.shared_task_ids]
        unplaced = [n.path for n in candidates if view.index.sections == BY_STATUS and task_status(n.body) is None]
        records = missing if view.index.format == CLINE_TASKS else []
        found = _found(view, ctx.retiring, [p for p in missing if p not in records], {n.path for n in candidates})
        dangling = sorted([*found.nowhere, *found.elsewhere])
        placed = set(found.moves.values())
        unlisted, unloaded = _within_limit(view, dangling + retired, sorted(n.path for n in candidates if n.path not in unplaced and n.path not in placed and n.path not in shared))
        drafts = []
        if dangling or retired or unlisted or found.moves:
            drafts.append(self._reindex(view, index, listed, found, retired, unlisted, list(dict.fromkeys(unplaced + shared)), unloaded))
        return drafts + [d for chunk in _chunks(records, MAX_FILES) if (d := self._records(view, index, listed, chunk)) is not None]

    def _reindex(self, view: StoreView, index: Note, listed: dict[str, list[int]], found: Found, retired: list[str], unlisted: list[str], unplaced: list[str], unloaded: list[str]) -> Draft:  # noqa: PLR0913
        moves, nowhere = found.moves, sorted(found.nowhere)
        dangling = sorted([*nowhere, *found.elsewhere])
        lines = index.data.decode("utf-8", errors="replace").split("\n")
        said = sorted({p for p in dangling for n in listed[p] if _says_more(lines[n - 1])})
        parts = [
            f"repoint {count(len(moves), 'entry', 'entries')}" if moves else "",
            f"drop {count(len(dangling), 'dangling entry', 'dangling entries')}" if dangling else "",
            f"drop {count(len(retired), 'entry', 'entries')} for retired notes" if retired else "",
            f"add {count(len(unlisted), 'unlisted note', 'unlisted notes')}" if unlisted else "",
        ]
        looked = "; ".join(found.nowhere[p] for p in nowhere[:3]) + ("; …" if len(nowhere) > 3 else "")
        why = [
            f"it lists {names([f'{a} (the note is {b})' for a, b in sorted(moves.items())])}, under a name the note does not have: "
            f"{'the line keeps its words and its link names the note' if len(moves) == 1 else 'each line keeps its words and its link names the note'}" if moves else "",
            f"it lists {names(nowhere)}, which exist{'s' if len(nowhere) == 1 else ''} nowhere in the store (looked for: {looked})" if nowhere else "",
            f"it lists {names([f'{a} (the note is {b}, {_why_not(view, b)})' for a, b in sorted(found.elsewhere.items())])}" if found.elsewhere else "",
            f"it still lists retired {names(retired)}" if retired else "",
            f"live {names(unlisted)} {'is' if len(unlisted) == 1 else 'are'} not listed" if unlisted else "",
        ]
        if said:
            tail = (
                f" The lines of {names(said)} say more than a link: dropping them takes those words out of what the agent "
                "reads first (they stay in the history), so this is lossy."
            )
        else:
            tail = " Only the index changes, and no words leave what the agent reads but entries naming notes that are gone."
        shared = [p for p in unplaced if task_id(p) in view.shared_task_ids]
        unread = [p for p in unplaced if p not in shared]
        if unread:
            tail += f" Not added: {names(unread)}, whose status cannot be read to choose its section."
        if shared:
            tail += f" Not added: {names(shared)}, which share{'s' if len(shared) == 1 else ''} a task id with another file (a line would mean either; the pass names them)."
        if unloaded and view.index.limit is not None:
            tail += (
                f" Not added: {names(unloaded)}: {view.reader.agent} would not load {'its entry' if len(unloaded) == 1 else 'their entries'} "
                f"({view.index.limit.describe()}); fold notes together or shorten the index to make room."
            )
        evidence = [quote(index, line) for path in (*moves, *dangling, *retired)[:MAX_EVIDENCE] for line in listed[path][:1]]
        evidence += [e for e in map(first_body_line, (view.notes[p] for p in unlisted[:MAX_EVIDENCE])) if e]
        return Draft(
            kind=REINDEX,
            source=source_of(self),
            confidence=0.9,
            title=f"Reindex {index.path}: {', '.join(p for p in parts if p)}",
            rationale=f"{index.path} has drifted: {'; '.join(w for w in why if w)}.{tail}",
            evidence=tuple(dict.fromkeys(evidence))[:MAX_EVIDENCE],
            index_drop=tuple(sorted(dangling + retired)),
            index_add=tuple(unlisted),
            index_repoint=tuple(sorted(found.moves.items())),
            lossy=bool(said),
        )

    def _records(self, view: StoreView, index: Note, listed: dict[str, list[int]], records: list[str]) -> Draft | None:
        """Give each task that exists only as an index line a file written from that line."""
        lines = index.data.decode("utf-8", errors="replace").split("\n")
        create, evidence = [], []
        for placeholder in records:
            number = listed[placeholder][0]
            section = _section_of(lines, number)
            made = _task_file(placeholder, lines[number - 1], section, index.path)
            if made is not None and made[0] not in view.notes:
                create.append(made)
                evidence.append(quote(index, number))
        if not create:
            return None
        ids = [path.rsplit("/", 1)[-1].split("-", 1)[0] for path, _ in create]
        return Draft(
            kind=REINDEX,
            source=source_of(self),
            confidence=0.6,
            title=f"Give {count(len(create), 'task', 'tasks')} known only from {index.path} a file: {names(ids)}",
            rationale=(
                f"{index.path} lists {names(ids)}, but no task file has {'that id' if len(ids) == 1 else 'those ids'}: "
                f"each line is the only record of its task, so dreamd keeps it and writes the task a file from it "
                "(its name, status and note, nothing more), where the agent looks for the task's details. "
                "Nothing is removed; check that the tasks are still wanted."
            ),
            evidence=tuple(evidence[:MAX_EVIDENCE]),
            create=tuple(create),
        )


@dataclass(frozen=True)
class Found:
    """What became of the notes missing entries name: found under another name (``moves``:
    the line is repointed; ``elsewhere``: the note has an entry already, or is not one the
    index lists, and this one goes), or
    nowhere (the entry goes, with what was looked for). Entries that could mean several
    notes, or a note this pass retires, are in none: left for a person, or for that proposal."""

    moves: dict[str, str] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)
    nowhere: dict[str, str] = field(default_factory=dict)  # listed path -> what was looked for


def _found(view: StoreView, retiring: frozenset[str], missing: list[str], unlisted: set[str]) -> Found:
    found = Found()
    if view.index is None or view.index.format != LINKS:
        found.nowhere.update({path: path for path in missing})
        return found
    targets = Targets.of_view(view)
    for path in missing:
        near = targets.of_path(path)
        note = near.unique
        if not near.candidates:
            found.nowhere[path] = near.looked_for
        elif note is None or note in retiring:
            continue
        elif note in unlisted and note not in found.moves.values():
            found.moves[path] = note
        else:
            found.elsewhere[path] = note
    return found


def _why_not(view: StoreView, path: str) -> str:
    """Why an entry is not repointed at the note found for it."""
    return "listed under its own name" if path in view.listed_paths else "which the index does not list"


def ambiguous_entries(view: StoreView) -> list[tuple[str, tuple[str, ...]]]:
    """Entries naming no note that could mean several live notes: each with its candidates."""
    if view.index is None or view.index.format != LINKS or view.index_note is None:
        return []
    present = set(view.notes) | set(view.other_files)
    targets = Targets.of_view(view)
    found = ((path, targets.of_path(path).candidates) for path in sorted(view.listed()) if path not in present)
    return [(path, candidates) for path, candidates in found if len(candidates) > 1]


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _within_limit(view: StoreView, drop: list[str], unlisted: list[str]) -> tuple[list[str], list[str]]:
    """The unlisted notes whose entries fit within what the agent loads, and the rest."""
    spec = view.index
    assert spec is not None
    if spec.limit is None or not unlisted:
        return unlisted, []
    text = "".join(drop_lines(spec, view.parsed_index, set(drop)))
    kept, left = fitting(spec, text, [new_entry(view, p) for p in unlisted])
    return [e.path for e in kept], [e.path for e in left]


def _says_more(line: str) -> bool:
    """Whether an index line has words beyond its links and list punctuation (a hook)."""
    return bool(_WORDS.search(_LINK.sub("", line)))


def _section_of(lines: list[str], number: int) -> str | None:
    """The status named by the heading above line ``number`` (1-based), if it names one."""
    for line in reversed(lines[: number - 1]):
        match = _HEADING.match(line.strip())
        if match:
            return status_named(match.group(1))
    return None


def _task_file(placeholder: str, line: str, status: str | None, index_path: str) -> tuple[str, bytes] | None:
    """A task file for an index line whose task has none: ``tasks/TASKnnn-slug.md``."""
    match = _TASK_LINE.match(line)
    if match is None:
        return None
    ident, rest = match.group(1), match.group(2)
    name, _, note = (part.strip() for part in rest.partition(" - "))
    slug = "-".join(re.findall(r"[a-z0-9]+", name.casefold()))[:48].strip("-") or "task"
    folder = placeholder.rsplit("/", 1)[0] if "/" in placeholder else ""
    path = f"{folder}/{ident}-{slug}.md" if folder else f"{ident}-{slug}.md"
    body = [f"# [{ident}] - {name or ident}", "", f"**Status:** {status or 'unknown'}", ""]
    if note:
        body += ["## Original Request", note, ""]
    body += ["## Progress Log", f"- Written by dreamd from this line of {index_path}, the only record of the task: `{line.strip()}`", ""]
    return path, "\n".join(body).encode("utf-8")
