"""claimed runs of scheduled posts (bot_schedule_run: an owner and an expiry until the post is confirmed)

Revision ID: 0012_schedule_runs
Revises: 0011_schedules
Create Date: 2026-11-28 08:50:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0012_schedule_runs'
down_revision: Union[str, None] = '0011_schedules'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'bot_schedule_run',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('schedule_id', sa.Integer(), nullable=False),
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('due_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('run_now', sa.Boolean(), nullable=False),
        sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('claimed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('expires_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('text', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['schedule_id'], ['bot_schedule.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_bot_schedule_run_schedule_id', 'bot_schedule_run', ['schedule_id'])
    op.create_index('ix_bot_schedule_run_bot_id', 'bot_schedule_run', ['bot_id'])
    op.create_index('ix_bot_schedule_run_expires_at', 'bot_schedule_run', ['expires_at'])


def downgrade() -> None:
    op.drop_index('ix_bot_schedule_run_expires_at', table_name='bot_schedule_run')
    op.drop_index('ix_bot_schedule_run_bot_id', table_name='bot_schedule_run')
    op.drop_index('ix_bot_schedule_run_schedule_id', table_name='bot_schedule_run')
    op.drop_table('bot_schedule_run')
