"""llm inherit: a bot's LLM override stores only the values the admin set (model, context window and
temperature may be NULL: inherited from the global default, or the provider's default)

Revision ID: 0006_llm_inherit
Revises: 0005_council
Create Date: 2026-11-24 20:30:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0006_llm_inherit'
down_revision: Union[str, None] = '0005_council'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('llm_setting', schema=None) as batch_op:
        batch_op.alter_column('model', existing_type=sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True)
        batch_op.alter_column('context_window', existing_type=sa.Integer(), nullable=True)
        batch_op.alter_column('temperature', existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("UPDATE llm_setting SET model = '' WHERE model IS NULL")
    op.execute("UPDATE llm_setting SET context_window = 8192 WHERE context_window IS NULL")
    op.execute("UPDATE llm_setting SET temperature = 0.7 WHERE temperature IS NULL")
    with op.batch_alter_table('llm_setting', schema=None) as batch_op:
        batch_op.alter_column('temperature', existing_type=sa.Float(), nullable=False)
        batch_op.alter_column('context_window', existing_type=sa.Integer(), nullable=False)
        batch_op.alter_column('model', existing_type=sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False)
