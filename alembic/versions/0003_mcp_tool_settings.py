"""mcp tool settings: per bot and tool of an MCP server, a fallback tool and a read/write override

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 18:00:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


revision: str = '0003'
down_revision: Union[str, None] = '0002'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('bot_mcp_server', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tool_settings', sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bot_mcp_server', schema=None) as batch_op:
        batch_op.drop_column('tool_settings')
