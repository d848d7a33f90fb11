"""Every event handler of the web app against objects its user may not act on (issue 28).

The handlers are read from the compiled app itself (``tests/security/app_handlers.py``); each must be
covered by an attack of ``tests/security/attacks.py``, so a new handler fails here until someone
writes the attack on it. The attacks are replayed over the real websocket as a tester (on the page of
a bot not granted to them, and on their own bot's page naming the other bot's objects and other
users' runs), with no session, and as an admin naming another bot's objects through a bot's page.
Target: zero accepted events: the database and the bots' folders as they were, no canary of an
object the user may not see in anything the server sent, every other user's live answer still live.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import reflex as rx
from sqlalchemy import text
from sqlmodel import SQLModel

from grobot.core.db import session_scope
from grobot.core.services import files, tester_chat, users
from grobot.pages.bot_files_state import FilesState
from grobot.pages.tester_chat_state import ChatState
from grobot.pages.users_state import UsersState
from grobot.state.app_state import AppState
from grobot.state.bot_page import BotPageState
from grobot.web_session import SESSION_COOKIE
from tests.security.app_handlers import app_handlers
from tests.security.attacks import (
    ATTACKS,
    World,
    covered,
    hidden_bot_messages,
    name_of,
    run_statuses,
    world_fixture,  # noqa: F401  (the fixture "world")
)
from tests.security.replay import Sent, replay

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

HIDDEN_CANARIES = ("bot", "directive", "note", "suggestion", "conversation", "deliberation", "log", "file",
                   "schedule", "run-hidden", "answer-hidden")
# What background handlers send after the events were handled (a followed run's answer) has this long to come.
LINGER_SECONDS = 8.0


def snapshot(world: World) -> dict[str, object]:
    """Every row of every table, and every file of every bot (what any handler could change)."""
    state: dict[str, object] = {}
    with session_scope(readonly=True) as session:
        for table in SQLModel.metadata.sorted_tables:
            rows = session.execute(text(f'SELECT * FROM "{table.name}"')).all()
            state[table.name] = sorted(repr(tuple(row)) for row in rows)
    root = files.bot_root(world.hidden).parent
    state["files"] = sorted((str(p.relative_to(root)), hashlib.sha256(p.read_bytes()).hexdigest())
                            for p in root.rglob("*") if p.is_file())
    return state


def changed(before: dict[str, object], after: dict[str, object]) -> dict[str, object]:
    return {key: (sorted(set(before[key]) ^ set(after[key])))[:6]  # type: ignore[arg-type]
            for key in before if before[key] != after.get(key)}


def leaked(updates: list[dict], world: World, names: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each canary the server sent, with what carried it (to say which handler leaked it)."""
    found = {}
    for name, value in world.canaries.items():
        carriers = [json.dumps(update) for update in updates if value in json.dumps(update)]
        if (names is None or name in names) and carriers:
            at = carriers[0].index(value)
            found[name] = carriers[0][max(0, at - 600):at + 100]
    return found


def events_for(world: World, page: int) -> list[Sent]:
    return [sent for attack in ATTACKS for sent in attack.events(world, page)]


def cross_bot_events(world: World) -> list[Sent]:
    return [sent for attack in ATTACKS if attack.cross_bot is not None for sent in attack.cross_bot(world)]


def _short(names: set[str]) -> list[str]:
    """Handlers' full names as ``state.handler`` (the full name is the state's whole path)."""
    return sorted(f"{name.rsplit('.', 2)[-2].split('____')[-1]}.{name.rsplit('.', 1)[-1]}" for name in names)


def test_every_event_handler_of_the_app_is_covered_by_an_attack(ui_env) -> None:
    """The handlers a client can call, read from the compiled app: each has its attack here, none is a
    helper that Reflex made public by accident, and only the Files tab's upload and Test Chat's image take uploads."""
    handlers = app_handlers(ui_env.environ())
    names = {handler.name for handler in handlers}
    assert len(names) > 150, names  # the whole app was read
    assert not _short(names - covered()), "handlers no attack covers (add one to tests/security/attacks.py)"
    assert not _short(covered() - names), "attacks on handlers the app no longer has"
    undeclared = sorted(h.name.rsplit(".", 2)[-2:][-1] for h in handlers if not h.declared)
    assert not undeclared, f"public methods of a state that are not declared events (prefix them with _): {undeclared}"
    assert sorted(h.name for h in handlers if h.takes_uploads) == sorted([name_of(FilesState.upload),
                                                                          name_of(ChatState.attach_image)])


def attack_of(world: World, who: str, tokens: dict[str, str]) -> tuple[list[Sent], str | None, tuple[str, ...] | None]:
    """What ``who`` replays, with which session, watching which canaries (None: all of them)."""
    if who == "admin":  # an admin may act on every bot, but names another bot's objects through this bot's page
        return cross_bot_events(world), tokens["admin"], HIDDEN_CANARIES
    pages = (world.hidden, world.granted) if who == "tester" else (world.hidden,)
    return [sent for page in pages for sent in events_for(world, page)], tokens.get(who), None


def test_no_event_acts_on_an_object_its_user_may_not_act_on(web_app, world) -> None:
    """The tester, a client with no session and the admin replay their attacks at the same time, each
    on a connection of its own (what background handlers send afterwards has ``LINGER_SECONDS`` to
    come on each: the three waits overlap)."""
    tokens = world.tokens()
    attacks = {who: attack_of(world, who, tokens) for who in ("tester", "nobody", "admin")}
    for who, (events, _, _) in attacks.items():
        assert len({sent.name for sent in events}) > (10 if who == "admin" else 150), who
    before, statuses = snapshot(world), run_statuses(world)
    with ThreadPoolExecutor(max_workers=len(attacks)) as pool:
        replays = {who: pool.submit(replay, web_app.url, *events, session=session,
                                    watch=([world.canaries[name] for name in (names or world.canaries)], LINGER_SECONDS))
                   for who, (events, session, names) in attacks.items()}
        updates = {who: future.result() for who, future in replays.items()}

    assert not changed(before, snapshot(world)), "an event changed what its user may not change"
    for who, (_, _, names) in attacks.items():
        assert not leaked(updates[who], world, names), f"an event sent what its user ({who}) may not see"
    assert {run: run_statuses(world)[run] for run in world.runs} == {run: statuses[run] for run in world.runs} == {
        run: "pending" for run in world.runs}, "another user's live answer was stopped"

    # The control: the same channel does reach the database for what the user may do.
    path = f"/bots/{world.granted}/chat"
    replay(web_app.url, Sent(BotPageState.open_bot, {"tab": "chat", "admin_only": False}, path),
           Sent(ChatState.set_draft, {"value": "my own question"}, path), Sent(ChatState.send, {"form_data": {}}, path),
           session=tokens["tester"])
    with session_scope() as session_:
        conv = tester_chat.latest_session(world.granted, world.tester.id, session=session_)
        mine = tester_chat.recent_messages(conv.id or 0, session=session_) if conv else []
        assert [m.content for m in mine] == ["my own question"]
        tester_chat.cancel(mine[0].id or 0, "ended by the test", session=session_)
    assert sorted(hidden_bot_messages(world)) == sorted([world.canaries["conversation"], world.canaries["run-hidden"]])


def test_sign_out_ends_only_the_sessions_of_its_own_cookie(web_app, world) -> None:
    """A tab's state names the user it last showed; whoever opens the tab again (its client token is
    in the websocket's URL, so in a proxy's log) and signs out ends no one's sessions but their own."""
    tokens = world.tokens()
    tab = str(uuid.uuid4())
    replay(web_app.url, Sent(AppState.require_login, {}, "/"), session=tokens["admin"], token=tab)  # the admin's tab
    for session in (None, tokens["tester"]):  # the admin has left it: someone opens it again and signs out
        replay(web_app.url, Sent(AppState.sign_out, {}, "/"), session=session, token=tab)
    with session_scope(readonly=True) as session_:
        assert users.user_for_session(tokens["admin"], session=session_) is not None, "the admin was signed out"
        assert users.user_for_session(tokens["tester"], session=session_) is None  # the tester, by their own cookie

    replay(web_app.url, Sent(AppState.sign_out, {}, "/"), session=tokens["admin"])  # the control
    with session_scope(readonly=True) as session_:
        assert users.user_for_session(tokens["admin"], session=session_) is None



def test_a_tab_its_user_left_opens_empty_for_anyone_else(web_app, world) -> None:
    """A tab's client token is in its websocket's URL (so in a proxy's log), and its state holds what its
    user saw. Opened again with that token, with no cookie or another user's, it is a new, empty tab:
    the server sends none of what the admin saw there, and an upload naming it is refused."""
    import httpx

    tokens = world.tokens()
    tab = str(uuid.uuid4())
    replay(web_app.url, Sent(AppState.require_admin, {}, "/users"), Sent(UsersState.open, {}, "/users"),
           session=tokens["admin"], token=tab)  # the admin's tab lists the accounts; the admin closes it
    for session in (None, tokens["tester"]):
        updates = replay(web_app.url, Sent(rx.State.hydrate, {}, "/users"), session=session, token=tab)
        assert world.victim.username not in json.dumps(updates), "the tab showed the admin's users list"
        answer = httpx.post(f"{web_app.url}/_upload", files={"files": ("x.txt", b"x", "text/plain")}, timeout=30,
                            headers={"reflex-client-token": tab, "reflex-event-handler": name_of(FilesState.upload),
                                     **({"Cookie": f"{SESSION_COOKIE}={session}"} if session else {})})
        assert answer.status_code == 403

    # The control: the admin opens the tab again and finds it as they left it.
    updates = replay(web_app.url, Sent(rx.State.hydrate, {}, "/users"), session=tokens["admin"], token=tab)
    assert world.victim.username in json.dumps(updates)
