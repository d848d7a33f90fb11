"""repeat penalty: an LLM setting's repetition penalty for the roles that write prose (NULL: the
provider's default, which for the embedded llama.cpp models is GroBot's own; 1.0: off)

Revision ID: 0009_repeat_penalty
Revises: 0008_deliberation_status
Create Date: 2026-11-28 23:00:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0009_repeat_penalty'
down_revision: Union[str, None] = '0008_deliberation_status'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('llm_setting', schema=None) as batch_op:
        batch_op.add_column(sa.Column('repeat_penalty', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('llm_setting', schema=None) as batch_op:
        batch_op.drop_column('repeat_penalty')
