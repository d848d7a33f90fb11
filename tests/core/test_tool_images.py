"""Images from tools: an image-generation MCP server (a real one, over stdio) returns a PNG; it is
kept for the user (stored with a Test Chat run, served by the web app to whoever may see the run;
handed to the bot process's Discord reply), while the model reads a line in its place."""

from __future__ import annotations

import base64

import httpx
from sqlmodel import select

from grobot.core.agents.chain import wait_for_background
from grobot.core.db import session_scope
from grobot.core.models import Role, RunImage
from grobot.core.services import bots, mcp_servers, tester_chat, users
from grobot.core.store.local import run_chain
from grobot.core.store.run_store_db import DatabaseStore
from grobot.core.tools.catalog import catalog_for_bot
from grobot.core.tools.mcp_hub import McpHub
from grobot.run_images import RunImagesEndpoint
from grobot.web_session import SESSION_COOKIE
from tests.fakes.llm import EventCollector, Reply, use_fake_llm
from tests.fakes.mcp_servers import png, stdio_config

IMAGES = stdio_config("painter", "images")


async def test_an_image_tool_result_keeps_the_png_for_the_user_and_a_line_for_the_model():
    hub = McpHub()
    try:
        drawn = await hub.call_tool(IMAGES, "draw_image", {"prompt": "a blue square"}, timeout=20)
        svg = await hub.call_tool(IMAGES, "draw_svg", {}, timeout=20)
        photo = await hub.call_tool(IMAGES, "photo_resource", {}, timeout=20)
    finally:
        await hub.aclose()

    assert [(i.mime_type, i.data, i.name) for i in drawn.images] == [("image/png", png(), "image.png")]
    assert drawn.content.startswith("Here is a picture of a blue square.\n[image image.png (image/png, ")
    assert drawn.content.endswith("shown to the user with the answer]")
    assert "iVBOR" not in drawn.content  # never the image's data
    assert svg.images == [] and svg.content == "[an image that cannot be shown: it is not a PNG, JPEG, GIF or WebP image]"
    assert [(i.mime_type, i.name) for i in photo.images] == [("image/jpeg", "cat.jpg")]


def painter_bot(fake_llm) -> int:
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="Painter", personality="You draw.")
        server = mcp_servers.create_server(session=session, name="painter", command=IMAGES.command,
                                           args=list(IMAGES.args), cwd=IMAGES.cwd, env=dict(IMAGES.env))
        mcp_servers.enable_for_bot(session=session, bot_id=bot.id, server=server, timeout_seconds=20,
                                   allowed_tools=["draw_image"])
        bot_id = bot.id or 0
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script(Reply(json={"reason": "a picture", "tools": [{"name": "painter__draw_image",
                                                                  "arguments": {"prompt": "a cat"}}]}))
    fake_llm.script_for(lambda body: any(m.get("role") == "tool" for m in body.get("messages", [])),
                        Reply(text="Here is your cat."))
    return bot_id


async def draw(bot_id: int, *, stored: bool):
    from grobot.core.agents.types import IncomingMessage

    run_id = None
    if stored:  # a Test Chat message, as the web app stores it
        with session_scope() as session:
            tester = users.create_user(session=session, username="tess", password="correct horse battery",
                                       role=Role.TESTER.value)
            conv = tester_chat.open_session(bot_id, tester.id or 0, session=session)
            run_id = tester_chat.submit(conv.id or 0, "Draw an image of a cat", session=session).id
    msg = IncomingMessage(bot_id=bot_id, conversation_key="test:painter", content="Draw an image of a cat",
                          author_id="7", author_name="bob", platform="test_chat", run_id=run_id)
    sink = EventCollector()
    hub = McpHub()
    try:
        result = await run_chain(msg, sink=sink, tools=await catalog_for_bot(bot_id, store=DatabaseStore(), hub=hub))
        await wait_for_background()
    finally:
        await hub.aclose()
    return result, sink, run_id


async def test_a_test_chat_run_stores_the_tools_image_and_its_events_say_where(grobot_env, fake_llm):
    bot_id = painter_bot(fake_llm)

    result, sink, run_id = await draw(bot_id, stored=True)

    assert result.error is None and result.text == "Here is your cat."
    shown = sink.of("tool_result")[0].data["images"]
    with session_scope(readonly=True) as session:
        rows = session.exec(select(RunImage)).all()
    assert [(r.run_id, r.origin, r.mime_type, bytes(r.data)) for r in rows] == [(run_id, "tool", "image/png", png())]
    assert shown == [{"id": rows[0].id, "mime_type": "image/png", "name": "image.png", "size": len(png())}]
    synthesizer = [r for r in fake_llm.chat_requests() if any(m.get("role") == "tool" for m in r.get("messages", []))][-1]
    told = next(m["content"] for m in synthesizer["messages"] if m.get("role") == "tool")
    assert "shown to the user with the answer" in told and base64.b64encode(png()).decode()[:20] not in told


async def test_a_discord_run_hands_the_image_to_its_host(grobot_env, fake_llm):
    bot_id = painter_bot(fake_llm)

    result, sink, _ = await draw(bot_id, stored=False)

    assert [(i.mime_type, i.data) for i in result.images] == [("image/png", png())]
    assert sink.of("tool_result")[0].data["images"][0]["id"] is None  # the bot process sends it; nothing stored
    with session_scope(readonly=True) as session:
        assert session.exec(select(RunImage)).all() == []


# --------------------------------------------------------------------------- the web app serves them


def _session(username: str, role: Role, bot_id: int | None = None) -> str:
    """A signed-in web user (a tester granted ``bot_id``); an existing one signs in again."""
    with session_scope() as session:
        try:
            user = users.get_user(username, session=session)
        except Exception:
            user = users.create_user(session=session, username=username, password="correct horse battery",
                                     role=role.value)
        if bot_id is not None:
            users.grant_bot(user, bot_id, session=session)
        return users.start_session(user)


async def _get(path: str, token: str = "") -> httpx.Response:
    async def nothing(scope, receive, send):
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    transport = httpx.ASGITransport(app=RunImagesEndpoint(nothing))
    cookies = {SESSION_COOKIE: token} if token else None
    async with httpx.AsyncClient(transport=transport, base_url="http://app", cookies=cookies) as client:
        return await client.get(path)


async def test_the_image_is_served_to_who_may_see_the_run_and_to_nobody_else(grobot_env, fake_llm):
    bot_id = painter_bot(fake_llm)
    _result, sink, run_id = await draw(bot_id, stored=True)
    image_id = sink.of("tool_result")[0].data["images"][0]["id"]
    admin = _session("root", Role.ADMIN)
    tester = _session("tess", Role.TESTER, bot_id)  # whose run it is
    stranger = _session("eve", Role.TESTER, bot_id)  # another tester of the same bot

    for token in (admin, tester):
        response = await _get(f"/_grobot/images/{image_id}", token)
        assert response.status_code == 200 and response.content == png()
        assert response.headers["content-type"] == "image/png"
        assert response.headers["content-security-policy"] == "default-src 'none'; sandbox"
    for token, path in ((stranger, f"/_grobot/images/{image_id}"), ("", f"/_grobot/images/{image_id}"),
                        ("forged", f"/_grobot/images/{image_id}"), (admin, f"/_grobot/images/{image_id + 1}"),
                        (admin, "/_grobot/images/abc"), (admin, f"/_grobot/images/{image_id}/x")):
        response = await _get(path, token)
        assert response.status_code == 404 and response.content == b""
    assert (await _get("/somewhere/else")).status_code == 418  # not its path: passed on
