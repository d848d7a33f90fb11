"""scheduled posts of a bot (bot_schedule: a fixed text or a prompt, on a cron or an interval in a time zone)

Revision ID: 0011_schedules
Revises: 0010_channel_personas
Create Date: 2026-11-28 03:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0011_schedules'
down_revision: Union[str, None] = '0010_channel_personas'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'bot_schedule',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('channel_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column('content', sa.Text(), nullable=False),
        sa.Column('cron', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('interval_seconds', sa.Integer(), nullable=False),
        sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('grace_seconds', sa.Integer(), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.Column('run_requested', sa.Boolean(), nullable=False),
        sa.Column('next_run_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('last_run_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('last_status', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_bot_schedule_bot_id', 'bot_schedule', ['bot_id'])
    op.create_index('ix_bot_schedule_due', 'bot_schedule', ['enabled', 'next_run_at'])


def downgrade() -> None:
    op.drop_index('ix_bot_schedule_due', table_name='bot_schedule')
    op.drop_index('ix_bot_schedule_bot_id', table_name='bot_schedule')
    op.drop_table('bot_schedule')
