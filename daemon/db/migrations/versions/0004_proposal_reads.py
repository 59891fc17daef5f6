"""What a proposal does to what the agent reads (references rewritten or left dangling, the
index against its load limit), so policies and reviewers see it.

Revision ID: 0004_proposal_reads
Revises: 0003_pass_runner
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_proposal_reads"
down_revision = "0003_pass_runner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("proposals") as batch:
        batch.add_column(sa.Column("reads", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("proposals") as batch:
        batch.drop_column("reads")
