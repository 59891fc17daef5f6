"""Passes found by store and status: the last completed pass of a store, and whether one is
running, were found by walking every pass the store ever had (the index was on the store
alone), so each pass of a store that never changes cost more than the one before (an hourly
schedule adds 8,760 skipped passes a year). The index on (store, status) finds both at once
and takes the old one's place.

Revision ID: 0012_passes_by_status
Revises: 0011_tombstones_append_only
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0012_passes_by_status"
down_revision = "0011_tombstones_append_only"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_passes_store_status", "passes", ["store_id", "status"])
    op.drop_index("ix_passes_store_id", table_name="passes")


def downgrade() -> None:
    op.create_index("ix_passes_store_id", "passes", ["store_id"])
    op.drop_index("ix_passes_store_status", table_name="passes")
