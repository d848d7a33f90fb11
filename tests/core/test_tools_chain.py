"""One whole chain run: the fake LLM asks for the time through mcp-server-time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.services import bots, mcp_servers
from grobot.core.store.local import run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from tests.fakes.llm import EventCollector, Reply, use_fake_llm

TIME_COMMAND = str(Path(sys.executable).parent / "mcp-server-time")


async def test_the_answer_contains_the_time_from_mcp_server_time(grobot_env, fake_llm):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="Clock", personality="You tell the time.")
        server = mcp_servers.create_server(session=session, name="time", command=TIME_COMMAND)
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server, timeout_seconds=15)
        bot_id = bot.id
    use_fake_llm(fake_llm, bot_id=bot_id)

    # The synthesizer's answer is written from the tool result it receives over the wire.
    final = Reply(text="")

    def synthesizer_with_tool_result(request: dict) -> bool:
        tool_messages = [m for m in request.get("messages", []) if m.get("role") == "tool"]
        if request.get("format") or not tool_messages:
            return False
        final.text = f"In Tokyo it is {json.loads(tool_messages[-1]['content'])['datetime']}."
        return True

    fake_llm.script_for(synthesizer_with_tool_result, final)
    fake_llm.script(
        Reply(json={"reason": "needs the time", "tools": [
            {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}]}),
        Reply(json={"reason": "enough", "tools": []}),
    )
    msg = IncomingMessage(bot_id=bot_id, conversation_key="test:clock", content="What time is it in Tokyo?",
                          author_id="7", author_name="bob", platform="test_chat")
    sink = EventCollector()
    hub = McpHub()
    try:
        result = await run_chain(msg, sink=sink, tools=await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub))
        await wait_for_background()
    finally:
        await hub.aclose()

    assert result.error is None, result.error
    tool_results = sink.of("tool_result")
    assert len(tool_results) == 1
    from_server = json.loads(tool_results[0].data["content"])
    assert from_server["timezone"] == "Asia/Tokyo" and from_server["datetime"].endswith("+09:00")
    assert result.text == f"In Tokyo it is {from_server['datetime']}."
    assert sink.of("tool_call")[0].data["name"] == "time__get_current_time"
