"""Web search from Discord, end to end: a real bot process whose settings (web search on) come over
the bot link, its built-in web_search through the ddgs library to DuckDuckGo's HTML endpoint behind
a fake HTTPS proxy on 127.0.0.1; a bot with web search off never searches; with the proxy gone the
user still gets an answer and the model heard only that search is unavailable."""

from __future__ import annotations

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import Message
from tests.fakes.web import FakeWeb, Hit, closed_port
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow

QUESTION = "search the web for the GroBot release date"


def _tool_messages() -> list[str]:
    with session_scope(readonly=True) as session:
        return [m.content for m in session.exec(select(Message).where(Message.role == "tool")).all()]


def test_a_discord_user_gets_an_answer_from_the_web(grobot_env, tmp_path):
    with FakeWeb() as web, fleet(grobot_env, tmp_path) as world:
        web.hits = [Hit("GroBot 2.0 released", "https://news.example/grobot-2", "GroBot 2.0 came out on 3 March 2026.")]
        searcher = world.add_bot("searcher", user_cooldown_seconds=0, web_search=True)
        offline = world.add_bot("offline", user_cooldown_seconds=0)
        world.start_supervisor(GROBOT_WEB_PROXY=web.proxy_url, GROBOT_WEB_CA_FILE=str(web.ca_file))
        world.wait_online(searcher)
        world.wait_online(offline)

        reply = world.wait_reply(world.mention(searcher, QUESTION), timeout=60)
        assert reply["content"]
        assert web.searches == [QUESTION]  # the user's own words, the mention left out
        assert "https://news.example/grobot-2" in wait_for(_tool_messages, 20, message="the stored tool result")[0]

        world.wait_reply(world.mention(offline, QUESTION), timeout=60)
        assert web.searches == [QUESTION]  # the bot without web search did not search


def test_without_the_network_the_user_still_gets_an_answer(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        searcher = world.add_bot("searcher", user_cooldown_seconds=0, web_search=True)
        world.start_supervisor(GROBOT_WEB_PROXY=closed_port())
        world.wait_online(searcher)

        reply = world.wait_reply(world.mention(searcher, QUESTION), timeout=60)

        assert reply["content"] and "127.0.0.1" not in reply["content"]
        told = wait_for(_tool_messages, 20, message="the stored tool result")
        assert told[0] == "Tool web_search failed: web search is not available right now"
