"""web search and images: a bot's web tools on or off and its own SearXNG instance; the images of a
run (a tool's, shown in Test Chat; a tester's, sent with a message)

Revision ID: 0009_web_search_images
Revises: 0009_documents
Create Date: 2026-11-27 22:40:00
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision: str = '0009_web_search_images'
down_revision: Union[str, None] = '0009_documents'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.add_column(sa.Column('web_search', sa.Boolean(), nullable=False, server_default=sa.false()))
        batch_op.add_column(sa.Column('web_search_url', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True))
    op.create_table('run_image',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('origin', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('mime_type', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('data', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['message.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('run_image', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_run_image_run_id'), ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('run_image', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_run_image_run_id'))
    op.drop_table('run_image')
    with op.batch_alter_table('bot', schema=None) as batch_op:
        batch_op.drop_column('web_search_url')
        batch_op.drop_column('web_search')
