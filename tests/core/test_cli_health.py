"""``python -m grobot health``: every LLM server in use, each asked the way its provider is, and a plain
reason for each one that fails."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from grobot.cli.main import main
from grobot.core import link_client
from grobot.core.db import session_scope
from grobot.core.llm.http_errors import transport_reason
from grobot.core.security import key_file
from grobot.core.services import bots, council, fleet, llm_settings, mcp_servers
from grobot.core.settings import get_settings
from tests.fakes.llm import FakeLLM
from tests.helpers import make_token
from tests.ui.webapp import free_port

GOOD_KEY = "sk-good-key-1234"
WRONG_KEY = "sk-wrong-key-5678"


@pytest.fixture
def keyed_llm():
    """A second fake LLM server that accepts only GOOD_KEY (the other one accepts any)."""
    fake = FakeLLM().start()
    fake.api_keys = {GOOD_KEY}
    try:
        yield fake
    finally:
        fake.stop()


def check_lines(out: str, check: str = "llm") -> list[tuple[str, str]]:
    """The (state, detail) of health's rows of one check."""
    rows = [line.split(None, 2) for line in out.splitlines()]
    return [(state, detail) for name, state, detail in rows if name == check]


def set_llm(bot_id: int | None, category: str, provider: str, base_url: str, **fields) -> None:
    with session_scope() as session:
        llm_settings.set_llm(session=session, category=category, bot_id=bot_id, provider=provider, base_url=base_url,
                             **fields)


def add_bot(name: str, *, enabled: bool = True) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, enabled=enabled).id or 0


def set_env(monkeypatch, **values: str) -> None:
    """Change the environment of the settings (read again on their next use)."""
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


def no_ollama(monkeypatch) -> str:
    """OLLAMA_HOST becomes an address nothing listens on (returned)."""
    dead = f"http://127.0.0.1:{free_port()}"
    set_env(monkeypatch, OLLAMA_HOST=dead)
    return dead


def test_health_checks_every_server_in_use_the_way_its_provider_is_asked(grobot_env, capsys, fake_llm, keyed_llm):
    dead = f"http://127.0.0.1:{free_port()}"
    for category in ("decision", "tools"):
        set_llm(None, category, "ollama", fake_llm.url, model="fake-model")
    set_llm(None, "output", "openai", fake_llm.openai_url, model="fake-model", api_key="sk-open-1")
    set_llm(add_bot("claude"), "output", "anthropic", keyed_llm.anthropic_url, api_key=WRONG_KEY)
    gem = add_bot("gem")
    for category in ("tools", "output"):
        set_llm(gem, category, "gemini", keyed_llm.gemini_url, api_key=GOOD_KEY)
    set_llm(add_bot("down"), "decision", "ollama", dead)
    set_llm(add_bot("off", enabled=False), "output", "openai", f"{dead}/v1", api_key="sk-off-1")  # not in use
    plain = add_bot("plain")  # no override: the global servers; its council asks the global Ollama for another model
    with session_scope() as session:
        council.set_council(plain, session=session, enabled=True)
        council.set_advisor(plain, "Analyst", session=session, provider="ollama")

    code = main(["health"])
    out, err = capsys.readouterr()

    assert code == 1 and err == ""
    assert check_lines(out) == [
        ("ok", f"Connected to Ollama at {fake_llm.url}: 2 models available; "
               "used by global decision, tools; bot plain council advisor Analyst"),
        ("ok", f"Connected to OpenAI at {fake_llm.openai_url}: 2 models available; used by global output"),
        ("FAIL", f"Anthropic at {keyed_llm.anthropic_url}: 401: the API key was refused; used by bot claude output"),
        ("ok", f"Connected to Google Gemini at {keyed_llm.gemini_url}: 2 models available; used by bot gem tools, output"),
        ("FAIL", f"Ollama: cannot connect to {dead}: connection refused; used by bot down decision"),
    ]
    for secret in (GOOD_KEY, WRONG_KEY, "sk-open-1"):
        assert secret not in out
    # each server once; each provider asked its own way
    assert sorted((r.path, r.headers.get("authorization") or "") for r in fake_llm.requests) == [
        ("/api/tags", ""), ("/v1/models", "Bearer sk-open-1")]  # asked at once: in any order
    anthropic, gemini = sorted(keyed_llm.requests, key=lambda r: r.path)
    assert (anthropic.path, anthropic.headers.get("x-api-key"), anthropic.headers.get("anthropic-version")) == (
        "/v1/models", WRONG_KEY, "2023-06-01")
    assert "authorization" not in anthropic.headers
    assert (gemini.path, gemini.headers.get("x-goog-api-key")) == ("/v1beta/models", GOOD_KEY)


def test_health_without_llm_settings_checks_the_default_server_once(grobot_env, capsys, monkeypatch):
    dead = no_ollama(monkeypatch)
    add_bot("helper")
    code = main(["health"])
    out, _ = capsys.readouterr()
    assert code == 1
    assert check_lines(out) == [
        ("FAIL", f"Ollama: cannot connect to {dead}: connection refused; used by global decision, tools, output")]


def test_health_reads_every_kind_of_stored_secret(grobot_env, capsys, monkeypatch):
    """API keys and MCP servers' secrets are checked like bot tokens: counted, or named when the key cannot read them."""
    dead = no_ollama(monkeypatch)
    set_llm(None, "output", "openai", f"{dead}/v1", api_key="sk-global-1")
    set_llm(add_bot("helper"), "tools", "openai", f"{dead}/v1", api_key="sk-helper-1")
    with session_scope() as session:
        mcp_servers.create_server(session=session, name="brave", command="echo", env={"BRAVE_API_KEY": "b-1"})
    main(["health"])
    assert check_lines(capsys.readouterr().out, "secrets") == [
        ("ok", "2 API keys, 1 MCP secret decrypt with the current key")]  # no bot token: it said 'no secrets stored yet'

    set_env(monkeypatch, GROBOT_SECRET_KEY="another-key")
    with session_scope() as session:
        bots.create_bot(session=session, name="fresh", token=make_token(777777777777777777))  # readable: not named
    code = main(["health"])
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    assert check_lines(out, "secrets") == [
        ("FAIL", "2 API keys, 1 MCP secret cannot be decrypted with the current key (global output; bot helper tools; "
                 f"MCP server brave environment): set GROBOT_SECRET_KEY to the key they were encrypted with (or restore "
                 f"{key_file()})")]
    for secret in ("sk-global-1", "sk-helper-1", "b-1"):
        assert secret not in out


def test_health_without_secrets_says_so(grobot_env, capsys, monkeypatch):
    no_ollama(monkeypatch)
    add_bot("helper")  # no token
    main(["health"])
    assert check_lines(capsys.readouterr().out, "secrets") == [("ok", "no secrets stored yet")]


def test_a_check_that_crashes_says_so_in_a_sentence_and_logs_its_traceback_with_v(grobot_env):
    with session_scope() as session:  # a live worker on this host whose link address is broken
        fleet.register_supervisor("sup-1", hostname=socket.gethostname(), pid=os.getpid(), session=session)
        link_client.advertise("sup-1", "tcp://127.0.0.1:abc", session=session)
    env = grobot_env.environ(OLLAMA_HOST=f"http://127.0.0.1:{free_port()}")

    def health(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grobot", *flags, "health"], env=env, capture_output=True,
                              text=True, timeout=60)

    result = health()
    assert result.returncode == 1 and result.stderr == ""
    assert check_lines(result.stdout, "worker")[0][0] == "ok"
    said = "could not be checked: Port could not be cast to integer value as 'abc'"
    assert check_lines(result.stdout, "memory") == [("FAIL", said)]  # not 'ValueError: …'
    verbose = health("-v")
    assert check_lines(verbose.stdout, "memory") == [("FAIL", said)]
    assert "DEBUG grobot.core.services.health: The memory check crashed" in verbose.stderr
    assert "Traceback" in verbose.stderr and "ValueError: Port could not be cast to integer value as 'abc'" in verbose.stderr


def test_a_host_name_that_does_not_resolve_is_said_so():
    try:
        raise OSError("wrapped") from socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    except OSError as exc:
        assert transport_reason(exc) == "the host name is not known"
    assert transport_reason(ConnectionRefusedError(111, "Connect call failed")) == "connection refused"
    assert transport_reason(ValueError("nothing to do with the network")) == ""
