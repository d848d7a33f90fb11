"""The built-in web tools (web_search, web_read) against a fake web on 127.0.0.1 that speaks the
real protocols: DuckDuckGo's HTML endpoint behind an HTTPS proxy (what the ddgs library talks to),
a SearXNG instance's JSON API, and pages. No test reaches the internet."""

from __future__ import annotations

import time

import pytest

from grobot.core.tools.base import ToolContext, ToolError
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.web import PAGE_BUDGET, RESULTS_BUDGET, SEARCH_UNAVAILABLE, WebAccess
from tests.fakes.web import FakeSearxng, FakeWeb, Hit, closed_port

CONTEXT = ToolContext(bot_id=1, user_id="7", platform="test_chat")


class NoStore:
    async def mcp_links(self, bot_id: int) -> list:
        return []


@pytest.fixture
def web():
    with FakeWeb() as fake:
        fake.hits = [Hit("GroBot 2.0 released", "https://news.example/grobot-2",
                         "GroBot 2.0 came out on 3 March 2026, with web search that needs no key."),
                     Hit("GroBot documentation", "https://docs.example/", "How to run a fleet of Discord bots.")]
        yield fake


@pytest.fixture
def searxng():
    with FakeSearxng() as fake:
        fake.hits = [Hit("SearXNG result", "https://news.example/searx", "Found through SearXNG.")]
        yield fake


def through(web: FakeWeb, **extra) -> WebAccess:
    return WebAccess(proxy=web.proxy_url, ca_file=str(web.ca_file), **extra)


async def call(access: WebAccess | None, name: str, **arguments):
    catalog = await catalog_for_bot(1, store=NoStore(), web=access)
    return await catalog.call_tool(name, arguments, context=CONTEXT, timeout=30)


async def test_the_web_tools_are_there_only_when_the_bot_has_them_on():
    off = await catalog_for_bot(1, store=NoStore())
    on = await catalog_for_bot(1, store=NoStore(), web=WebAccess())
    assert not {"web_search", "web_read"} & {s.name for s in await off.list_tools()}
    assert {"web_search", "web_read"} <= {s.name for s in await on.list_tools()}


async def test_search_without_a_key_gives_title_address_and_extract(web):
    result = await call(through(web), "web_search", query="grobot  release date")

    assert web.searches == ["grobot release date"]  # DuckDuckGo was asked, through the proxy
    assert not result.is_error
    assert 'Web results for "grobot release date"' in result.content
    assert "1. GroBot 2.0 released\n   https://news.example/grobot-2\n   GroBot 2.0 came out on 3 March 2026" \
        in result.content
    assert "https://docs.example/" in result.content


async def test_results_are_cut_to_what_a_small_model_can_read(web):
    web.hits = [Hit(f"Result number {i} " + "title " * 40, f"https://news.example/{i}", "word " * 400)
                for i in range(12)]

    result = await call(through(web), "web_search", query="many results")

    assert len(result.content) <= RESULTS_BUDGET
    assert result.content.count("https://news.example/") <= 5
    assert "https://news.example/" in result.content


async def test_search_through_searxng(searxng, web):
    result = await call(WebAccess(searxng_url=searxng.url), "web_search", query="grobot")

    assert searxng.queries and searxng.queries[0]["q"] == ["grobot"] and searxng.queries[0]["format"] == ["json"]
    assert "https://news.example/searx" in result.content and "Found through SearXNG." in result.content
    assert web.searches == []


@pytest.mark.parametrize("failure", ["no network", "rate limit", "searxng rate limit", "searxng down"])
async def test_a_search_that_fails_tells_the_model_plainly(web, searxng, failure):
    if failure == "no network":
        access = WebAccess(proxy=closed_port(), ca_file=str(web.ca_file))
    elif failure == "rate limit":
        web.ddg_status = 202  # what DuckDuckGo answers a client it limits
        access = through(web)
    elif failure == "searxng rate limit":
        searxng.status = 429
        access = WebAccess(searxng_url=searxng.url)
    else:
        access = WebAccess(searxng_url=closed_port())

    with pytest.raises(ToolError) as raised:
        await call(access, "web_search", query="anything")

    assert raised.value.told == SEARCH_UNAVAILABLE
    assert not raised.value.transient  # not hammered again
    assert str(raised.value).startswith("web search failed")  # the admins' line says why


async def test_a_search_that_hangs_ends_within_its_time(searxng):
    searxng.hang.set()
    started = time.monotonic()
    with pytest.raises(ToolError) as raised:
        await call(WebAccess(searxng_url=searxng.url, timeout=1.0), "web_search", query="anything")
    assert time.monotonic() - started < 10
    assert raised.value.told == SEARCH_UNAVAILABLE and "did not answer within 1 s" in str(raised.value)


PAGE = """<!doctype html><html><head><title>GroBot 2.0 released</title><script>track()</script>
<style>body{color:red}</style></head><body><nav>Home | News | About</nav><header>Site banner</header>
<main><h1>GroBot 2.0</h1><p>GroBot 2.0 came out on <b>3 March 2026</b>.</p><ul><li>web search</li><li>images</li></ul>
</main><footer>Copyright 2026</footer></body></html>"""


async def test_a_page_is_read_as_text_without_its_menus_and_scripts(web):
    web.page("https://news.example/grobot-2", PAGE)

    result = await call(through(web), "web_read", url="https://news.example/grobot-2")

    assert result.content.startswith("GroBot 2.0 released\nhttps://news.example/grobot-2\n\n")
    assert "# GroBot 2.0" in result.content and "GroBot 2.0 came out on **3 March 2026**." in result.content
    assert "web search" in result.content
    for gone in ("track()", "color:red", "Home | News", "Site banner", "Copyright"):
        assert gone not in result.content


async def test_a_long_page_is_cut_to_its_budget_and_says_so(web):
    web.page("https://news.example/long", "<html><body><main>" + "<p>A sentence of the long page.</p>" * 3000
             + "</main></body></html>")

    result = await call(through(web), "web_read", url="https://news.example/long")

    assert len(result.content) < PAGE_BUDGET + 200 and "[... cut at" in result.content
    assert result.meta["truncated"] is True


async def test_redirects_are_followed(web):
    web.page("http://news.example/old", "", status=301, headers={"Location": "https://news.example/grobot-2"})
    web.page("https://news.example/grobot-2", PAGE)

    result = await call(through(web), "web_read", url="http://news.example/old")

    assert "https://news.example/grobot-2" in result.content and "3 March 2026" in result.content


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/admin", "http://169.254.169.254/latest/meta-data/",
                                 "http://[::1]/", "http://10.0.0.7/", "http://localhost:8000/", "file:///etc/passwd"])
async def test_a_page_off_the_public_web_is_never_fetched(web, url):
    with pytest.raises(ToolError) as raised:
        await call(through(web), "web_read", url=url)
    assert "not on the public web" in str(raised.value) or "does not match" in str(raised.value) \
        or "not a web address" in str(raised.value)
    assert not [r for r in web.requests if "127.0.0.1" in r or "169.254" in r or "localhost" in r]


async def test_a_redirect_off_the_public_web_is_refused(web):
    web.page("https://news.example/trap", "", status=302, headers={"Location": "http://169.254.169.254/latest/"})

    with pytest.raises(ToolError) as raised:
        await call(through(web), "web_read", url="https://news.example/trap")

    assert "169.254.169.254 is not on the public web" in str(raised.value)
    assert web.requests == ["https://news.example/trap"]


async def test_a_page_that_is_not_text_or_is_missing_says_so_plainly(web):
    web.page("https://news.example/logo.png", b"\x89PNG\r\n\x1a\n", content_type="image/png")

    with pytest.raises(ToolError) as not_text:
        await call(through(web), "web_read", url="https://news.example/logo.png")
    with pytest.raises(ToolError) as missing:
        await call(through(web), "web_read", url="https://news.example/gone")

    assert "is not a text page (image/png)" in str(not_text.value)
    assert "answered HTTP 404" in str(missing.value)
    assert not_text.value.told == missing.value.told == "the page could not be read right now"


async def test_a_query_the_model_made_up_is_replaced_by_the_users_words(web):
    catalog = await catalog_for_bot(1, store=NoStore(), web=through(web))
    asked = ToolContext(bot_id=1, user_id="7", platform="test_chat", said="Search the web for the GroBot release date")

    await catalog.call_tool("web_search", {"query": "2023-01-01T00:00:00.000Z"}, context=asked, timeout=30)
    await catalog.call_tool("web_search", {"query": "GroBot release date"}, context=asked, timeout=30)

    assert web.searches == ["Search the web for the GroBot release date", "GroBot release date"]


def test_the_searxng_address_is_checked_where_an_admin_sets_it(grobot_env):
    from grobot.core.db import session_scope
    from grobot.core.errors import ValidationError
    from grobot.core.services import app_settings, bots

    with session_scope() as session:
        app_settings.set_value("web_search_url", " https://searx.example.org/ ", session=session)
        assert app_settings.get_value("web_search_url", session=session) == "https://searx.example.org"
        with pytest.raises(ValidationError, match="web_search_url: the SearXNG address must start with http"):
            app_settings.set_value("web_search_url", "searx.example.org", session=session)
        bot = bots.create_bot(session=session, name="Searcher", web_search=True,
                              web_search_url="https://own.example/")
        assert (bot.web_search, bot.web_search_url) == (True, "https://own.example")
        bots.update_bot(bot, {"web_search_url": "default"}, session=session)
        assert bot.web_search_url is None
        with pytest.raises(ValidationError, match="web_search_url"):
            bots.update_bot(bot, {"web_search_url": "https://user:secret@own.example"}, session=session)


async def test_a_bot_searches_its_own_searxng_or_the_global_one(grobot_env, searxng):
    from grobot.core.agents.types import IncomingMessage
    from grobot.core.db import session_scope
    from grobot.core.services import app_settings, bots
    from grobot.core.store.run_store_db import DatabaseStore

    with session_scope() as session:
        app_settings.set_value("web_search_url", "https://global.example", session=session)
        own = bots.create_bot(session=session, name="Own", web_search=True, web_search_url=searxng.url).id
        follows = bots.create_bot(session=session, name="Follows", web_search=True).id
        off = bots.create_bot(session=session, name="Off").id

    def msg(bot_id):
        return IncomingMessage(bot_id=bot_id, conversation_key="test:x", content="hi", author_id="7", author_name="a",
                               platform="test_chat")

    loaded = {bot_id: (await DatabaseStore().load(msg(bot_id))).bot for bot_id in (own, follows, off)}
    assert [(b.web_search, b.web_search_url) for b in loaded.values()] == [
        (True, searxng.url), (True, "https://global.example"), (False, "")]


async def test_the_chain_searches_the_users_words_with_no_parameter_extractor_call(grobot_env, fake_llm, searxng):
    from sqlmodel import select

    from grobot.core.agents.chain import wait_for_background
    from grobot.core.db import session_scope
    from grobot.core.models import LLMCall
    from grobot.core.store.local import run_chain
    from tests.core.tool_chain_helpers import make_bot, message
    from tests.fakes.llm import Reply, use_fake_llm

    bot_id = make_bot(web_search=True, web_search_url=searxng.url)
    use_fake_llm(fake_llm, bot_id=bot_id)
    # The Tool Router is sure of web_search: no Identifier call. The reply states what the search returned.
    said = "The SearXNG result for the GroBot release date: https://news.example/searx (found through SearXNG)."
    fake_llm.script(Reply(text=said))

    result = await run_chain(message(bot_id, "Search the web for the GroBot release date"))

    assert result.text == said
    assert [q["q"] for q in searxng.queries] == [["Search the web for the GroBot release date"]]
    assert "https://news.example/searx" in fake_llm.chat_requests()[-1]["messages"][-1]["content"]
    with session_scope(readonly=True) as session:
        roles = [c.agent_role for c in session.exec(select(LLMCall).where(LLMCall.run_id == result.run_id)).all()]
    assert roles == ["synthesizer"]  # the query is the message: no Parameter Extractor call
    await wait_for_background()
