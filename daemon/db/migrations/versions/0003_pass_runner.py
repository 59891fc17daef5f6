"""Which process ran a pass (host:pid), so a pass whose process died can be closed as failed.

Revision ID: 0003_pass_runner
Revises: 0002_model_calls
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_pass_runner"
down_revision = "0002_model_calls"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("passes") as batch:
        batch.add_column(sa.Column("runner", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("passes") as batch:
        batch.drop_column("runner")
