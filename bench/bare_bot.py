"""The floor under a GroBot bot: a bare discord.py bot that answers a mention with one streamed LLM call.

    python bench/bare_bot.py          (token in BARE_BOT_TOKEN, the LLM at OLLAMA_HOST)

``bench/fleet.py`` runs it beside the fleet, on the same fake Discord and fake LLM, and measures
its CPU per message against a GroBot bot's and its supervisor's. It does what any Discord bot
answering through an LLM must do, and nothing more: read the gateway's message, ask the model
(Ollama's ``/api/chat``, streamed, over aiohttp as GroBot does), reply with the first words and
edit the reply to the whole answer at its end: the same Discord requests as a GroBot answer.
No history, no storage, no checks, no tools.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp
import discord
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot_worker.discord_io import redirect


class BareBot(discord.Client):
    def __init__(self, llm_url: str) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        super().__init__(intents=intents, max_messages=None, chunk_guilds_at_startup=False,
                         allowed_mentions=discord.AllowedMentions.none())
        self.llm_url = llm_url.rstrip("/")
        self.http_session: aiohttp.ClientSession | None = None

    async def setup_hook(self) -> None:
        self.http_session = aiohttp.ClientSession()

    async def close(self) -> None:
        if self.http_session is not None:
            await self.http_session.close()
        await super().close()

    async def on_message(self, message: discord.Message) -> None:
        if self.user is None or message.author.bot or self.user not in message.mentions:
            return
        text = message.content.replace(f"<@{self.user.id}>", "").strip()
        body = {"model": "llama3.2", "stream": True,
                "messages": [{"role": "system", "content": "You are a helpful bot."},
                             {"role": "user", "content": f"{message.author.display_name}: {text}"}]}
        assert self.http_session is not None
        reply: discord.Message | None = None
        answer = ""
        async with self.http_session.post(f"{self.llm_url}/api/chat", data=orjson.dumps(body)) as response:
            async for line in response.content:
                if not line.strip():
                    continue
                part = orjson.loads(line)
                answer += (part.get("message") or {}).get("content") or ""
                if reply is None and answer:
                    reply = await message.reply(answer, mention_author=False)
        if reply is not None:
            await reply.edit(content=answer)


def main() -> None:
    redirect(os.environ["DISCORD_API_BASE"], os.environ["DISCORD_GATEWAY_URL"])
    bot = BareBot(os.environ["OLLAMA_HOST"])
    asyncio.run(bot.start(os.environ["BARE_BOT_TOKEN"]))


if __name__ == "__main__":
    main()
