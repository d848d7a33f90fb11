"""Plain words and human units (issue 30 items 6 to 8): technical text split into a sentence for everyone
and the detail for admins, durations in s and min, money with 2 decimals (more significant digits for tiny
sums), the answered-message log line by name and in seconds, log lines' sources in words, token counts."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from grobot.core import plain_text
from grobot.core.agents import chain
from grobot.core.agents.roles import role_name
from grobot.core.agents.run_store import answered_line
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.llm.context_window import text_tokens
from grobot.core.services import bots, discord_users, log_entries, users
from grobot.core.services.costs import money
from grobot.core.wording import duration


@pytest.mark.parametrize("seconds,text", [(0.3, "300 ms"), (0.9994, "999 ms"), (0.9996, "1.0 s"), (4.25, "4.2 s"),
                                          (45.804, "45.8 s"), (60, "1 min"),
                                          (206.039, "3 min 26 s"), (7500, "2 h 5 min")])
def test_durations_read_in_seconds_and_minutes(seconds: float, text: str) -> None:
    assert duration(seconds) == text


@pytest.mark.parametrize("value,text", [(0, "EUR 0.00"), (0.14, "EUR 0.14"), (12.5, "EUR 12.50"),
                                        (0.0016, "EUR 0.0016"), (0.0000036, "EUR 0.0000036"), (None, "—")])
def test_money_has_two_decimals_or_two_significant_digits(value: float | None, text: str) -> None:
    assert money(value, "EUR") == text


def test_technical_text_is_split_into_plain_words_and_the_detail() -> None:
    status = plain_text.bot_status("cannot reach Discord: Cannot connect to host discord.com:443 ssl:default "
                                   "[Name or service not known]")
    assert status.text == "Discord could not be reached; the worker tries again"
    assert "discord.com:443" in status.detail
    assert plain_text.bot_status("no heartbeat received; is the bot worker running?").detail == ""
    error = plain_text.run_error("openai at not a url: connection failed (InvalidUrlClientError: not%20a%20url/models)")
    assert error.text == "openai at not a url: connection failed" and "InvalidUrlClientError" in error.detail
    unreachable = plain_text.run_error("cannot reach the ollama server at http://127.0.0.1:11434 (is it running?)")
    assert unreachable.text == "cannot reach the ollama server (is it running?)"
    step = plain_text.without_technical("no tool matches the message (embeddings+words: user_notes_read 0.21); "
                                        "answering directly", fallback="")
    assert step.text == "no tool matches the message; answering directly"
    traceback = plain_text.without_technical("Bot process failed\nTraceback (most recent call last):\nRuntimeError: x",
                                             fallback="")
    assert traceback.text == "Bot process failed" and traceback.detail.startswith("Bot process failed\nTraceback")
    assert plain_text.run_error("Slow down a little: please wait 1 s") == plain_text.Plain("Slow down a little: please wait 1 s")
    # What admins read (the Logs) may name an address; an exception's text still goes to the details.
    logged = plain_text.without_technical("Cannot reach Discord at https://discord.com/api/v10: Cannot connect to host "
                                          "discord.com:443 ssl:default", fallback="", addresses=False)
    assert logged.text == "Cannot reach Discord at https://discord.com/api/v10"
    hostile = 'Tool said: <img src="http://127.0.0.1:8080/x">'
    assert plain_text.without_technical(hostile, fallback="", addresses=False) == plain_text.Plain(hostile)


def test_roles_and_log_sources_read_in_words() -> None:
    assert role_name("tool_identifier") == "Tool Identifier" and role_name("new_role") == "New role"
    assert [log_entries.source_of(name) for name in ("bot_worker.bot_process", "bot_worker.tester_chat_job",
                                                     "grobot.core.tools.mcp_hub", "grobot.core.agents.chain",
                                                     "grobot.core.llm.service", "something.else")] == \
        ["Discord", "Test Chat", "Tools", "Answering", "LLM", "GroBot"]


def test_the_answered_message_line_names_the_user_and_reads_in_seconds(caplog) -> None:
    msg = IncomingMessage(bot_id=1, conversation_key="test:1", content="hi", author_id="app-user:3",
                          author_name="tess", platform="test_chat")
    line = answered_line(chain._answered(msg, 206.039, 7, SimpleNamespace(tokens_in=3000, tokens_out=200)), 5)
    assert [line] == ["Answered a message (Test Chat, tess, run 5) in 3 min 26 s: 7 LLM calls, "
                               "3,000 tokens in, 200 out"]


def test_older_log_lines_read_by_name_and_in_seconds(grobot_env) -> None:
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="reader").id or 0
        admin = users.create_user(session=session, username="ada", password=users.generate_password())
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id="123456789012345678",
                                     directives="", display_name="Grace")
        lines = [log_entries.LogLine(id=1, created_at=datetime.now(UTC), level="INFO", logger="x", message=text)
                 for text in (f"Answered a message (Test Chat, user app-user:{admin.id}, run 5) in 206039 ms: x",
                              "Bot 1: Discord user 123456789012345678 reached the daily message limit",
                              "Answered a message (channel 9, user 555555555555555555, run 6) in 950 ms: x")]
        shown = log_entries.readable_messages(lines, session=session, bot_id=bot_id)
    assert shown == ["Answered a message (Test Chat, ada, run 5) in 3 min 26 s: x",
                     "Bot 1: Discord user Grace reached the daily message limit",
                     "Answered a message (channel 9, user 555555555555555555, run 6) in 950 ms: x"]


def test_token_counts_follow_words_not_characters() -> None:
    assert text_tokens("Be brief. " * 1000) == 3000
    assert text_tokens("") == 0
    assert text_tokens("日本語") == 3
