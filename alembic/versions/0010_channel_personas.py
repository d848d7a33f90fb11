"""a persona per channel: a bot's personality addition and LLM overrides per category in one Discord
channel and its threads (channel_persona); the channel a Test Chat message is tested as (message.as_channel_id)

Revision ID: 0010_channel_personas
Revises: 0009_access_moderation
Create Date: 2026-11-28 03:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0010_channel_personas'
down_revision: Union[str, None] = '0009_access_moderation'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'channel_persona',
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('channel_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('personality', sa.Text(), nullable=False),
        sa.Column('llms', sa.JSON(), nullable=False),
        sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('bot_id', 'channel_id'),
    )
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.add_column(sa.Column('as_channel_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('message', schema=None) as batch_op:
        batch_op.drop_column('as_channel_id')
    op.drop_table('channel_persona')
