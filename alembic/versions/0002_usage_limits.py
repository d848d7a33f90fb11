"""usage limits: per-bot daily limits and per-user daily message counts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 15:30:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0002'
down_revision: Union[str, None] = '0001'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('daily_token_limit', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('daily_call_limit', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('user_daily_message_limit', sa.Integer(), nullable=True))
    op.create_table('user_usage_daily',
    sa.Column('bot_id', sa.Integer(), nullable=False),
    sa.Column('day', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('discord_user_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('messages', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('bot_id', 'day', 'discord_user_id')
    )


def downgrade() -> None:
    op.drop_table('user_usage_daily')
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('user_daily_message_limit')
        batch_op.drop_column('daily_call_limit')
        batch_op.drop_column('daily_token_limit')
