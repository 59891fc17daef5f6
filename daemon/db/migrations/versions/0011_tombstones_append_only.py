"""Tombstones append-only, like events: deleting the row of a rejection brought the rejected
change back. Triggers now refuse UPDATE and DELETE (and, on SQLite, an INSERT OR REPLACE of an
existing row; on PostgreSQL, TRUNCATE). A tombstone taken back (``unreject``, a revert lifting
the values its apply retired) is a new row with ``lifted`` true; a key is tombstoned while its
newest row is not a lift. One key may so have several rows: the unique constraint on
(store, kind, key) gives way to a plain index. Rows already stored are tombstones in effect.

Revision ID: 0011_tombstones_append_only
Revises: 0010_model_ledger
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_tombstones_append_only"
down_revision = "0010_model_ledger"
branch_labels = None
depends_on = None

MESSAGE = "tombstones are append-only"
UNIQUE = "uq_tombstones_store_kind_key"
INDEX = "ix_tombstones_store_kind_key"


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:  # a table rebuild, as SQLite cannot drop a constraint; tombstones had no triggers to lose
        with op.batch_alter_table("tombstones", recreate="always") as batch:
            batch.drop_constraint(UNIQUE, type_="unique")
            batch.add_column(sa.Column("lifted", sa.Boolean(), nullable=False, server_default=sa.false()))
    else:
        op.drop_constraint(UNIQUE, "tombstones", type_="unique")
        op.add_column("tombstones", sa.Column("lifted", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_index(INDEX, "tombstones", ["store_id", "key_kind", "key"])
    if sqlite:
        for verb in ("UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER tombstones_no_{verb.lower()} BEFORE {verb} ON tombstones BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END")
        op.execute(
            "CREATE TRIGGER tombstones_no_replace BEFORE INSERT ON tombstones "
            "WHEN EXISTS (SELECT 1 FROM tombstones WHERE id = NEW.id) "
            f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
        )
        return
    # 23001 restrict_violation: drivers report it as an IntegrityError, like SQLite's.
    op.execute(
        "CREATE FUNCTION tombstones_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'restrict_violation'; END $$"
    )
    op.execute("CREATE TRIGGER tombstones_append_only BEFORE UPDATE OR DELETE ON tombstones FOR EACH ROW EXECUTE FUNCTION tombstones_refuse_change()")
    op.execute("CREATE TRIGGER tombstones_no_truncate BEFORE TRUNCATE ON tombstones FOR EACH STATEMENT EXECUTE FUNCTION tombstones_refuse_change()")


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for name in ("no_update", "no_delete", "no_replace"):
            op.execute(f"DROP TRIGGER tombstones_{name}")
    else:
        op.execute("DROP TRIGGER tombstones_no_truncate ON tombstones")
        op.execute("DROP TRIGGER tombstones_append_only ON tombstones")
        op.execute("DROP FUNCTION tombstones_refuse_change()")
    # one row per key again: the tombstones in effect (a key whose newest row is a lift has none)
    op.execute(
        "DELETE FROM tombstones WHERE lifted OR EXISTS (SELECT 1 FROM tombstones AS newer "
        "WHERE newer.store_id = tombstones.store_id AND newer.key_kind = tombstones.key_kind "
        "AND newer.key = tombstones.key AND newer.id > tombstones.id)"
    )
    op.drop_index(INDEX, table_name="tombstones")
    if sqlite:
        with op.batch_alter_table("tombstones", recreate="always") as batch:
            batch.drop_column("lifted")
            batch.create_unique_constraint(UNIQUE, ["store_id", "key_kind", "key"])
    else:
        op.drop_column("tombstones", "lifted")
        op.create_unique_constraint(UNIQUE, "tombstones", ["store_id", "key_kind", "key"])
