"""note suggestions: a bot's Archivist notes may wait for an admin (bot.notes_need_approval, user_note.status)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 19:00:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0004'
down_revision: Union[str, None] = '0003'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('notes_need_approval', sa.Boolean(), nullable=False,
                                      server_default=sa.false()))
    with op.batch_alter_table('user_note', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False,
                                      server_default='active'))


def downgrade() -> None:
    with op.batch_alter_table('user_note', schema=None) as batch_op:
        batch_op.drop_column('status')
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('notes_need_approval')
