"""The fake LLM server other tests rely on: scripting by order and by content, defaults, recording."""

from __future__ import annotations

import asyncio

import httpx

from tests.fakes.llm import FakeLLM, Reply, is_archivist_request


async def _ask(client: httpx.AsyncClient, fake: FakeLLM, model: str, text: str, **extra) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": False, **extra}
    response = await client.post(fake.url + "/api/chat", json=body)
    return response.json()["message"]["content"]


async def test_rules_answer_concurrent_clients_by_content_and_the_queue_in_order(fake_llm):
    fake_llm.script_for(lambda body: body.get("model") == "bot-a", Reply(text="I am A"), persistent=True)
    fake_llm.script_for(lambda body: body.get("model") == "bot-b", Reply(text="B once"))
    fake_llm.script("first", "second")
    async with httpx.AsyncClient() as client:
        answers = await asyncio.gather(*(_ask(client, fake_llm, "bot-a", f"hi {i}") for i in range(5)))
        assert answers == ["I am A"] * 5
        assert await _ask(client, fake_llm, "bot-b", "x") == "B once"
        assert await _ask(client, fake_llm, "bot-b", "x") == "first"  # the rule is used up: the queue answers
        assert await _ask(client, fake_llm, "other", "x") == "second"
        assert await _ask(client, fake_llm, "other", "ping") == "Echo: ping"
        schema = {"type": "object", "properties": {"tools": {"type": "array"}, "n": {"type": "integer"}}, "required": ["tools"]}
        assert await _ask(client, fake_llm, "other", "x", format=schema) == '{"tools": []}'
    assert len(fake_llm.chat_requests()) == 10 and fake_llm.requests[0].path == "/api/chat"
    fake_llm.reset()
    assert fake_llm.requests == [] and fake_llm.pending == 0


async def test_archivist_requests_never_take_queued_replies(fake_llm):
    notes_schema = {"type": "object", "properties": {"notes": {"type": "array"}}, "required": ["notes"]}
    fake_llm.script("for the next message")
    async with httpx.AsyncClient() as client:
        assert await _ask(client, fake_llm, "m", "x", format=notes_schema) == '{"notes": []}'
        assert await _ask(client, fake_llm, "m", "x") == "for the next message"
        fake_llm.script_for(is_archivist_request, Reply(json={"notes": [{"note": "n", "reliability": 1}]}))
        assert '"note": "n"' in await _ask(client, fake_llm, "m", "x", format=notes_schema)


async def test_embeddings_and_model_lists(fake_llm):
    async with httpx.AsyncClient() as client:
        embed = (await client.post(fake_llm.url + "/api/embed", json={"model": "e", "input": ["a", "b", "a"]})).json()
        tags = (await client.get(fake_llm.url + "/api/tags")).json()
    vectors = embed["embeddings"]
    assert len(vectors) == 3 and vectors[0] == vectors[2] != vectors[1] and len(vectors[0]) == fake_llm.embed_dim
    assert [m["name"] for m in tags["models"]] == ["fake-model", "llama3.2"]
