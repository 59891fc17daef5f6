"""Proposals taken out for review with git's own tools: patch files, or a review branch.

A patch file is a block of ``# key: value`` lines (what the proposal is, why, its evidence,
hashes and decisions, and the exact command that applies it from any folder) followed by
the proposal's diff exactly as stored. ``git apply`` skips
every line before the first ``diff --git``, and because each header line starts with ``# ``,
no title, rationale or quoted note line can ever look like a diff header or hunk to it
(``git format-patch``'s mail headers would, and would invite ``git am``, which needs paths
relative to the repository, not to the store). So a file applies unchanged at the store root.

A review branch holds one commit per proposal on top of HEAD, made with plumbing only (see
diffs/plumbing.py), so nothing a person has checked out changes. Export writes into no store:
a patch folder inside one is refused.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.config import StoreConfig
from daemon.core.errors import ConfigError, ProposalError, StaleError
from daemon.core.hashing import hash_bytes
from daemon.core.patch import blocks
from daemon.core.rebase import rebase
from daemon.core.proposals import ACCEPTED, PENDING
from daemon.db import repo
from daemon.diffs.git import quote_git
from daemon.diffs.plumbing import NEW_FILE_MODE, Repository, ScratchIndex, work_tree_top
from daemon.service import recorded
from daemon.service.context import App
from daemon.service.proposals import ProposalView, get_proposal, list_proposals
from daemon.service.workspace import roots_of, store_config_for_id
from daemon.stores.paths import StoreRoots
from daemon.stores.port import Roots, is_records

NAME_CHARS = 48  # the note part of a patch file's name, at most
RECORDS_NOTE = "records (the paths are record keys; the diff is of their rendering: apply it with dreamd apply, not git apply)"
_ODD = re.compile(r"[^A-Za-z0-9._-]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # newline and tab are kept


@dataclass(frozen=True)
class Exported:
    """One patch file written."""

    proposal_id: int
    path: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.proposal_id, "path": self.path}


@dataclass
class BranchReport:
    """The branch made: its commits (proposal id, commit) and the proposals left out, with why."""

    branch: str
    base: str
    commits: list[tuple[int, str]] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "branch": self.branch, "base": self.base,
            "commits": [{"id": pid, "commit": sha} for pid, sha in self.commits],
            "skipped": [{"id": pid, "reason": why} for pid, why in self.skipped],
        }  # fmt: skip


@dataclass(frozen=True)
class _Placed:
    """A proposal with the store it belongs to."""

    view: ProposalView
    store_id: int
    store: StoreConfig
    roots: Roots


def chosen(app: App, ids: list[int], *, pending: bool = False, store_name: str | None = None) -> list[ProposalView]:
    """The proposals given by id, else the open ones (pending and accepted; ``pending``: only
    pending) of every store or of ``store_name``, oldest first. Each must have a diff."""
    if ids:
        views = [get_proposal(app, pid) for pid in dict.fromkeys(ids)]
    else:
        views = list_proposals(app, store_name, [PENDING] if pending else [PENDING, ACCEPTED])
        if not views:
            raise ProposalError("no proposal to export", hint="dreamd proposals lists them")
    empty = [f"#{v.id} ({v.state})" for v in views if not v.diff]
    if empty:
        raise ProposalError(f"nothing was exported: no diff to export in {', '.join(empty)}", hint="a refused proposal changes no file")
    return sorted(views, key=lambda v: v.id)


def _placed(app: App, views: list[ProposalView]) -> list[_Placed]:
    found = []
    with app.engine().connect() as conn:
        for view in views:
            store_id = repo.proposal_store(conn, view.id)
            store = store_config_for_id(app, conn, store_id)  # type: ignore[arg-type]
            found.append(_Placed(view, store_id, store, roots_of(store)))
    return found


# patch files ------------------------------------------------------------------------


def export_patches(app: App, views: list[ProposalView], directory: Path) -> list[Exported]:
    """Write one patch file per proposal into ``directory`` (created if missing), each saying
    the command that applies it."""
    placed = _placed(app, views)
    folder = _patch_folder(directory, placed)
    tops: dict[Path, Path | None] = {}  # store folder -> the top of the work tree it is in
    written = []
    for item in placed:
        target = folder / patch_name(item.view, item.store, item.roots)
        notes = item.roots.notes
        if notes not in tops and not is_records(item.roots):
            tops[notes] = _top_of(notes)
        target.write_bytes(patch_text(item.view, how_to_apply(item.view, notes, tops.get(notes), target)).encode("utf-8"))
        written.append(Exported(item.view.id, str(directory / target.name)))
    return written


def how_to_apply(view: ProposalView, store: Path, top: Path | None, patch: Path) -> tuple[tuple[str, str], ...]:
    """The header lines that say how to apply a patch: the exact command, from any folder,
    and, for a store below the top of a work tree, why ``git apply`` in the store folder
    is not it (git takes paths from the top there, skips every file and exits 0)."""
    if view.store_kind == "records":
        return (("apply", f"dreamd apply {view.id} (after dreamd accept {view.id}; git cannot write a record store)"),)
    if top is None or top == store:
        return (("apply", f"git -C {shlex.quote(str(store))} apply {shlex.quote(str(patch))}"),)
    folder = store.relative_to(top).as_posix()
    return (
        ("apply", f"git -C {shlex.quote(str(top))} apply --directory={shlex.quote(folder)} {shlex.quote(str(patch))}"),
        ("note", f"git apply run inside {folder} applies nothing: git skips every file (Skipped patch) and still exits 0; run the line above, from any folder"),
    )


def _top_of(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in; None outside one (or in one git refuses)."""
    try:
        return work_tree_top(folder)
    except ConfigError:
        return None


def export_report(app: App, views: list[ProposalView], directory: Path) -> list[Path]:
    """The static HTML report of ``views`` (see service/review/pages.py), in a folder outside every
    store; returns its files, index first."""
    from daemon.service.review.pages import write_html_report  # Jinja2 and the templates: only when asked

    return write_html_report(app, views, _patch_folder(directory, _placed(app, views), option="--html"))


def _patch_folder(directory: Path, placed: list[_Placed], option: str = "--dir") -> Path:
    """The folder to write into: not a file, and inside no store of the proposals."""
    folder = directory.expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{option} {directory} is a file, not a folder; nothing was written")
    for item in placed:
        for root in (item.roots.notes, getattr(item.roots, "archive", item.roots.notes)):  # a record store: its database file
            if folder == root or root in folder.parents:
                raise ConfigError(f"{option} {directory} is inside the store {item.store.name}; dreamd writes into a store only by applying a proposal", hint="choose a folder outside the store")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{option} {directory}: {exc.strerror or exc}; nothing was written") from exc
    return folder


def patch_name(view: ProposalView, store: StoreConfig, roots: Roots) -> str:
    """``<id>-<kind>-<first note>.patch``: the first path that is neither the index nor in the
    archive (the index when there is none), without ``.md``, odd characters as ``-``, capped."""
    index = store.settings.index_path
    notes = [p for p in view.paths if p != index and not roots.is_archived(p)]
    first = (notes or view.paths)[0].removesuffix(".md")
    safe = _ODD.sub("-", first).strip(".-")[:NAME_CHARS].rstrip(".-") or "note"
    return f"{view.id}-{view.kind}-{safe}.patch"


def patch_text(view: ProposalView, applying: tuple[tuple[str, str], ...] = ()) -> str:
    """The header block (``applying``: the lines saying how to apply it, after the store's),
    then the diff exactly as stored."""
    fields = [
        ("proposal", str(view.id)), ("store", view.store), *applying, ("state", view.state), ("kind", view.kind),
        ("title", view.title), ("rationale", view.rationale),
        *[("evidence", f"{e['path']}:{e['start']}-{e['end']}\n{e['quote']}") for e in view.evidence],
        *([("store-kind", RECORDS_NOTE)] if view.store_kind == "records" else []),
        ("confidence", f"{view.confidence:.2f}"), ("lossy", "yes" if view.lossy else "no"), ("source", view.source),
        *[("base", _hashed(path, base)) for path, base in view.base.items()],
        *[("result", _hashed(path, result)) for path, result in view.result.items()],
        *[("decision", _decided(d)) for d in view.decisions],
    ]  # fmt: skip
    return "".join(_header_line(key, value) for key, value in fields) + "#\n" + view.diff


def _hashed(path: str, digest: str | None) -> str:
    return f"{quote_git(path)}={digest or 'none'}"


def _decided(decision: dict[str, Any]) -> str:
    """A decision on one line: a policy's verdict reads ``accept by policy:<name>@<hash>``."""
    reason = f": {decision['reason']}" if decision["reason"] else ""
    return f"{decision['decision']} by {decision['actor']} via {decision['surface']} at {decision['at']}{reason}"


def _header_line(key: str, value: str) -> str:
    """``# key: value``, a value's further lines as ``#   line``; control characters escaped."""
    lines = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value.rstrip("\n")).split("\n")
    return f"# {key}: {lines[0]}\n" + "".join(f"#   {line}\n" for line in lines[1:])


# a review branch --------------------------------------------------------------------


def export_branch(app: App, views: list[ProposalView], branch: str) -> BranchReport:
    """Create ``branch`` from HEAD with one commit per proposal that applies, in id order.

    Refused (nothing created) outside a git work tree, when the proposals' stores are in
    different repositories, and when the branch exists. No branch is created when no
    proposal applies; the report says why for each.
    """
    placed = _placed(app, views)
    records = sorted({item.store.name for item in placed if is_records(item.roots)})
    if records:
        raise ConfigError(f"{records[0]} is a record store (a database, not a git work tree): no branch can hold its proposals; nothing was written", hint="export it with --dir or --html, and apply with dreamd apply")
    tops = {work_tree_top(item.roots.notes) for item in placed}
    if len(tops) > 1:
        raise ConfigError(f"the proposals' stores are in {len(tops)} repositories; a branch lives in one", hint="export one store at a time: --store NAME")
    repository = Repository(tops.pop())
    ref = repository.check_new_branch(branch)
    head = repository.head()
    report = BranchReport(branch, head)
    tip = head
    with repository.scratch_index(head) as index:
        for item in placed:
            with app.engine().connect() as conn:
                files, blobs = recorded.proposal_bytes(conn, item.store_id, item.view.id)
            changed = _changed_on(index, repository.top, item, files, blobs)
            if isinstance(changed, str):
                report.skipped.append((item.view.id, changed))
                continue
            for path, (data, mode) in changed.items():
                if data is None:
                    index.remove(path)
                else:
                    index.put(path, data, mode)
            tip = repository.commit(index.write_tree(), tip, commit_message(item.view, files), authored=_git_date(item.view.created_at), committed=_git_date(app.clock()))
            report.commits.append((item.view.id, tip))
    if report.commits:
        repository.create_branch(ref, tip)
    return report


def _changed_on(index: ScratchIndex, top: Path, item: _Placed, files: recorded.Files, blobs: dict[str, bytes]) -> dict[str, tuple[bytes | None, str]] | str:
    """Repository path -> (new bytes or None to remove, mode) for the files the proposal
    writes, on the tree in ``index``; or why it does not apply there.

    A file that holds the proposal's base gets its result; one an earlier commit of the
    branch changed (the index every proposal of a pass edits, a note several rewrite links
    in) gets the proposal's edit placed by what it means, as apply places it
    (core/rebase.py), or the proposal is left out, saying why.
    """
    changed: dict[str, tuple[bytes | None, str]] = {}
    for path, (base, result) in sorted(files.items()):
        if base == result:
            continue
        where = _in_repository(item.roots, top, path)
        if where is None:
            return f"{path} is outside the repository at {top}"
        entry = index.entry(where)
        mode, current = entry if entry is not None else (NEW_FILE_MODE, None)
        if (hash_bytes(current) if current is not None else None) == base:
            changed[where] = (blobs[result] if result is not None else None, mode)
            continue
        if current is None or base is None or result is None:
            return f"{path} is not what the proposal was made from on the branch, and its change does not apply to it"
        spec = item.store.settings.index if path == item.store.settings.index_path else None
        try:
            changed[where] = (rebase(blocks(item.view.diff, path), blobs[base], blobs[result], current, spec), mode)
        except StaleError as exc:
            return f"{path} is not what the proposal was made from on the branch, and {exc}"
    return changed


def _in_repository(roots: StoreRoots, top: Path, path: str) -> str | None:
    """A store path as a path of the repository (the archive may be beside the notes)."""
    root, below = roots.split(path)
    try:
        return (root / below if below else root).relative_to(top).as_posix()
    except ValueError:
        return None


def commit_message(view: ProposalView, files: recorded.Files) -> str:
    """Title, blank line, rationale, then the trailers that tie the commit to the proposal."""
    title = " ".join(view.title.split())
    trailers = [f"Dreamd-Proposal: {view.id}"]
    trailers += [f"Dreamd-Base: {_hashed(path, base)}" for path, (base, _) in sorted(files.items())]
    trailers += [f"Dreamd-Result: {_hashed(path, result)}" for path, (_, result) in sorted(files.items())]
    trailers.append(f"Dreamd-Store: {quote_git(view.store)}")
    return f"{title}\n\n{view.rationale.strip()}\n\n" + "\n".join(trailers) + "\n"


def _git_date(when: str | dt.datetime) -> str:
    """A time in git's own format (seconds since the epoch and the offset); naive means UTC."""
    moment = dt.datetime.fromisoformat(when) if isinstance(when, str) else when
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return f"{int(moment.timestamp())} +0000"
