"""The model ledger: what the LLM planner has shown the model of each store (db/ledger.py),
so a pass can prove that every note was shown, and a large store is covered over passes.
An upgraded database starts with it empty, so the next pass with a model shows it every note
once: the passes before recorded which notes changed, not which the model was shown.

Revision ID: 0010_model_ledger
Revises: 0009_blob_deltas
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_model_ledger"
down_revision = "0009_blob_deltas"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_ledger",
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("members", sa.JSON(), nullable=True),
        sa.Column("pass_id", sa.Integer(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], name="fk_model_ledger_store_id_stores"),
        sa.PrimaryKeyConstraint("store_id", "key", name="pk_model_ledger"),
    )


def downgrade() -> None:
    op.drop_table("model_ledger")
