"""A bot's catalog: built-ins + its enabled MCP servers' tools, filtered, namespaced, with timeouts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_asyncio

from grobot.core.db import session_scope
from grobot.core.models import McpServer
from grobot.core.services import bots, mcp_servers, mcp_tool_lists
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.base import ToolContext, ToolError
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import HubLimits, McpHub
from tests.fakes.mcp_servers import stdio_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIME_COMMAND = str(Path(sys.executable).parent / "mcp-server-time")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def hub():
    shared = McpHub(HubLimits(connect_timeout=20, retry_after=0))
    yield shared
    await shared.aclose()


def _register(name: str, cfg=None, **fields) -> McpServer:
    if cfg is not None:
        fields = dict(command=cfg.command, args=list(cfg.args), cwd=cfg.cwd, env=cfg.env, **fields)
    with session_scope() as session:
        return mcp_servers.create_server(session=session, name=name, **fields)


@pytest.fixture
def bot_id(grobot_env) -> int:
    time_server = _register("time", command=TIME_COMMAND)
    fake = _register("fake", stdio_config("fake", "ok"))
    broken = _register("broken", stdio_config("broken", "die"))
    unused = _register("unused", stdio_config("unused", "ok"))
    off = _register("off", stdio_config("off", "ok"), enabled=False)
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="catalog-bot")
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=time_server,
                                   allowed_tools="get_current_time", timeout_seconds=7)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=fake)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=broken)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=unused)
        mcp_servers.disable_for_bot(session=session, bot_id=bot.id, server=unused)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=off)
        return bot.id


async def test_catalog_merges_builtins_and_enabled_servers(bot_id, hub):
    catalog = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
    specs = {s.name: s for s in await catalog.list_tools()}
    mcp_names = sorted(n for n in specs if "__" in n)
    assert mcp_names == ["fake__crash", "fake__echo", "fake__sleep", "fake__whoami", "time__get_current_time"]
    assert "datetime_now" in specs and "files_read" in specs
    time_spec = specs["time__get_current_time"]
    assert (time_spec.source, time_spec.read_only, time_spec.timeout_seconds) == ("time", True, 7.0)
    assert time_spec.input_schema["required"] == ["timezone"]
    assert specs["fake__sleep"].read_only is False and specs["fake__sleep"].timeout_seconds == 30.0

    unavailable = catalog.unavailable()
    assert list(unavailable) == ["broken"]
    assert unavailable["broken"].startswith("MCP server 'broken' exited during start-up")
    assert "FAKE_API_KEY is not set" in unavailable["broken"]

    ctx = ToolContext(bot_id=bot_id, user_id="1")
    result = await catalog.call_tool("time__get_current_time", {"timezone": "Europe/Paris"}, context=ctx, timeout=10)
    assert result.structured["timezone"] == "Europe/Paris"
    echoed = await catalog.call_tool("fake__echo", {"text": "ping"}, context=ctx, timeout=10)
    assert echoed.content == "ping"
    with pytest.raises(ToolError, match="FAKE_API_KEY"):
        await catalog.call_tool("broken__anything", {}, context=ctx, timeout=10)
    with pytest.raises(ToolError, match="unknown tool 'time__convert_time'"):
        await catalog.call_tool("time__convert_time", {}, context=ctx, timeout=10)


async def test_scheduled_refresh_stores_tool_lists_and_errors(bot_id, hub):
    errors = await mcp_tool_lists.refresh_all(hub)
    assert errors["time"] == "" and errors["fake"] == ""
    assert "FAKE_API_KEY" in errors["broken"]
    assert "off" not in errors  # disabled servers are not asked
    with session_scope(readonly=True) as session:
        time_row = mcp_servers.get_server("time", session=session)
        broken_row = mcp_servers.get_server("broken", session=session)
    assert {t["name"] for t in time_row.tools_cache} == {"get_current_time", "convert_time"}
    assert time_row.tools_refreshed_at is not None and time_row.last_error == ""
    assert broken_row.tools_cache is None and "FAKE_API_KEY" in broken_row.last_error


async def test_changed_server_settings_give_a_new_session(bot_id, hub):
    ctx = ToolContext(bot_id=bot_id)
    first = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
    pid1 = (await first.call_tool("fake__whoami", {}, context=ctx, timeout=10)).content
    with session_scope() as session:
        server = mcp_servers.get_server("fake", session=session)
        mcp_servers.update_server(server, {"env": {**stdio_config("fake", "ok").env, "EXTRA": "1"}}, session=session)
    second = await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub)
    pid2 = (await second.call_tool("fake__whoami", {}, context=ctx, timeout=10)).content
    assert pid1 != pid2

