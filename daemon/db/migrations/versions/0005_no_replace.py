"""Append-only for real: on SQLite, ``INSERT OR REPLACE`` (and ``REPLACE``) deletes the row it
conflicts with without firing the DELETE triggers, so an event could be rewritten or a blob
swapped. BEFORE INSERT triggers now refuse an event whose id or (store, seq) exists, and skip a
blob whose hash exists (its bytes are those bytes already; ON CONFLICT DO NOTHING still works).
PostgreSQL has no REPLACE; its ON CONFLICT DO UPDATE fires the existing UPDATE trigger.

Revision ID: 0005_no_replace
Revises: 0004_proposal_reads
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005_no_replace"
down_revision = "0004_proposal_reads"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute(
        "CREATE TRIGGER events_no_replace BEFORE INSERT ON events "
        "WHEN EXISTS (SELECT 1 FROM events WHERE id = NEW.id OR (store_id = NEW.store_id AND seq = NEW.seq)) "
        "BEGIN SELECT RAISE(ABORT, 'events are append-only'); END"
    )
    op.execute(
        "CREATE TRIGGER blobs_no_replace BEFORE INSERT ON blobs "
        "WHEN EXISTS (SELECT 1 FROM blobs WHERE hash = NEW.hash) "
        "BEGIN SELECT RAISE(IGNORE); END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TRIGGER events_no_replace")
    op.execute("DROP TRIGGER blobs_no_replace")
