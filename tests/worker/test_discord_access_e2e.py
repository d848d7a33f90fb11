"""Who may use a bot, as Discord users meet it (a real bot process against the fake Discord, whose guild
members have roles as Discord sends them): allowed and blocked users and roles, a change applied at the
next message without a restart, ``/ask`` refused in one private line, and the roles the bot saw stored
with their names for the access lists."""

from __future__ import annotations

import pytest
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import Bot, DiscordRole
from grobot.core.services import access, discord_users
from tests.helpers import wait_for
from tests.worker.harness import fleet

pytestmark = pytest.mark.slow


def _said(world, text: str) -> bool:
    """Whether any LLM request carried ``text`` (a message the bot refused makes none)."""
    return any(text in str(body) for body in world.llm.chat_requests())


def _mention(world, bot: int, user: dict, text: str) -> dict:
    uid = world.discord_ids[bot]
    return world.discord.send_message(world.discord.channel_id, f"<@{uid}> {text}", mentions=[uid], author=user)


def _seen_roles(bot: int) -> dict[str, str]:
    with session_scope(readonly=True) as session:
        return {r.role_id: r.name for r in session.exec(select(DiscordRole).where(DiscordRole.bot_id == bot)).all()}


def test_allowed_and_blocked_users_and_roles(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        discord = world.discord
        members, muted = discord.add_role("Members"), discord.add_role("Muted")
        carol, dave = discord.add_user("carol"), discord.add_user("dave")
        discord.give_role(discord.alice, members)
        discord.give_role(carol, members)
        discord.give_role(carol, muted)
        discord.give_role(dave, members)
        bot = world.add_bot("doorman", user_cooldown_seconds=0, allowed_role_ids=[members["id"]],
                            blocked_role_ids=[muted["id"]])
        world.start_supervisor()
        world.wait_online(bot)
        uid = world.discord_ids[bot]

        # The bot stores the roles it sees in the guild, with their names (for the access lists).
        wait_for(lambda: _seen_roles(bot) == {members["id"]: "Members", muted["id"]: "Muted"}, 20,
                 message="the guild's roles stored")

        # bob has no allowed role, carol a blocked one: neither is answered, and no model runs for them;
        # alice (a Members) is answered after them (the positive barrier: messages are handled in order).
        ignored = [_mention(world, bot, discord.bob, "bob asks about the weather"),
                   _mention(world, bot, carol, "carol asks about the weather")]
        world.wait_reply(_mention(world, bot, discord.alice, "alice asks about the weather"),
                         containing="alice asks about the weather")
        assert not any(discord.replies_to(m["id"]) for m in ignored)
        assert not _said(world, "bob asks") and not _said(world, "carol asks")

        # /ask from bob: one line only he sees, and no model runs.
        token = discord.invoke_command(uid, "ask", {"question": "bob asks privately"}, user=discord.bob)["token"]
        private = wait_for(lambda: [r["body"] for r in discord.interaction_responses
                                    if r["kind"] == "webhook POST" and r["token"] == token], 20, message="/ask refused")
        assert [b["content"] for b in private] == ["Sorry, you are not allowed to use this bot here."]
        assert private[0]["flags"] & 64
        assert not _said(world, "bob asks privately")

        # The admin blocks alice by name (the name she wrote under, known once her answered message is
        # stored): her next message is refused, with no restart; dave (another Members) is answered after it.
        wait_for(lambda: _known_names(bot) >= {"alice"}, 20, message="alice's message stored")
        with session_scope() as session:
            lists = access.change_access(session.get(Bot, bot), session=session, add={"blocked_user_ids": ["alice"]})
        assert [e.label for e in lists["blocked_user_ids"]] == [f"alice ({discord.alice['id']})"]
        pid = world.status(bot).pid
        refused = _mention(world, bot, discord.alice, "alice once more")
        world.wait_reply(_mention(world, bot, dave, "dave asks"), containing="dave asks")
        assert not discord.replies_to(refused["id"]) and not _said(world, "alice once more")

        # Taken off the list, she is answered again (within the time a changed reply rule takes to reach
        # the bot), by the same process.
        with session_scope() as session:
            access.change_access(session.get(Bot, bot), session=session, remove=["alice"])
        wait_for(lambda: _answered(world, bot, discord.alice, "alice is back"), 30, interval=0,
                 message="alice answered again")
        assert world.status(bot).pid == pid

        # A role renamed on Discord is stored under its new name.
        discord.rename_role(members, "Regulars")
        wait_for(lambda: _seen_roles(bot).get(members["id"]) == "Regulars", 20, message="the renamed role")
        with session_scope(readonly=True) as session:
            assert access.resolve(session.get(Bot, bot), "regulars", "role", session=session) == members["id"]


def _known_names(bot: int) -> set[str]:
    with session_scope(readonly=True) as session:
        return {u.display_name for u in discord_users.known_users(session=session, bot_id=bot)}


def _answered(world, bot: int, user: dict, text: str) -> bool:
    try:
        world.wait_reply(_mention(world, bot, user, text), containing=text, timeout=3)
        return True
    except AssertionError:
        return False
