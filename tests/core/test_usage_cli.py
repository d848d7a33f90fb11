"""The command line for usage limits: global defaults, per-bot limits, today's usage against them."""

from __future__ import annotations

import json

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.services import usage_accounting


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_admin_sets_limits_and_reads_usage_against_them(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "alpha")[0] == 0
    assert run(capsys, "bot", "add", "--name", "beta")[0] == 0

    # Global defaults: the settings command.
    code, out, _ = run(capsys, "settings", "set", "daily_token_limit", "5000")
    assert code == 0 and out.strip() == "daily_token_limit = 5000"
    assert run(capsys, "settings", "set", "user_daily_message_limit", "20")[0] == 0
    assert run(capsys, "settings", "get", "daily_token_limit")[1].strip() == "5000"
    code, _, err = run(capsys, "settings", "set", "daily_call_limit", "-3")
    assert code == 2 and err.strip() == "error: daily_call_limit: must be between 0 and 1,000,000,000"
    code, _, err = run(capsys, "settings", "set", "daily_call_limit", "lots")
    assert code == 2 and "expected a whole number" in err
    assert json.loads(run(capsys, "settings", "list", "--json")[1])["daily_call_limit"] == 0

    # Per bot: an own value, "unlimited", and back to the default.
    code, out, _ = run(capsys, "bot", "set", "alpha", "--daily-token-limit", "100", "--daily-call-limit", "unlimited")
    assert code == 0 and "daily_token_limit" in out and "daily_call_limit" in out
    assert run(capsys, "bot", "set", "beta", "--user-daily-message-limit", "3")[0] == 0
    assert run(capsys, "bot", "set", "beta", "user_daily_message_limit=default")[0] == 0
    code, _, err = run(capsys, "bot", "set", "beta", "--daily-token-limit", "many")
    assert code == 2 and "daily_token_limit" in err
    shown = json.loads(run(capsys, "bot", "show", "beta", "--json")[1])
    assert (shown["daily_token_limit"], shown["user_daily_message_limit"]) == (None, None)

    ids = {b["name"]: b["id"] for b in json.loads(run(capsys, "bot", "list", "--json")[1])}
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=ids["alpha"], calls=4, tokens_in=90, tokens_out=30,
                                       errors=1)
        usage_accounting.add_llm_usage(session=session, bot_id=ids["beta"], calls=1, tokens_in=10, tokens_out=5,
                                       errors=0)
        for _ in range(20):
            usage_accounting.count_user_message(session=session, bot_id=ids["beta"], discord_user_id="77")

    rows = {r["bot_name"]: r for r in json.loads(run(capsys, "usage", "--json")[1])}
    assert [name for name in rows] == ["alpha", "beta"]  # busiest first
    a, b = rows["alpha"], rows["beta"]
    assert (a["tokens"], a["token_limit"], a["calls"], a["call_limit"], a["errors"], a["over_limit"]) == (
        120, 100, 4, 0, 1, True)
    assert (b["tokens"], b["token_limit"], b["user_message_limit"], b["users_at_limit"], b["over_limit"]) == (
        15, 5000, 20, 1, False)
    code, out, _ = run(capsys, "usage")
    assert code == 0 and "LIMIT REACHED" in out.splitlines()[2] and out.splitlines()[2].startswith("alpha")

    detail = json.loads(run(capsys, "usage", "beta", "--json")[1])
    assert detail["today"]["tokens"] == 15 and detail["top_users"] == [{"discord_user_id": "77", "messages": 20}]
    assert len(detail["days"]) == 1
    code, out, _ = run(capsys, "usage", "beta")
    assert code == 0 and "15 tokens of 5000" in out and "(1 user at it)" in out

    # Over its budget, `chat` makes no LLM call and says why.
    code, out, err = run(capsys, "chat", "alpha", "hello?")
    assert code == 2 and "[error] alpha has reached its daily limit; it will be back after 00:00 UTC." in err


def test_days_is_a_period_of_1_to_366_days(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "alpha")[0] == 0
    for args in (("usage", "--days", "1"), ("usage", "alpha", "--days", "366"), ("usage", "--by", "day", "--days", "366")):
        assert run(capsys, *args)[0] == 0, args
    assert run(capsys, "usage", "alpha", "--days", "367") == (2, "", "error: --days: must be between 1 and 366\n")
