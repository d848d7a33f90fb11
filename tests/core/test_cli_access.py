"""``bot access`` and ``bot moderation`` as an admin meets them: users and roles by a name the bot has
seen, shown by name; a pattern that cannot be used refused in one plain line, with nothing saved."""

from __future__ import annotations

import json

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.services import bots, discord_roles, discord_users

ALICE, MUTED = "111111111111111111", "444444444444444444"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_access_lists_by_name_and_moderation_from_the_cli(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "doorman")[0] == 0
    with session_scope() as session:
        bot_id = bots.get_bot("doorman", session=session).id
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=ALICE, directives="",
                                     display_name="alice")
        discord_roles.save_roles(bot_id, "555555555555555555", "Test Guild", [(MUTED, "Muted", 1)], session=session)

    code, out, _ = run(capsys, "bot", "access", "doorman", "block-user", "alice")
    assert code == 0 and f"alice ({ALICE})" in out
    code, out, _ = run(capsys, "bot", "access", "doorman", "block-role", "muted", "--json")
    lists = json.loads(out)
    assert [e["id"] for e in lists["blocked_user_ids"]] == [ALICE]
    assert [e["id"] for e in lists["blocked_role_ids"]] == [MUTED]
    code, _, err = run(capsys, "bot", "access", "doorman", "allow-user", "nobody-seen")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    code, out, _ = run(capsys, "bot", "access", "doorman", "remove", "alice")
    assert code == 0 and "alice" not in out

    code, out, _ = run(capsys, "bot", "moderation", "doorman", "add-word", "spam", "bad word")
    assert code == 0 and "spam, bad word" in out
    code, _, err = run(capsys, "bot", "moderation", "doorman", "add-pattern", "b[a4]d(")
    assert code == 2 and err == "error: moderation_patterns: pattern 1 (b[a4]d() cannot be used: " \
        "a parenthesis is not closed\n"
    code, _, err = run(capsys, "bot", "moderation", "doorman", "add-pattern", r"\w+")  # matches any message
    assert code == 2 and "cannot be used" in err
    assert run(capsys, "bot", "moderation", "doorman", "add-pattern", r"free\s+money")[0] == 0
    code, out, _ = run(capsys, "bot", "moderation", "doorman", "set", "--action", "ignore", "--ask-model", "on", "--json")
    shown = json.loads(out)
    assert (shown["words"], shown["patterns"]) == (["spam", "bad word"], [r"free\s+money"])
    assert (shown["action"], shown["ask_model"]) == ("ignore", True)
