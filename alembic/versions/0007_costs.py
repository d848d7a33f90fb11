"""costs and budgets: prices per model, an estimated cost per LLM call and per day, monthly and cost budgets,
and the budget alerts already given

Revision ID: 0007_costs
Revises: 0006_llm_inherit
Create Date: 2026-11-24 20:15:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0007_costs'
down_revision: Union[str, None] = '0006_llm_inherit'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table('llm_price',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('input_per_million', sa.Float(), nullable=False),
    sa.Column('output_per_million', sa.Float(), nullable=False),
    sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('provider', 'model', name='uq_llm_price_provider_model')
    )
    op.create_table('budget_alert',
    sa.Column('bot_id', sa.Integer(), nullable=False),
    sa.Column('budget', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('period', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('used', sa.Float(), nullable=False),
    sa.Column('budget_limit', sa.Float(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['bot_id'], ['bot.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('bot_id', 'budget', 'period')
    )
    with op.batch_alter_table('llm_call', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cost', sa.Float(), nullable=True))
    with op.batch_alter_table('usage_daily', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cost', sa.Float(), nullable=False, server_default='0'))
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('daily_cost_limit', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('monthly_token_limit', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('monthly_call_limit', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('monthly_cost_limit', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('monthly_cost_limit')
        batch_op.drop_column('monthly_call_limit')
        batch_op.drop_column('monthly_token_limit')
        batch_op.drop_column('daily_cost_limit')
    with op.batch_alter_table('usage_daily', schema=None) as batch_op:
        batch_op.drop_column('cost')
    with op.batch_alter_table('llm_call', schema=None) as batch_op:
        batch_op.drop_column('cost')
    op.drop_table('budget_alert')
    op.drop_table('llm_price')
