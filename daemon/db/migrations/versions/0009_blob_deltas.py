"""Blobs as deltas of an earlier version of the same file, and large whole blobs compressed
(db/packing.py): an apply that edits one line of a large index stores that line, not the
index again. Blobs already stored stay as they are (whole, not compressed).

Revision ID: 0009_blob_deltas
Revises: 0008_manifest_deltas
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_blob_deltas"
down_revision = "0008_manifest_deltas"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("blobs", sa.Column("packed", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("blobs", sa.Column("base_hash", sa.String(length=64), nullable=True))
    op.add_column("blobs", sa.Column("depth", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    # not batch mode: on SQLite it rebuilds the table, and the append-only triggers with it would go
    for column in ("depth", "base_hash", "packed"):
        if op.get_bind().dialect.name == "sqlite":
            op.execute(f"ALTER TABLE blobs DROP COLUMN {column}")  # SQLite 3.35+
        else:
            op.drop_column("blobs", column)
