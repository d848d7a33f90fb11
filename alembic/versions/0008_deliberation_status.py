"""deliberation status: running (stored as its advisors answer, for the Council tab), done or failed

Revision ID: 0008_deliberation_status
Revises: 0007_costs
Create Date: 2026-11-26 21:30:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0008_deliberation_status'
down_revision: Union[str, None] = '0007_costs'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('deliberation', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False,
                                      server_default='done'))
    # A deliberation stored without a synthesis failed.
    op.execute("UPDATE deliberation SET status = 'failed' WHERE confidence IS NULL")


def downgrade() -> None:
    with op.batch_alter_table('deliberation', schema=None) as batch_op:
        batch_op.drop_column('status')
