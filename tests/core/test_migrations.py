"""Alembic is the schema authority: upgrade/downgrade work and agree with the models."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

import grobot.core.models  # noqa: F401
from grobot.core import migrations
from grobot.core.db import get_engine

TABLES = {
    "bot", "llm_setting", "bot_status", "supervisor", "mcp_server", "bot_mcp_server", "conversation",
    "message", "agent_event", "llm_call", "usage_daily", "log_entry", "user_profile", "user_note",
    "bot_file", "setting", "app_user", "app_user_bot", "user_usage_daily", "council", "council_advisor",
    "deliberation", "llm_price", "budget_alert",
}


def test_models_and_migrations_agree(any_db_env):
    with get_engine().connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"


def test_upgrade_and_downgrade_round_trip(any_db_env):
    assert migrations.is_up_to_date()
    assert TABLES <= set(inspect(get_engine()).get_table_names())
    migrations.downgrade(revision="base")
    assert set(inspect(get_engine()).get_table_names()) <= {"alembic_version"}
    migrations.upgrade()
    assert TABLES <= set(inspect(get_engine()).get_table_names())
    assert migrations.current_revision() == migrations.head_revision()


def test_indexes_for_hot_queries(grobot_env):
    insp = inspect(get_engine())

    def indexed(table: str) -> list[list[str]]:
        cols = [ix["column_names"] for ix in insp.get_indexes(table)]
        cols += [uc["column_names"] for uc in insp.get_unique_constraints(table)]
        return cols

    assert ["conversation_id", "created_at", "id"] in indexed("message")
    assert ["bot_id", "created_at"] in indexed("log_entry")
    assert ["run_id", "seq"] in indexed("agent_event")
