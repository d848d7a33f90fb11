"""Running Alembic from code (CLI ``db upgrade``, ``make run``, tests)."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from alembic import command
from grobot.core.db import get_engine
from grobot.core.settings import get_settings

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def alembic_config(database_url: str | None = None) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "alembic"))
    config.attributes["database_url"] = database_url or get_settings().database_url
    config.attributes["configure_logging"] = False
    return config


def upgrade(database_url: str | None = None, revision: str = "head") -> None:
    """Bring the database to ``revision`` (default: the newest)."""
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str | None = None, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


def current_revision(database_url: str | None = None) -> str | None:
    with get_engine(database_url).connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def is_up_to_date(database_url: str | None = None) -> bool:
    return current_revision(database_url) == head_revision()
