"""The embedded llama.cpp servers: started per model file, restarted when they die, bad files reported."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys

import httpx
import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.llm import embedded, embedded_servers
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.llm.embedded_servers import EmbeddedServers
from grobot.core.llm.service import LLMCallFailed, call_llm
from grobot.core.services import llm_settings
from tests.helpers import async_wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


async def test_a_server_runs_the_demo_model_and_comes_back_after_a_crash(grobot_env):
    servers = EmbeddedServers(threads=2, parallel=1)
    try:
        info = await servers.ensure(embedded.DEMO_MODEL, 2048)
        assert info.status == "running" and info.error == ""
        assert info.supports_tools is embedded.TOOLS_TEMPLATE.is_file()  # GroBot's template adds tool calls
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"{info.url}/health")).status_code == 200
        assert servers.request(embedded.DEMO_MODEL, 2048) is info  # one server per model file

        process = servers._servers[embedded.DEMO_MODEL].process
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()

        async def restarted() -> embedded.ServerInfo | None:
            await servers.check()
            now = servers.request(embedded.DEMO_MODEL, 2048)
            return now if now.status == "running" and now.url != info.url else None

        again = await async_wait_for(restarted, 60)
        async with httpx.AsyncClient(trust_env=False) as client:
            assert (await client.get(f"{again.url}/health")).status_code == 200
    finally:
        await servers.stop_all()
    assert process.returncode is not None


def _demo_llm(url: str) -> EffectiveLLM:
    return EffectiveLLM(category="output", provider="llamacpp", base_url=url, model=embedded.DEMO_MODEL,
                        context_window=2048, temperature=0.2, api_key=None, fallback_model=None,
                        supports_images=False, source="builtin")


async def test_an_answer_whose_server_is_killed_ends_with_a_plain_error(grobot_env):
    servers = EmbeddedServers(threads=2, parallel=1)
    try:
        info = await servers.ensure(embedded.DEMO_MODEL, 2048)
        process = servers._servers[embedded.DEMO_MODEL].process

        async def kill_at_the_first_words(text: str) -> None:
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)

        with pytest.raises(LLMCallFailed) as caught:
            await call_llm(_demo_llm(info.url), [{"role": "user", "content": "Tell me a long story about a dragon."}],
                           role="synthesizer", max_tokens=200, on_text=kill_at_the_first_words)
        # Not aiohttp's "ClientPayloadError: … <TransferEncodingError: 400, message='Not enough data…'>".
        assert str(caught.value) == (f"llamacpp at {info.url}/v1 ended the answer early: the connection broke in "
                                     "the middle of it (did the server stop?)")
    finally:
        await servers.stop_all()


async def test_a_hung_server_is_restarted_and_the_answer_waiting_on_it_ends_with_an_error(grobot_env, caplog):
    caplog.set_level(logging.ERROR, logger="grobot.core.llm.embedded_servers")
    servers = EmbeddedServers(threads=2, parallel=1, hang_seconds=2.0)
    try:
        info = await servers.ensure(embedded.DEMO_MODEL, 2048)
        hung = servers._servers[embedded.DEMO_MODEL].process
        os.kill(hung.pid, signal.SIGSTOP)  # alive but frozen: it takes connections and answers nothing
        waiting = asyncio.create_task(call_llm(_demo_llm(info.url), [{"role": "user", "content": "Hello"}],
                                               role="synthesizer", max_tokens=16))

        async def restarted() -> embedded.ServerInfo | None:
            await servers.check()
            now = servers.request(embedded.DEMO_MODEL, 2048)
            return now if now.status == "running" and now.url != info.url else None

        again = await async_wait_for(restarted, 60, message="the hung server was not restarted")
        # The answer that waited on it ends now, with an error (not at its 120 s timeout, twice).
        with pytest.raises(LLMCallFailed) as caught:
            await asyncio.wait_for(waiting, 10)
        assert "(did the server stop?)" in str(caught.value) or "(connection reset by peer)" in str(caught.value)
        assert hung.returncode is not None
        assert "did not answer for" in caplog.text and "its llama.cpp server hangs); restarting it" in caplog.text
        answer = await call_llm(_demo_llm(again.url), [{"role": "user", "content": "Hello"}], role="synthesizer",
                                max_tokens=16)
        assert answer.text.strip()
    finally:
        await servers.stop_all()


async def test_a_busy_server_is_not_taken_for_hung(grobot_env, monkeypatch):
    async def unanswered(url: str) -> bool:
        return False  # as when every HTTP thread of the server waits behind queued requests

    monkeypatch.setattr(embedded_servers, "_answers_health", unanswered)
    servers = EmbeddedServers(threads=1, parallel=1, hang_seconds=0.5)
    try:
        info = await servers.ensure(embedded.DEMO_MODEL, 2048)
        working = servers._servers[embedded.DEMO_MODEL].process
        answer = asyncio.create_task(call_llm(_demo_llm(info.url), [{"role": "user", "content": "Tell me a story."}],
                                              role="synthesizer", max_tokens=200))
        while not answer.done():  # its process works all along: it uses CPU
            await servers.check()
            await asyncio.sleep(0.2)
        assert (await answer).text.strip()
        assert servers._servers[embedded.DEMO_MODEL].process is working and working.returncode is None
    finally:
        await servers.stop_all()


@pytest.mark.parametrize("content, expected", [
    (None, "GGUF file not found: {path}"),
    (b"hello, I am text", "broken.gguf is not a GGUF model (no GGUF header)"),
    (b"GGUF\x03\x00\x00\x00garbage", "llama.cpp could not load the model"),
])
async def test_a_bad_model_file_is_one_clear_line_and_nothing_else_stops(grobot_env, tmp_path, content, expected):
    path = tmp_path / "broken.gguf"
    if content is not None:
        path.write_bytes(content)
    servers = EmbeddedServers(threads=1, parallel=1)
    try:
        info = await servers.ensure(str(path), 512)
        assert info.status == "error" and info.error.startswith(expected.format(path=path)), info.error
        assert "\n" not in info.error
        assert embedded.unavailable_reason(info) == f"the embedded model broken.gguf cannot run: {info.error}"
    finally:
        await servers.stop_all()


async def test_settings_refuse_a_missing_gguf_and_take_a_path_under_the_data_dir(grobot_env):
    with session_scope() as session, pytest.raises(ValidationError, match="GGUF file not found"):
        llm_settings.set_llm(session=session, category="output", provider="llamacpp", model="models/nothing.gguf")
    target = grobot_env.data_dir / "models" / "demo.gguf"
    target.parent.mkdir(parents=True)
    target.symlink_to(embedded.demo_model_file())
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", provider="llamacpp", model="models/demo.gguf")
    with session_scope() as session:
        assert llm_settings.wanted_embedded_models(session=session)["models/demo.gguf"] == 8192
        assert "models/demo.gguf" in embedded.available_models()


def test_cli_says_what_is_wrong_with_a_model_file_in_one_line(grobot_env):
    result = subprocess.run([sys.executable, "-m", "grobot", "llm", "set", "--category", "output", "--provider",
                             "llamacpp", "--model", "/nowhere/model.gguf"], env=grobot_env.environ(), cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["error: --model: GGUF file not found: /nowhere/model.gguf"]
