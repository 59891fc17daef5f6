"""A store's notes folder is recorded by device and inode when it is registered, so a folder
replaced at the same path (a swapped symlink, a re-created directory) is refused, not written.

Revision ID: 0006_root_identity
Revises: 0005_no_replace
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_root_identity"
down_revision = "0005_no_replace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("stores") as batch:
        batch.add_column(sa.Column("root_identity", sa.Text(), nullable=True))  # "device:inode"; NULL until the next pass records it


def downgrade() -> None:
    with op.batch_alter_table("stores") as batch:
        batch.drop_column("root_identity")
