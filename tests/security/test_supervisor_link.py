"""The supervisor's link (a real one, serving a real memory store) refuses what a token does not cover:
a forged token, another bot's token, a group or an operation outside the token's scope. Each refusal
is a plain sentence for the caller and a warning in the supervisor's log, and nothing is read or done."""

from __future__ import annotations

import logging

import pytest

from grobot.core.errors import MemoryUnavailable
from grobot.core.link_client import AdminLink
from grobot.core.link_scope import admin_token
from grobot.core.memory.remote import MemoryAdmin
from tests.memory_helpers import ServiceThread, memory_service

SECRET = "Alice loves green tea"
SEARCH = {"query": "what does Alice drink?", "k": 5, "max_distance": None, "user_id": None}


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "bot_worker.link_server" and r.levelno == logging.WARNING]


def ask(service: ServiceThread, token: str, group: str, path: str, body: dict | None = None,
        bot_id: int | None = 7) -> tuple[int, dict]:
    return AdminLink(service.url, token=token).call(group, path, body or {}, bot_id=bot_id)


@pytest.fixture
def service(grobot_env, caplog) -> ServiceThread:
    caplog.set_level(logging.WARNING, logger="bot_worker.link_server")
    with memory_service() as running:
        running.call(running.local.add(7, [SECRET], {"user_id": "42"}))
        yield running


def test_a_forged_token_is_refused_and_logged(service, caplog):
    own = service.server.token(7)
    forged = ["", "0" * 64, "admin." + "0" * 64, "bot-7." + "0" * 64,
              "bot-8." + own.partition(".")[2],  # bot 7's proof under another bot's name
              "bot-7." + admin_token().partition(".")[2],  # the admin's proof under a bot's name
              "admin." + own.partition(".")[2]]
    for token in forged:
        caplog.clear()
        status, answer = ask(service, token, "memory", "search", SEARCH)
        assert (status, answer) == (401, {"error": "missing or wrong token", "kind": "refused"}), token
        logged = refusals(caplog)
        assert len(logged) == 1 and logged[0].startswith("Supervisor link refused a client without a valid token")
        assert logged[0].endswith("memory 'search' for bot 7: missing or wrong token"), token
    # What the web app and the CLI say when the worker refuses their token (another secret key).
    with pytest.raises(MemoryUnavailable, match=r"^the bot worker refused this process's token \(missing or wrong "
                                                r"token\): was the secret key changed\? restart the worker$"):
        MemoryAdmin(AdminLink(service.url, token="admin." + "0" * 64)).list(7)
    # The control: the genuine tokens are served.
    status, answer = ask(service, own, "memory", "search", SEARCH)
    assert status == 200 and [m["text"] for m in answer["result"]["memories"]] == [SECRET]
    assert [m.text for m in MemoryAdmin(AdminLink(service.url)).list(7)[0]] == [SECRET]


def test_another_bots_token_is_refused_and_logged(service, caplog):
    thief = service.server.token(8)
    for group, path, body in (("memory", "search", SEARCH), ("memory", "add", {"texts": ["planted"]}),
                              ("bot", "store/list_notes", {"user": "42"}), ("bot", "heartbeat", {"pid": 1})):
        caplog.clear()
        status, answer = ask(service, thief, group, path, body)
        assert (status, answer) == (403, {"error": "this token is for another bot", "kind": "refused"}), path
        assert len(refusals(caplog)) == 1 and refusals(caplog)[0].startswith("Supervisor link refused bot-8 ")
        assert refusals(caplog)[0].endswith(f"{group} {path!r} for bot 7: this token is for another bot")
    assert [m.text for m in service.call(service.local.list(7))] == [SECRET]  # nothing planted
    # Its own bot's memory it may search.
    assert ask(service, thief, "memory", "search", SEARCH, bot_id=8)[0] == 200


@pytest.mark.parametrize(("who", "group", "path", "why"), [
    ("admin", "bot", "store/list_notes", "this token may not use the bot operations"),
    ("admin", "bot", "heartbeat", "this token may not use the bot operations"),
    ("bot", "tester_chat", "wake", "this token may not use the tester_chat operations"),
    ("bot", "memory", "list", "a bot may not use the memory operation 'list'"),
    ("bot", "memory", "forget", "a bot may not use the memory operation 'forget'"),
    ("bot", "memory", "drop", "a bot may not use the memory operation 'drop'"),
    ("bot", "memory", "health", "a bot may not use the memory operation 'health'"),
    ("admin", "supervisor", "stop", "there is no operation group 'supervisor'"),
])
def test_a_group_or_an_operation_outside_the_tokens_scope_is_refused_and_logged(service, caplog, who, group, path, why):
    token = admin_token() if who == "admin" else service.server.token(7)
    status, answer = ask(service, token, group, path, {"user": "42", "user_id": "42"})
    assert (status, answer) == (403, {"error": why, "kind": "refused"})
    assert len(refusals(caplog)) == 1 and refusals(caplog)[0].endswith(f"{group} {path!r} for bot 7: {why}")
    assert [m.text for m in service.call(service.local.list(7))] == [SECRET]  # nothing forgotten or dropped
