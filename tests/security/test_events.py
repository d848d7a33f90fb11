"""The attacker's own websocket client against the real web app (issue 17): a signed-in tester
replays admin event handlers and events for a bot not granted to them, and anyone replays
events with no session, a revoked one or a forged one. The server must refuse every one of them
and leave the database as it was; the same replay with a valid session does reach it (so these
refusals are not an artefact of the client)."""

from __future__ import annotations

import json
import logging

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import AppUser, McpServer, Message, Role, UserNote
from grobot.core.services import mcp_servers, tester_chat, user_notes, users
from grobot.pages.bot_knowledge_state import KnowledgeState
from grobot.pages.login_state import LoginState
from grobot.pages.mcp import McpState
from grobot.pages.tester_chat_state import ChatState
from grobot.pages.users_state import UsersState
from grobot.state.bot_page import BotPageState
from tests.security.replay import Sent, replay, with_session
from tests.ui.auth import create_ui_user
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def chat_messages(bot_id: int, user_id: int) -> list[str]:
    with session_scope(readonly=True) as session:
        conv = tester_chat.latest_session(bot_id, user_id, session=session)
        return [m.content for m in tester_chat.recent_messages(conv.id or 0, session=session)] if conv else []


def send_chat(bot_id: int, text: str) -> list[Sent]:
    """What the Test Chat page sends: its on-load check, the draft, then Send."""
    path = f"/bots/{bot_id}/chat"
    return [Sent(BotPageState.open_bot, {"tab": "chat", "admin_only": False}, path),
            Sent(ChatState.set_draft, {"value": text}, path), Sent(ChatState.send, {"form_data": {}}, path)]


def snapshot() -> dict[str, object]:
    """Everything an admin handler could change."""
    with session_scope(readonly=True) as session:
        return {
            "users": sorted((u.id, u.username, u.role, u.disabled, u.password_hash)
                            for u in session.exec(select(AppUser)).all()),
            "mcp": sorted((s.id, s.name) for s in session.exec(select(McpServer)).all()),
            "notes": sorted((n.id, n.note) for n in session.exec(select(UserNote)).all()),
            "messages": len(session.exec(select(Message.id)).all()),
        }


@pytest.fixture
def tester_setup(ui_env, ui_admin):
    """A tester granted one bot (with a note about a Discord user), another bot, a disabled
    account and an MCP server."""
    granted, other = add_bot(unique("Granted")), add_bot(unique("Other"))
    tester = create_ui_user(unique("tester"), Role.TESTER)
    victim = create_ui_user(unique("victim"), Role.TESTER)
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        users.grant_bot(user, granted, session=session)
        users.set_disabled(users.get_user(victim.id, session=session), True, session=session)
        note_id = user_notes.add_note(session=session, bot_id=granted, discord_user_id="777", note="Likes tea",
                                      reliability=0.9, source="admin").id
        server = mcp_servers.create_server(session=session, name=unique("srv"), command="python", args=["-m", "x"])
        token = users.start_session(user)
    return {"granted": granted, "other": other, "tester": tester, "victim": victim, "note": note_id,
            "server": (server.id, server.name), "token": token, "admin": ui_admin}


def test_a_testers_replayed_admin_events_are_refused_and_change_nothing(web_app, tester_setup) -> None:
    s = tester_setup
    token, tester = s["token"], s["tester"]
    # The channel works: the tester's own Test Chat message goes through.
    replay(web_app.url, *send_chat(s["granted"], "hello from the replay client"), session=token)
    assert chat_messages(s["granted"], tester.id) == ["hello from the replay client"]
    with session_scope() as session:  # no worker here: end it, so no other test claims it
        for message in tester_chat.claim_pending(unique("sup"), session=session):
            tester_chat.fail(message.id or 0, "not answered in this test", session=session)

    before = snapshot()
    knowledge = f"/bots/{s['granted']}/knowledge"
    updates = replay(
        web_app.url,
        Sent(UsersState.add_user, {"form": {"username": "mallory", "password": "Mallory-pass-1234",
                                            "role": "admin"}}, "/users"),
        Sent(UsersState.ask, {"action": "delete", "user_id": s["admin"].id, "username": "ui-admin"}, "/users"),
        Sent(UsersState.confirm, {}, "/users"),
        Sent(UsersState.enable, {"user_id": s["victim"].id}, "/users"),
        Sent(UsersState.start_password, {"user_id": s["admin"].id, "username": "ui-admin"}, "/users"),
        Sent(UsersState.reset_password, {"form": {"password": "Taken-over-1234"}}, "/users"),
        Sent(McpState.ask_delete, {"server_id": s["server"][0], "name": s["server"][1]}, "/mcp"),
        Sent(McpState.confirm_delete, {}, "/mcp"),
        Sent(BotPageState.open_bot, {"tab": "chat", "admin_only": False}, knowledge),  # a bot they may open
        Sent(KnowledgeState.select_user, {"user_id": "777"}, knowledge),
        Sent(KnowledgeState.delete_note, {"note_id": s["note"]}, knowledge),
        Sent(KnowledgeState.forget_user, {}, knowledge),
        *send_chat(s["other"], "a message to a bot not granted"),
        session=token,
    )
    assert snapshot() == before, "an admin event of a tester changed the database"
    assert chat_messages(s["other"], tester.id) == []
    assert "mallory" not in json.dumps(updates)

    # The control: the same replayed event with an admin's session does change the database.
    with session_scope() as session:
        admin_token = users.start_session(users.get_user(s["admin"].id, session=session))
    name = unique("made")
    replay(web_app.url,
           Sent(UsersState.add_user, {"form": {"username": name, "password": "Made-pass-12345", "role": "tester"}},
                "/users"), session=admin_token)
    with session_scope(readonly=True) as session:
        assert users.get_user(name, session=session).role == Role.TESTER.value


@pytest.mark.parametrize("case", ["no session", "signed out", "password changed", "account disabled",
                                  "tampered token", "another key", "token in client storage"])
def test_events_without_a_valid_session_are_refused(web_app, tester_setup, case) -> None:
    s = tester_setup
    token, tester, bot_id = s["token"], s["tester"], s["granted"]
    with session_scope() as session:
        user = users.get_user(tester.id, session=session)
        if case == "signed out":
            users.end_sessions(tester.id, session=session)
        elif case == "password changed":
            users.set_password(user, "A-new-password-5678", session=session)
        elif case == "account disabled":
            users.set_disabled(user, True, session=session)
    sent = {"no session": "", "tampered token": token[:-6] + ("AAAAAA" if not token.endswith("AAAAAA") else "BBBBBB"),
            "another key": "gAAAAABforged-token"}.get(case, token)
    before = snapshot()
    events = [*send_chat(bot_id, f"sent with {case}"),
              Sent(UsersState.add_user, {"form": {"username": "mallory2", "password": "Mallory-pass-1234",
                                                  "role": "admin"}}, "/users")]
    if case == "token in client storage":  # the old localStorage var, set by hand: not a session
        updates = replay(web_app.url, with_session(token), *events)
    else:
        updates = replay(web_app.url, *events, session=sent)
    assert snapshot() == before
    assert chat_messages(bot_id, tester.id) == []
    # The page is told to sign in again (or sent to the login page).
    names = [e.get("name") for u in updates for e in (u.get("events") or [])]
    assert "_call_script" in names or "_redirect" in names, names


def test_a_websocket_from_another_origin_is_refused(web_app, tester_setup) -> None:
    """A page of another site (even on the same host) cannot use the admin's session cookie."""
    import socketio

    s = tester_setup
    with pytest.raises(socketio.exceptions.ConnectionError):
        replay(web_app.url, *send_chat(s["granted"], "from evil.example"), session=s["token"],
               origin="http://evil.example")
    with pytest.raises(socketio.exceptions.ConnectionError):
        replay(web_app.url, *send_chat(s["granted"], "from another port"), session=s["token"],
               origin="http://127.0.0.1:1")
    assert chat_messages(s["granted"], s["tester"].id) == []
    replay(web_app.url, *send_chat(s["granted"], "from the app itself"), session=s["token"], origin=web_app.url)
    assert chat_messages(s["granted"], s["tester"].id) == ["from the app itself"]
    with session_scope() as session:  # no worker here: end it, so no other test claims it
        for message in tester_chat.claim_pending(unique("sup"), session=session):
            tester_chat.fail(message.id or 0, "not answered in this test", session=session)


def test_login_is_throttled_over_the_websocket(web_app, ui_env) -> None:
    """Guessing passwords by replaying the login event slows that client down: after a few failures
    its next guess waits (tests/security/test_login_throttle.py: the real user still signs in)."""
    victim = create_ui_user(unique("guessed"), Role.ADMIN)
    attempts = [Sent(LoginState.submit, {"form_data": {"username": victim.username, "password": f"guess-{i}"}},
                     "/login") for i in range(6)]
    updates = replay(web_app.url, *attempts)
    text = json.dumps(updates)
    assert "Wrong username or password" in text
    assert "Too many failed attempts: wait" in text
    assert "/_grobot/session" not in text  # no session cookie was handed over
    with session_scope(readonly=True) as session:
        assert users.get_user(victim.id, session=session).last_login_at is None


def test_the_session_cookie_is_only_given_for_a_fresh_handoff(web_app, tester_setup) -> None:
    """``/_grobot/session`` sets the HttpOnly cookie for a handoff from a login, nothing else."""
    import urllib.error
    import urllib.request

    from grobot.web_session import make_handoff

    def post(body: dict, origin: str | None = None) -> tuple[int, str]:
        request = urllib.request.Request(f"{web_app.url}/_grobot/session", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json",
                                                  **({"Origin": origin} if origin else {})}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("set-cookie") or ""
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("set-cookie") or ""

    token = tester_setup["token"]
    assert post({"handoff": token}) == (400, "")  # a session token is not a handoff
    assert post({"handoff": "gAAAAABforged"}) == (400, "")
    assert post({"handoff": make_handoff(token, now=0)}) == (400, "")  # long expired
    assert post({"handoff": make_handoff(token)}, origin="http://evil.example") == (403, "")
    status, cookie = post({"handoff": make_handoff(token)}, origin=web_app.url)
    assert status == 204
    assert cookie.startswith(f"grobot_session={token};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
