"""who may use a bot (bot.allowed/blocked_user_ids, allowed/blocked_role_ids, discord_role: the roles a bot
saw) and moderation (bot.moderation_words, moderation_patterns, moderation_action, moderation_ask_model)

Revision ID: 0009_access_moderation
Revises: 0009_web_search_images
Create Date: 2026-11-27 10:00:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0009_access_moderation'
down_revision: Union[str, None] = '0009_web_search_images'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

LISTS = ('allowed_user_ids', 'blocked_user_ids', 'allowed_role_ids', 'blocked_role_ids', 'moderation_words',
         'moderation_patterns')


def upgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        for name in LISTS:
            batch_op.add_column(sa.Column(name, sa.JSON(), nullable=False, server_default=sa.text("'[]'")))
        batch_op.add_column(sa.Column('moderation_action', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False,
                                      server_default='refuse'))
        batch_op.add_column(sa.Column('moderation_ask_model', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.create_table(
        'discord_role',
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('role_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('guild_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('guild_name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('bot_id', 'role_id'),
    )


def downgrade() -> None:
    op.drop_table('discord_role')
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('moderation_ask_model')
        batch_op.drop_column('moderation_action')
        for name in reversed(LISTS):
            batch_op.drop_column(name)
