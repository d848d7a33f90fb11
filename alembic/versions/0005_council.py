"""advisory council: a bot's council (council), its advisors (council_advisor), past deliberations (deliberation)

Revision ID: 0005_council
Revises: 0004
Create Date: 2026-11-24 20:30:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0005_council'
down_revision: Union[str, None] = '0004'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        'council',
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.Column('synthesis_category', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('synthesis_provider', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('synthesis_model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('bot_id'),
    )
    op.create_table(
        'council_advisor',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('role', sa.Text(), nullable=False),
        sa.Column('category', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('enabled', sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('bot_id', 'name', name='uq_council_advisor_bot_name'),
    )
    op.create_table(
        'deliberation',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('bot_id', sa.Integer(), nullable=False),
        sa.Column('question', sa.Text(), nullable=False),
        sa.Column('asked_by', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('platform', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column('advisors', sa.JSON(), nullable=False),
        sa.Column('synthesis', sa.Text(), nullable=False),
        sa.Column('consensus', sa.Text(), nullable=False),
        sa.Column('disagreements', sa.JSON(), nullable=False),
        sa.Column('recommendation', sa.Text(), nullable=False),
        sa.Column('confidence', sa.Integer(), nullable=True),
        sa.Column('tokens_in', sa.Integer(), nullable=False),
        sa.Column('tokens_out', sa.Integer(), nullable=False),
        sa.Column('cost', sa.Float(), nullable=True),
        sa.Column('seconds', sa.Float(), nullable=False),
        sa.Column('error', sa.Text(), nullable=False),
        sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_deliberation_bot_created', 'deliberation', ['bot_id', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_deliberation_bot_created', table_name='deliberation')
    op.drop_table('deliberation')
    op.drop_table('council_advisor')
    op.drop_table('council')
