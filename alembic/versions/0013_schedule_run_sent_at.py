"""when a claimed scheduled run's post began (bot_schedule_run.sent_at): taken again only within the nonce window

Revision ID: 0013_schedule_run_sent_at
Revises: 0012_schedule_runs
Create Date: 2026-11-28 12:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0013_schedule_run_sent_at'
down_revision: Union[str, None] = '0012_schedule_runs'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('bot_schedule_run') as batch:
        batch.add_column(sa.Column('sent_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bot_schedule_run') as batch:
        batch.drop_column('sent_at')
