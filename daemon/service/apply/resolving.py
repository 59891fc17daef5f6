"""Close a conflicted journal: undo what dreamd wrote, keep what a person wrote.

Recovery closes a journal as ``conflict`` when a file holds neither the bytes dreamd meant
to replace nor the ones it meant to write: someone edited it while an apply or revert was
interrupted. Nothing is overwritten then, and ``verify`` keeps saying so. ``resolve`` ends
that: every file still holding what dreamd wrote gets its earlier bytes back (compare-and-
swap, under the store's lease), every file someone edited is left as it is, and the
proposal records why (it becomes stale; when nobody else's bytes were in the way, as after
a write the disk refused, it stays accepted and can be applied again). A file a later
apply or revert wrote since is that journal's, and is left as it is. It is idempotent, so a
crash in the middle is mended by running it again: files already rolled back are skipped. A caught file (bytes someone wrote into
dreamd's file while it swapped a note back, ``stores.caught``) is named, never removed: only
the person can tell where its lines belong.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from daemon import logs
from daemon.core.errors import ProposalError
from daemon.core.proposals import ACCEPTED, STALE
from daemon.db import repo
from daemon.service.apply import journal
from daemon.service.context import App
from daemon.service.apply.interrupt import shielded
from daemon.service.leases import holding_store
from daemon.service.apply.recovery import keeper, recover, sweep_journal
from daemon.service.proposals import mark_stale
from daemon.service.workspace import registered_roots, store_config_for_id
from daemon.stores import port

log = logs.get_logger("dreamd.resolve")


@dataclass(frozen=True)
class Resolution:
    journal_id: int
    proposal_id: int
    operation: str
    restored: list[str]  # files that held dreamd's bytes and got their earlier ones back
    kept: list[str]  # files someone edited: left as they are
    left: list[str] = field(default_factory=list)  # files dreamd created, left because someone edited another
    returned: list[str] = field(default_factory=list)  # of restored: got the edit that raced dreamd's write
    caught: list[str] = field(default_factory=list)  # caught files: bytes a person wrote while dreamd swapped a note; never removed
    later: list[str] = field(default_factory=list)  # files a later apply or revert wrote since: left as they are
    state: str = ""  # the proposal's state once resolved


def resolve(app: App, journal_id: int) -> Resolution:
    with app.engine().connect() as conn:
        store_id = repo.journal_store(conn, journal_id)
        if store_id is None:
            raise ProposalError(f"no journal {journal_id}", hint="dreamd verify names conflicted journals")
        store = store_config_for_id(app, conn, store_id)
    recover(app, store)  # a journal a crash left writing is rolled forward (or found in conflict) first, as verify does
    with shielded(), holding_store(app, store_id, store.name):
        with app.engine().connect() as conn:  # read under the lease: a second resolve finds it done
            entry = repo.journal_entry(conn, store_id, journal_id)
        if entry.state != "conflict":
            raise ProposalError(f"journal {journal_id} is {entry.state}, not in conflict; nothing to resolve")
        steps = [journal.Step.from_dict(s) for s in entry.steps["files"]]
        roots = registered_roots(app, store_id, store)
        current = journal.on_disk(roots, [s.path for s in steps])
        with app.engine().connect() as conn:  # a journal left in conflict by an older dreamd may have been applied again since
            since = {(f["path"], f["after"]) for files in repo.finished_steps(conn, store_id, after_journal=journal_id) for f in files}
        later = sorted(s.path for s in steps if (s.path, current[s.path]) in since)
        kept = sorted(s.path for s in steps if current[s.path] not in (s.before, s.after) and s.path not in later)
        ours = [s for s in steps if current[s.path] == s.after and s.after != s.before and s.path not in later]
        # someone re-created or edited a note dreamd was removing: what dreamd created (its
        # archive copy) stays, so the note's earlier bytes are not taken off the disk as well
        recreated = any(s.path in kept and s.after is None for s in steps)
        left = sorted(s.path for s in ours if s.before is None and recreated)
        with app.engine().connect() as conn:
            raced = repo.displaced(conn, store_id, journal_id)
        # an edit that raced dreamd's write comes back in place of what dreamd wrote
        back = [journal.Step(s.path, raced.get(s.path, s.before), s.after) for s in ours if s.path not in left]
        with app.engine().connect() as conn:
            blobs = repo.get_blobs(conn, [s.before for s in back if s.before])
        keep = keeper(app, store_id, journal_id, entry.proposal_id)
        journal.write(roots, back, blobs, temp_dir=journal.temp_dir_for(store.settings, roots), undo=True, journal_id=journal_id, keep=keep)
        sweep_journal(app, roots, store_id, entry, port.find_temp_files(roots))
        caught = port.find_caught_files(roots, journal_id)
        now = app.clock()
        restored = sorted(s.path for s in back)
        returned = sorted(s.path for s in back if s.path in raced)
        with app.engine().begin() as conn:
            repo.close_journal(conn, store_id, journal_id, "resolved", now)
            state = repo.get_proposal(conn, store_id, entry.proposal_id).state
            if entry.operation == "apply" and state == ACCEPTED and (kept or returned or caught):  # someone else's bytes: its base is gone
                reason = f"edited while being applied ({', '.join(kept or returned or caught)}); what dreamd wrote was rolled back"
                mark_stale(app, conn, store_id, entry.proposal_id, reason, now)
                state = STALE
            payload = {"journal": journal_id, "operation": entry.operation, "restored": restored, "kept": kept, "left": left, "returned": returned, "caught": caught, "later": later}
            repo.add_event(conn, store_id, "journal.resolved", app.actor, app.surface, now, payload, proposal_id=entry.proposal_id)
    log.info("journal.resolved", store=store.name, journal=journal_id, restored=len(restored), kept=len(kept), caught=len(caught))
    return Resolution(journal_id, entry.proposal_id, entry.operation, restored, kept, left, returned, caught, later, state)
