"""Knowledge the admin controls: every Discord user who talked is listed; notes may wait for approval; notes are edited."""

from __future__ import annotations

import json

import pytest

from grobot.cli.main import main
from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.errors import ValidationError
from grobot.core.services import bots, discord_users, tester_chat, user_notes
from grobot.core.store.local import run_chain
from tests.fakes.llm import FakeToolCatalog, Reply, is_archivist_request, use_fake_llm


def discord_message(bot_id: int, text: str, *, author_id: str = "42", author_name: str = "alice") -> IncomingMessage:
    return IncomingMessage(bot_id=bot_id, conversation_key="guild:500", content=text, author_id=author_id,
                           author_name=author_name, platform="discord", channel_id="500", channel_name="general",
                           guild_id="1", guild_name="Friends", mentions_bot=True)


def known(bot_id: int, search: str = "") -> dict[str, discord_users.KnownUser]:
    with session_scope(readonly=True) as session:
        return {u.discord_user_id: u for u in discord_users.known_users(session=session, bot_id=bot_id, search=search)}


async def test_everyone_who_talked_to_the_bot_is_listed(grobot_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Lister").id
        conv = tester_chat.create_session(bot_id, session=session)
        tester_chat.submit(conv.id, "a tester's message", session=session, author_id="tester-1")
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="99", note="Zed likes jazz", reliability=0.8,
                            source="admin")
    use_fake_llm(fake_llm, bot_id=bot_id)

    await run_chain(discord_message(bot_id, "hello there"), tools=FakeToolCatalog())
    await run_chain(discord_message(bot_id, "and again"), tools=FakeToolCatalog())
    await run_chain(discord_message(bot_id, "hi", author_id="77", author_name="bob"), tools=FakeToolCatalog())
    await wait_for_background()

    users = known(bot_id)
    assert set(users) == {"42", "77", "99"}  # no profile nor note needed; the Test Chat tester is no Discord user
    assert (users["42"].display_name, users["42"].message_count, users["42"].note_count) == ("alice", 2, 0)
    assert (users["77"].display_name, users["77"].message_count) == ("bob", 1)
    assert (users["99"].message_count, users["99"].note_count) == (0, 1)
    assert list(known(bot_id, "bob")) == ["77"]  # found by the name they wrote under


async def test_archivist_notes_wait_for_the_admin_when_the_bot_says_so(grobot_env, fake_llm, capsys, monkeypatch):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Careful").id
    assert main(["bot", "set", "Careful", "notes_need_approval=true"]) == 0
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [{"note": "Alice lives in Lyon", "reliability": 0.9},
                                                                    {"note": "Alice hates Mondays", "reliability": 0.8}]}),
                        persistent=True)

    await run_chain(discord_message(bot_id, "I'm Alice, I live in Lyon and I hate Mondays"), tools=FakeToolCatalog())
    await wait_for_background()

    with session_scope(readonly=True) as session:
        waiting = {n.note: n for n in user_notes.suggestions(session=session, bot_id=bot_id)}
        assert user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="42") == []
    assert set(waiting) == {"Alice lives in Lyon", "Alice hates Mondays"}
    assert known(bot_id)["42"].suggestion_count == 2 and known(bot_id)["42"].note_count == 0

    fake_llm.reset()
    await run_chain(discord_message(bot_id, "what's 2+2?"), tools=FakeToolCatalog())
    assert "Lyon" not in fake_llm.chat_requests()[0]["messages"][0]["content"]  # a suggestion is not known yet

    with session_scope() as session:
        user_notes.accept_suggestion(session=session, bot_id=bot_id, note_id=waiting["Alice lives in Lyon"].id,
                                     note="Alice lives in Lyon, France")  # accepted as the admin edited it
        user_notes.dismiss_suggestion(session=session, bot_id=bot_id, note_id=waiting["Alice hates Mondays"].id)
        with pytest.raises(ValidationError, match="not a suggestion"):
            user_notes.dismiss_suggestion(session=session, bot_id=bot_id, note_id=waiting["Alice hates Mondays"].id)

    fake_llm.reset()
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [{"note": "Alice lives in Lyon", "reliability": 0.9},
                                                                    {"note": "Alice hates Mondays", "reliability": 0.8}]}))
    await run_chain(discord_message(bot_id, "I'm Alice, I live in Lyon and I hate Mondays"), tools=FakeToolCatalog())
    await wait_for_background()
    assert sum(is_archivist_request(r) for r in fake_llm.chat_requests()) == 1  # it suggested both notes again
    system = fake_llm.chat_requests()[0]["messages"][0]["content"]
    assert "Alice lives in Lyon, France" in system and "Mondays" not in system
    with session_scope(readonly=True) as session:
        again = [n.note for n in user_notes.suggestions(session=session, bot_id=bot_id)]
        active = [n.note for n in user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="42")]
    assert again == ["Alice lives in Lyon"]  # unlike the accepted, edited note; the dismissed one never comes back
    assert active == ["Alice lives in Lyon, France"]


async def test_without_approval_the_archivist_saves_at_once(grobot_env, fake_llm):
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Quick").id
    use_fake_llm(fake_llm, bot_id=bot_id)
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [{"note": "Alice lives in Lyon", "reliability": 0.9}]}))

    await run_chain(discord_message(bot_id, "I'm Alice and I live in Lyon"), tools=FakeToolCatalog())
    await wait_for_background()

    with session_scope(readonly=True) as session:
        assert [n.note for n in user_notes.list_notes(session=session, bot_id=bot_id, discord_user_id="42")] == [
            "Alice lives in Lyon"]
        assert user_notes.suggestions(session=session, bot_id=bot_id) == []


def test_the_approval_setting_is_a_bot_field(grobot_env, capsys):
    with session_scope() as session:
        bots.create_bot(session=session, name="Shown")
    assert main(["bot", "set", "Shown", "notes_need_approval=yes"]) == 0
    capsys.readouterr()
    assert main(["bot", "show", "Shown", "--json"]) == 0
    assert '"notes_need_approval": true' in capsys.readouterr().out


async def test_the_archivist_keeps_only_what_the_users_own_words_say(grobot_env, fake_llm):
    """A small model copied the bot's answer into a note about the user, reliability 0.9, and it went into
    every later prompt. Now the model reads the user's message only, and a note is kept only when that
    message supports it, as reliable as the support says at most."""
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="Bob").id
    use_fake_llm(fake_llm, bot_id=bot_id)
    answer = "Bonjour! Hi, I'm Bob, and I'm here to help you with anything."
    fake_llm.script(Reply(text=answer))
    fake_llm.script_for(is_archivist_request, Reply(json={"notes": [
        {"note": answer, "reliability": 0.9},  # the bot's answer
        {"note": "Alice lives in Lisbon", "reliability": 0.9},  # her words
        {"note": "Alice lives in Lisbon, Portugal, near the sea", "reliability": 0.9},  # half of it hers
        {"note": "Alice loves cats", "reliability": 0.9},  # made up
    ]}))

    await run_chain(discord_message(bot_id, "Bonjour! I'm Alice and I live in Lisbon."), tools=FakeToolCatalog())
    await wait_for_background()

    request = next(body for body in fake_llm.chat_requests() if is_archivist_request(body))
    assert "here to help" not in json.dumps(request["messages"])  # the model never saw the bot's answer
    with session_scope(readonly=True) as session:
        notes = {n.note: n.reliability for n in user_notes.list_notes(session=session, bot_id=bot_id,
                                                                      discord_user_id="42")}
    assert notes == {"Alice lives in Lisbon": 0.9, "Alice lives in Lisbon, Portugal, near the sea": 0.75}
