"""The stat cache: per store file, its size, mtime, inode and ctime with its hash when a pass
last read it, so a pass over an unchanged store reads and hashes nothing (stores/statcache.py).
An upgraded database starts with it empty: the first pass reads every file, as before.

Revision ID: 0007_stat_cache
Revises: 0006_root_identity
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_stat_cache"
down_revision = "0006_root_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stat_cache",
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("ino", sa.BigInteger(), nullable=False),
        sa.Column("ctime_ns", sa.BigInteger(), nullable=False),
        sa.Column("blob_hash", sa.String(length=64), nullable=False),
        sa.Column("scanned_ns", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["blob_hash"], ["blobs.hash"], name="fk_stat_cache_blob_hash_blobs"),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], name="fk_stat_cache_store_id_stores"),
        sa.PrimaryKeyConstraint("store_id", "path", name="pk_stat_cache"),
    )


def downgrade() -> None:
    op.drop_table("stat_cache")
