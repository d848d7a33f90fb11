"""Fixtures of the core tests."""

from __future__ import annotations

import pytest

from tests.core.tool_chain_helpers import make_bot
from tests.fakes.llm import use_fake_llm


@pytest.fixture
def bot(grobot_env, fake_llm) -> int:
    """A bot whose every LLM category is the fake LLM (a module may define its own)."""
    bot_id = make_bot()
    use_fake_llm(fake_llm, bot_id=bot_id)
    return bot_id
