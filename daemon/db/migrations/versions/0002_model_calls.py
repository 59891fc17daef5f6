"""Model calls of LLM passes: tokens, cost, latency, template hash, status.

Revision ID: 0002_model_calls
Revises: 0001_initial
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_model_calls"
down_revision = "0001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("store_id", sa.Integer(), nullable=False),
        sa.Column("pass_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("template", sa.String(length=200), nullable=False),
        sa.Column("template_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("finish_reason", sa.String(length=40), nullable=True),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("http_calls", sa.Integer(), nullable=False),
        sa.Column("redactions", sa.Integer(), nullable=False),
        sa.Column("notes", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["pass_id"], ["passes.id"], name="fk_model_calls_pass_id_passes"),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], name="fk_model_calls_store_id_stores"),
        sa.PrimaryKeyConstraint("id", name="pk_model_calls"),
    )
    op.create_index("ix_model_calls_pass_id", "model_calls", ["pass_id"])


def downgrade() -> None:
    op.drop_index("ix_model_calls_pass_id", table_name="model_calls")
    op.drop_table("model_calls")
