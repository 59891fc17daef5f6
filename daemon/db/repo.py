"""Queries of the state database, one function per question, each filtered by store.

Functions take a Connection inside the caller's transaction, so the service decides what
commits together. ``proposal_store`` and ``journal_store`` are the lookups without a store: they tell which
store owns an id a person typed, and nothing else.

The queries live in ``daemon/db/queries/``, a module for each thing they touch (stores;
blobs, manifests, snapshots and the stat cache; passes and model calls; proposals, decisions
and tombstones; events, the journal and leases); callers ask them here, as ``repo.<name>``.
"""

from __future__ import annotations

from daemon.db.queries.stores import (  # noqa: F401
    ensure_store,
    find_store,
    find_store_at,
    rename_store,
    store_by_id,
    all_stores,
)

from daemon.db.queries.snapshots import (  # noqa: F401
    MAX_BLOB_DEPTH,
    put_blobs,
    get_blobs,
    MAX_DELTA_DEPTH,
    save_manifest,
    manifest_entries,
    StatRow,
    stat_cache,
    save_stat_cache,
    add_snapshot,
    latest_snapshot,
    pass_snapshot,
    snapshots,
    manifest_id,
)

from daemon.db.queries.passes import (  # noqa: F401
    start_pass,
    running_passes,
    last_pass,
    finish_pass,
    last_completed_pass,
    passes,
    add_model_calls,
    model_calls,
)

from daemon.db.queries.proposals import (  # noqa: F401
    add_proposal,
    insert_proposal,
    proposal_file_rows,
    add_proposal_files,
    proposal_store,
    get_proposal,
    proposal_files,
    files_of,
    list_proposals,
    states_of,
    open_proposals_with_keys,
    latest_with_keys,
    set_state,
    add_decision,
    decisions_of,
    add_tombstone,
    has_tombstone,
    tombstoned,
    value_tombstones,
    rejected_changes,
    lift_change_tombstone,
    lift_value_tombstones,
    decisions_since,
    proposal_counts,
)

from daemon.db.queries.journal import (  # noqa: F401
    add_event,
    Events,
    events,
    DISPLACED,
    displaced,
    failed_journals,
    open_journal,
    close_journal,
    finished_steps,
    finished_applies,
    journal_writes,
    made_folders,
    unfinished_journals,
    acquire_lease,
    renew_lease,
    release_lease,
    journal_store,
    journal_entry,
)
