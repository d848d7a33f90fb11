"""The MCP hub against real servers (mcp-server-time, server-everything) and misbehaving fakes."""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
import time
from pathlib import Path

import pytest
import pytest_asyncio

from grobot.core.tools.base import SERVER_FAILED, ToolError
from grobot.core.tools.mcp_config import McpServerConfig
from grobot.core.tools.mcp_hub import HubLimits, McpHub
from tests.fakes.mcp_servers import EverythingHttp, HtmlServer, everything_stdio_config, stdio_config
from tests.helpers import async_wait_for, pid_alive

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIME = McpServerConfig(name="time", command=str(Path(sys.executable).parent / "mcp-server-time"))
FAKE = stdio_config("fake", "ok")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def hub():
    """One hub for the module: sessions are shared between tests, as in a bot process."""
    shared = McpHub(HubLimits(connect_timeout=20, retry_after=0))
    yield shared
    await shared.aclose()


def _quick_hub(**limits) -> McpHub:
    return McpHub(HubLimits(**{"connect_timeout": 20, "retry_after": 0, **limits}))


# --------------------------------------------------------------------------- real servers


async def test_time_server_tools_are_listed_and_called(hub):
    assert shutil.which(TIME.command), "mcp-server-time is missing: run `make test` (requirements.txt)"
    tools = {t.name: t for t in await hub.list_tools(TIME)}
    assert {"get_current_time", "convert_time"} <= set(tools)
    assert tools["get_current_time"].annotations.read_only_hint is True
    assert tools["get_current_time"].input_schema["required"] == ["timezone"]

    result = await hub.call_tool(TIME, "get_current_time", {"timezone": "Asia/Tokyo"}, timeout=10)
    assert not result.is_error
    assert result.structured["timezone"] == "Asia/Tokyo"
    assert result.structured["datetime"].endswith("+09:00")
    assert "Asia/Tokyo" in result.content

    bad = await hub.call_tool(TIME, "get_current_time", {"timezone": "Mars/Olympus"}, timeout=10)
    assert bad.is_error and "Mars/Olympus" in bad.content


async def test_everything_over_stdio(hub):
    cfg = everything_stdio_config()
    names = {t.name for t in await hub.list_tools(cfg)}
    assert {"echo", "get-sum", "get-tiny-image"} <= names
    assert (await hub.call_tool(cfg, "echo", {"message": "héllo"}, timeout=10)).content == "Echo: héllo"
    assert "3" in (await hub.call_tool(cfg, "get-sum", {"a": 1, "b": 2}, timeout=10)).content
    image = await hub.call_tool(cfg, "get-tiny-image", {}, timeout=10)
    # The model reads a line in the image's place; the image itself goes to the user with the answer.
    assert "[image image.png (image/png" in image.content and "shown to the user with the answer" in image.content
    assert [(i.mime_type, i.data[:4]) for i in image.images] == [("image/png", b"\x89PNG")]
    wrong = await hub.call_tool(cfg, "get-sum", {"a": "one"}, timeout=10)
    assert wrong.is_error and "expected number" in wrong.content


async def test_everything_over_streamable_http(hub):
    with EverythingHttp() as server:
        cfg = server.config()
        names = {t.name for t in await hub.list_tools(cfg)}
        assert "echo" in names
        assert (await hub.call_tool(cfg, "echo", {"message": "over http"}, timeout=10)).content == "Echo: over http"
        server.restart()  # the new server does not know our session: the hub opens a new one
        assert (await hub.call_tool(cfg, "echo", {"message": "again"}, timeout=10)).content == "Echo: again"
        await hub.close_server(cfg.name)


async def test_refresh_asks_the_server_again(hub):
    before = await hub.list_tools(FAKE)
    again = await hub.list_tools(FAKE, refresh=True)
    assert [t.name for t in again] == [t.name for t in before]
    assert {"echo", "sleep", "crash", "whoami"} <= {t.name for t in again}


# --------------------------------------------------------------------------- concurrency, hangs, deaths


async def test_100_concurrent_calls_on_one_session(hub):
    results = await asyncio.gather(
        *(hub.call_tool(FAKE, "echo", {"text": f"call {i}"}, timeout=30) for i in range(100))
    )
    assert [r.content for r in results] == [f"call {i}" for i in range(100)]


async def test_a_hanging_tool_times_out_and_the_session_goes_on(hub):
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        await hub.call_tool(FAKE, "sleep", {"seconds": 30}, timeout=0.5)
    assert time.monotonic() - started < 5
    assert str(caught.value) == "MCP server 'fake' did not answer tool 'sleep' within 0.5 s"
    assert caught.value.told == SERVER_FAILED  # what the answering model hears of it
    assert caught.value.transient
    assert (await hub.call_tool(FAKE, "echo", {"text": "still here"}, timeout=10)).content == "still here"


async def test_a_server_dying_mid_session_is_reconnected(hub, caplog):
    caplog.set_level(logging.INFO, logger="grobot.core.tools")
    first_pid = int((await hub.call_tool(FAKE, "whoami", {}, timeout=10)).content)
    with pytest.raises(ToolError) as caught:
        await hub.call_tool(FAKE, "crash", {}, timeout=10)
    message = str(caught.value)
    assert message.startswith("MCP server 'fake' lost the connection during tool 'crash'")
    assert "crashing on purpose" in message  # the tail of its stderr
    assert caught.value.transient
    second_pid = int((await hub.call_tool(FAKE, "whoami", {}, timeout=10)).content)
    assert second_pid != first_pid
    await async_wait_for(lambda: not pid_alive(first_pid), timeout=10, message="the dead server was cleaned up")
    assert "fake server: crashing on purpose" in caplog.text  # stderr went to the logs


async def test_reconnects_stop_when_the_budget_is_spent():
    hub = _quick_hub(max_reconnects=1, reconnect_window=60)
    try:
        await hub.call_tool(FAKE, "whoami", {}, timeout=10)
        with pytest.raises(ToolError, match="lost the connection"):
            await hub.call_tool(FAKE, "crash", {}, timeout=10)
        await hub.call_tool(FAKE, "whoami", {}, timeout=10)  # the one reconnect allowed
        with pytest.raises(ToolError, match="lost the connection"):
            await hub.call_tool(FAKE, "crash", {}, timeout=10)
        with pytest.raises(ToolError, match=r"MCP server 'fake' keeps failing \(1 reconnects in 60 s\)"):
            await hub.call_tool(FAKE, "whoami", {}, timeout=10)
    finally:
        await hub.aclose()


async def test_close_ends_every_server_process():
    hub = _quick_hub()
    pid = int((await hub.call_tool(FAKE, "whoami", {}, timeout=10)).content)
    await hub.aclose()
    await async_wait_for(lambda: not pid_alive(pid), timeout=10, message="the stdio server was stopped")


# --------------------------------------------------------------------------- bad servers: one clear line


async def test_a_url_answering_html_is_named_as_such():
    hub = _quick_hub()
    try:
        with HtmlServer() as web:
            cfg = McpServerConfig(name="web", transport="streamable_http", url=web.url)
            with pytest.raises(ToolError) as caught:
                await hub.list_tools(cfg)
            assert str(caught.value) == (
                f"MCP server 'web' at {web.url} returned an HTML page (HTTP 200), not an MCP JSON-RPC response"
            )
            legacy = McpServerConfig(name="legacy", transport="sse", url=web.url)
            with pytest.raises(ToolError, match=r"returned an HTML page \(HTTP 200\)"):
                await hub.list_tools(legacy)
        with HtmlServer(status=404) as missing:
            cfg = McpServerConfig(name="web404", transport="streamable_http", url=missing.url)
            with pytest.raises(ToolError, match=r"MCP server 'web404' .* returned an HTML page \(HTTP 404\)"):
                await hub.list_tools(cfg)
    finally:
        await hub.aclose()


async def test_a_server_that_dies_at_start_shows_its_stderr(caplog):
    caplog.set_level(logging.INFO, logger="grobot.core.tools")
    hub = _quick_hub()
    try:
        with pytest.raises(ToolError) as caught:
            await hub.list_tools(stdio_config("broken", "die"))
        assert str(caught.value) == (
            "MCP server 'broken' exited during start-up; its last output: "
            "fake server: starting | fatal: FAKE_API_KEY is not set"
        )
        assert "MCP server 'broken' stderr: fatal: FAKE_API_KEY is not set" in caplog.text
    finally:
        await hub.aclose()


async def test_missing_command_and_refused_connection():
    hub = _quick_hub()
    try:
        with pytest.raises(ToolError, match=r"^MCP server 'nocmd' could not be started: No such file or directory"):
            await hub.list_tools(McpServerConfig(name="nocmd", command="/nonexistent/mcp-server"))
        with pytest.raises(ToolError, match=r"^MCP server 'down' cannot be reached at http://127.0.0.1:9/mcp"):
            await hub.list_tools(McpServerConfig(name="down", transport="streamable_http", url="http://127.0.0.1:9/mcp"))
    finally:
        await hub.aclose()


async def test_protocol_error_and_silent_server_time_out_with_a_reason():
    hub = _quick_hub(connect_timeout=1.5)
    try:
        with pytest.raises(ToolError) as caught:
            await hub.list_tools(stdio_config("chatty", "garbage"))
        assert str(caught.value).startswith("MCP server 'chatty' sent something that is not MCP JSON-RPC")
        assert "Hello! This is not JSON-RPC." in str(caught.value)
        with pytest.raises(ToolError) as caught:
            await hub.list_tools(stdio_config("mute", "silent"))
        assert str(caught.value) == "MCP server 'mute' did not answer the MCP handshake within 1.5 s"
    finally:
        await hub.aclose()


async def test_a_failed_server_fails_fast_until_retry_after():
    hub = _quick_hub(retry_after=60)
    cfg = stdio_config("broken", "die")
    try:
        with pytest.raises(ToolError) as first:
            await hub.list_tools(cfg)
        started = time.monotonic()
        with pytest.raises(ToolError) as second:
            await hub.call_tool(cfg, "echo", {"text": "x"}, timeout=5)
        assert time.monotonic() - started < 0.1
        assert str(second.value) == str(first.value)
    finally:
        await hub.aclose()


async def test_test_report_lists_tools_with_schemas():
    hub = _quick_hub()
    try:
        report = await hub.test(FAKE)
        assert report.ok and report.server_name == "fake-ok"
        echo = next(t for t in report.tools if t.name == "echo")
        assert echo.input_schema["properties"]["text"]["type"] == "string"
        failed = await hub.test(stdio_config("broken", "die"))
        assert not failed.ok and "FAKE_API_KEY is not set" in failed.error
    finally:
        await hub.aclose()


async def test_a_server_s_stderr_is_shown_on_the_console_without_driving_it():
    """An MCP server's stderr reaches the worker's console as text: its ESC sequences (move up, erase
    the line above, retitle the window) are written out, not acted on."""
    import io

    from grobot.core.logs import console_handler

    stream = io.StringIO()
    handler = console_handler(stream)
    tools_logger = logging.getLogger("grobot.core.tools")
    before = tools_logger.level
    tools_logger.addHandler(handler)
    tools_logger.setLevel(logging.INFO)
    hub = _quick_hub()
    try:
        with pytest.raises(ToolError) as caught:
            await hub.list_tools(stdio_config("hostile", "die_hostile"))
    finally:
        await hub.aclose()
        tools_logger.removeHandler(handler)
        tools_logger.setLevel(before)
    console = stream.getvalue()
    assert "\x1b" not in console and "\x07" not in console
    assert ("MCP server 'hostile' stderr: fake server: starting\\x1b[1A\\x1b[2K\\x1b]0;owned\\x07 INFO all is well"
            in console)
    assert "its last output: fake server: starting" in str(caught.value)
