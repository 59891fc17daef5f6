"""The state database's tables (SQLAlchemy Core).

The schema is created and upgraded only by the Alembic migrations in ``migrations/``;
this module is the Python view of it, and a test checks the two agree.

Times are stored as timezone-aware UTC. JSON columns carry a ``"v"`` version key where
their shape may change.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

HASH = String(64)


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp that is always timezone-aware UTC in Python.

    SQLite keeps no zone and hands back naive datetimes; PostgreSQL hands back the
    session's zone. A naive value on write is refused rather than guessed at, because a
    guessed zone silently shifts TTLs and lease expiries by hours.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value.isoformat()} refused: pass an aware UTC time")
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


UTC = UTCDateTime()

stores = Table(
    "stores",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("root", Text, nullable=False),
    Column("preset", String(50), nullable=False),
    Column("created_at", UTC, nullable=False),
    Column("root_identity", Text),  # "device:inode" of the root folder at registration
)

# Bytes stored once, addressed by BLAKE3; never updated or deleted (triggers refuse it).
# A blob with a base is stored as a delta of it (db/packing.py): the bytes both share at the
# start and at the end are the base's, only the middle is kept; ``depth`` counts the deltas
# down to whole bytes (0: ``data`` is the blob). An index that one apply edits by a line
# costs a line, not the whole index again. A large whole blob may be kept compressed.
blobs = Table(
    "blobs",
    metadata,
    Column("hash", HASH, primary_key=True),
    Column("size", Integer, nullable=False),  # of the whole blob
    Column("data", LargeBinary, nullable=False),
    Column("packed", Boolean, nullable=False, server_default=false()),  # zlib-compressed (whole blobs only)
    Column("base_hash", HASH),  # a blob stored before it; never deleted
    Column("depth", Integer, nullable=False, server_default="0"),
)

# A manifest is a store's content at one moment: path -> blob. Shared by every snapshot
# that saw the same root hash, so an unchanged store costs one row per pass, not 10,000.
# A manifest with a base is a delta, as git packs objects: its entries are the paths whose
# blob differs from the base's, its drops the paths the base has and it has not; ``depth``
# counts the deltas down to a full manifest (0: full), ``chain_rows`` their rows: a delta is
# made while rebuilding costs at most twice a full copy. k changed files cost k rows.
manifests = Table(
    "manifests",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("root_hash", HASH, nullable=False),
    Column("file_count", Integer, nullable=False),
    Column("base_id", Integer),  # a manifest of the same store, older; never deleted
    Column("depth", Integer, nullable=False, server_default="0"),
    Column("chain_rows", Integer, nullable=False, server_default="0"),  # delta rows down to the full one
    UniqueConstraint("store_id", "root_hash", name="uq_manifests_store_root"),
)

manifest_entries = Table(
    "manifest_entries",
    metadata,
    Column("manifest_id", Integer, ForeignKey("manifests.id"), primary_key=True),
    Column("path", Text, primary_key=True),
    Column("blob_hash", HASH, ForeignKey("blobs.hash"), nullable=False),
)

manifest_drops = Table(
    "manifest_drops",
    metadata,
    Column("manifest_id", Integer, ForeignKey("manifests.id"), primary_key=True),
    Column("path", Text, primary_key=True),
)

passes = Table(
    "passes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("status", String(20), nullable=False),  # running | completed | skipped | failed
    Column("surface", String(20), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("started_at", UTC, nullable=False),
    Column("finished_at", UTC),
    Column("root_hash", HASH),
    Column("planner", Text),  # fingerprint of detectors and settings that ran
    Column("next_due_at", UTC),  # earliest time a TTL falls due; a pass before it may skip
    Column("stats", JSON),  # {"v":1, "notes":..., "proposed":..., "refused":..., ...}
    Column("error", Text),
    Column("runner", String(200)),  # host:pid of the process running it; a dead one means the pass died
    # a store's last completed pass, a running one: found at once, not by walking its history
    Index("ix_passes_store_status", "store_id", "status"),
)

snapshots = Table(
    "snapshots",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("manifest_id", Integer, ForeignKey("manifests.id"), nullable=False),
    Column("reason", String(30), nullable=False),  # pass | apply-before | apply-after | revert-before | revert-after
    Column("pass_id", Integer, ForeignKey("passes.id")),
    Column("proposal_id", Integer, ForeignKey("proposals.id")),
    Column("recorded_at", UTC, nullable=False),
    Index("ix_snapshots_store_recorded", "store_id", "recorded_at"),
)

proposals = Table(
    "proposals",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("pass_id", Integer, ForeignKey("passes.id")),
    Column("kind", String(20), nullable=False),  # merge | supersede | soft-expire | reindex | relink | relocate
    Column("state", String(20), nullable=False),
    Column("source", String(200), nullable=False),  # detector:<name>@<version> | model:<name>
    Column("confidence", Float, nullable=False),
    Column("lossy", Boolean, nullable=False, default=False),
    Column("title", Text, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("evidence", JSON, nullable=False),  # {"v":1, "items":[{"path","start","end","quote"}]}
    Column("change_key", HASH, nullable=False),  # tombstone key of this change
    Column("diff", Text, nullable=False),
    # {"v":1, "rewritten", "dangling": [...], "index_limit", "unloaded_before", "unloaded_after", "holds": [...]}
    Column("reads", JSON),
    Column("state_reason", Text),
    Column("created_at", UTC, nullable=False),
    Column("updated_at", UTC, nullable=False),
    Index("ix_proposals_store_state", "store_id", "state"),
    Index("ix_proposals_store_key", "store_id", "change_key"),
)

# One row per file a proposal reads or writes. base_hash NULL: the file does not exist
# before (created); result_hash NULL: it does not exist after (moved away). Base bytes are
# blobs (every scanned file is); result bytes are not stored: they are rebuilt from the
# base and the proposal's diff, which was proven to give exactly them, so a pass over a
# store with a large index does not keep one full copy of the index per proposal.
proposal_files = Table(
    "proposal_files",
    metadata,
    Column("proposal_id", Integer, ForeignKey("proposals.id"), primary_key=True),
    Column("path", Text, primary_key=True),
    Column("base_hash", HASH, ForeignKey("blobs.hash")),
    Column("result_hash", HASH),
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("proposal_id", Integer, ForeignKey("proposals.id"), nullable=False, index=True),
    Column("decision", String(10), nullable=False),  # accept | reject | unaccept, unreject (a decision taken back)
    Column("actor", String(200), nullable=False),
    Column("surface", String(20), nullable=False),
    Column("reason", Text),
    Column("bound_key", HASH, nullable=False),  # the change_key the decision was made on
    Column("decided_at", UTC, nullable=False),
)

# key_kind "change": a rejected proposal's change_key. key_kind "value": the normalised
# body hash of a retired note, so the same fact coming back is noticed. Append-only, like
# events (triggers refuse UPDATE and DELETE): a tombstone taken back (unreject, a revert) is
# a row with ``lifted`` true, and a key is tombstoned while its newest row is not a lift.
tombstones = Table(
    "tombstones",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("key_kind", String(10), nullable=False),
    Column("key", HASH, nullable=False),
    Column("proposal_id", Integer, ForeignKey("proposals.id")),
    Column("note_path", Text),
    Column("reason", Text),
    Column("created_at", UTC, nullable=False),
    Column("lifted", Boolean, nullable=False, server_default=false()),
    Index("ix_tombstones_store_kind_key", "store_id", "key_kind", "key"),
)

# Append-only (triggers refuse UPDATE and DELETE). seq counts per store from 1.
events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("at", UTC, nullable=False),
    Column("type", String(50), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("surface", String(20), nullable=False),
    Column("pass_id", Integer),
    Column("proposal_id", Integer),
    Column("payload", JSON, nullable=False),
    UniqueConstraint("store_id", "seq", name="uq_events_store_seq"),
)

# The write-ahead record of an apply or revert. steps: {"v":1, "files":[{"path",
# "before": hash|null, "after": hash|null}]}. state: prepared -> writing -> done | rolled-back.
journal = Table(
    "journal",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("proposal_id", Integer, ForeignKey("proposals.id"), nullable=False),
    Column("operation", String(10), nullable=False),  # apply | revert
    Column("state", String(20), nullable=False),
    Column("steps", JSON, nullable=False),
    Column("created_at", UTC, nullable=False),
    Column("finished_at", UTC),
    Index("ix_journal_state", "state"),
)

# One pass per store at a time, across processes and hosts.
leases = Table(
    "leases",
    metadata,
    Column("store_id", Integer, ForeignKey("stores.id"), primary_key=True),
    Column("holder", String(200), nullable=False),
    Column("acquired_at", UTC, nullable=False),
    Column("expires_at", UTC, nullable=False),
    Column("heartbeat_at", UTC, nullable=False),
)

# One row per model call of an LLM pass: what it cost and what it was made from. No note
# text and no key is ever stored here; ``notes`` lists the paths that were sent.
model_calls = Table(
    "model_calls",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("store_id", Integer, ForeignKey("stores.id"), nullable=False),
    Column("pass_id", Integer, ForeignKey("passes.id"), nullable=False, index=True),
    Column("at", UTC, nullable=False),
    Column("model", String(200), nullable=False),
    Column("template", String(200), nullable=False),
    Column("template_hash", HASH, nullable=False),
    Column("status", String(20), nullable=False),  # ok | repaired | failed
    Column("finish_reason", String(40)),
    Column("prompt_tokens", Integer, nullable=False),
    Column("completion_tokens", Integer, nullable=False),
    Column("cost", Float),  # USD; NULL when the model has no price
    Column("latency_ms", Integer, nullable=False),
    Column("http_calls", Integer, nullable=False),
    Column("redactions", Integer, nullable=False),
    Column("notes", JSON, nullable=False),  # {"v": 1, "paths": [...]}
    Column("error", Text),
)

# What the model has been shown of a store (see db/ledger.py): a row per note shown, with the
# hash it had then (kind "note", key = its path), and a row per candidate group whose notes
# were all shown but never in one call (kind "open", key "g:" + a hash of its paths; members
# {"v": 1, "paths": [...], "reasons": [...]}; digest: a hash of the members' hashes).
model_ledger = Table(
    "model_ledger",
    metadata,
    Column("store_id", Integer, ForeignKey("stores.id"), primary_key=True),
    Column("key", Text, primary_key=True),
    Column("kind", String(10), nullable=False),
    Column("digest", HASH, nullable=False),
    Column("members", JSON),
    Column("pass_id", Integer),
    Column("at", UTC, nullable=False),
)

# The stat cache (see stores/statcache.py): per file of a store, its stat and hash when a
# pass last read it, so the next pass reads only what changed. A row is written in the
# transaction that stores (or already holds) the file's blob. Nanosecond times and inode
# numbers need 64 bits; an inode above 2**63 is kept as its two's-complement value.
stat_cache = Table(
    "stat_cache",
    metadata,
    Column("store_id", Integer, ForeignKey("stores.id"), primary_key=True),
    Column("path", Text, primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("ino", BigInteger, nullable=False),
    Column("ctime_ns", BigInteger, nullable=False),
    Column("blob_hash", HASH, ForeignKey("blobs.hash"), nullable=False),
    Column("scanned_ns", BigInteger, nullable=False),  # wall clock when the scan that read it began
)

# What the no-op lane last vouched for from the stat cache, as one digest (see
# stores/scan.py, ``StatWalk``): the sorted paths and stats of the files it would otherwise
# look up row by row, the root hash they hold, and the files among them a scan reads and
# skips (binary, not UTF-8, ...). Written by the lane with a skip; dropped whenever the stat
# cache changes.
stat_digests = Table(
    "stat_digests",
    metadata,
    Column("store_id", Integer, ForeignKey("stores.id"), primary_key=True),
    Column("digest", HASH, nullable=False),
    Column("root_hash", HASH, nullable=False),
    Column("skips", JSON, nullable=False),  # [[path, reason], ...]
)
