"""The stat cache's digest: what the no-op lane last vouched for, as one row per store.

A pass over an unchanged store of 10,000 notes read 10,000 stat-cache rows (a tenth of its
time) to compare them with the files' stats one by one. The lane now keeps, once it has
vouched that way, one digest of the paths and stats it compared, and the next time compares
the store's stats with that digest alone (see stores/scan.py, ``StatWalk``). A change of the
stat cache drops the store's row.

Revision ID: 0013_stat_digests
Revises: 0012_passes_by_status
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_stat_digests"
down_revision = "0012_passes_by_status"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stat_digests",
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("root_hash", sa.String(64), nullable=False),
        sa.Column("skips", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], name="fk_stat_digests_store_id_stores"),
        sa.PrimaryKeyConstraint("store_id", name="pk_stat_digests"),
    )


def downgrade() -> None:
    op.drop_table("stat_digests")
