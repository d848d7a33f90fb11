"""documents: a bot's files indexed for answers (bot_document), and its documents settings
(bot.documents_enabled, documents_threshold, documents_max_file_bytes, documents_max_passages)

Revision ID: 0009_documents
Revises: 0009_repeat_penalty
Create Date: 2026-11-27 21:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0009_documents'
down_revision: Union[str, None] = '0009_repeat_penalty'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('bot_document',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('bot_id', sa.Integer(), nullable=False),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
    sa.Column('sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('passages', sa.Integer(), nullable=False),
    sa.Column('pages', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('settings_key', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('bot_id', 'path', name='uq_bot_document_bot_path')
    )
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('documents_enabled', sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column('documents_threshold', sa.Float(), nullable=False, server_default='0.3'))
        batch_op.add_column(sa.Column('documents_max_file_bytes', sa.Integer(), nullable=False,
                                      server_default=str(5 * 1024 * 1024)))
        batch_op.add_column(sa.Column('documents_max_passages', sa.Integer(), nullable=False, server_default='20000'))


def downgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('documents_max_passages')
        batch_op.drop_column('documents_max_file_bytes')
        batch_op.drop_column('documents_threshold')
        batch_op.drop_column('documents_enabled')
    op.drop_table('bot_document')
