"""Costs and budgets: prices per model, an estimated cost on every LLM call, cost per bot, model, day and
month in ``usage``, monthly and cost budgets, and the 80 % alert once per budget period."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from types import SimpleNamespace

from sqlmodel import select

from grobot.cli.main import main
from grobot.core.agents.chain import wait_for_background
from grobot.core.agents.types import IncomingMessage
from grobot.core.db import session_scope
from grobot.core.logs import DatabaseLogHandler
from grobot.core.models import Bot, BudgetAlert, LLMCall, LogEntry, UsageDaily, utcnow
from grobot.core.services import bots, costs, llm_calls, usage_accounting, usage_limits
from grobot.core.services.budgets import reset_alerts
from tests.fakes.llm import FakeToolCatalog, Reply, use_fake_llm
from tests.helpers import answered, wait_for


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _bot(name: str, **fields) -> int:
    with session_scope() as session:
        return bots.create_bot(session=session, name=name, **fields).id


def _call(provider: str, model: str, tokens_in: int, tokens_out: int) -> SimpleNamespace:
    return SimpleNamespace(role="synthesizer", provider=provider, model=model, tokens_in=tokens_in,
                           tokens_out=tokens_out, ttft_ms=None, latency_ms=100.0, error="")


def test_every_call_gets_an_estimated_cost_from_the_admins_price_a_default_or_none(grobot_env):
    bot_id = _bot("Spender")
    with session_scope() as session:
        costs.set_price("openai", "my-finetune", "2", "8", session=session)
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=[
            _call("openai", "gpt-4o-mini", 1_000_000, 100_000),  # default: 0.14 in, 0.55 out
            _call("openai", "my-finetune", 500_000, 250_000),  # the admin's: 1.0 + 2.0
            _call("ollama", "llama3.2", 9_000, 900),  # local: free
            _call("openai", "someone-elses-model", 1000, 10),  # no price: no cost
        ])
    with session_scope(readonly=True) as session:
        stored = {c.model: c.cost for c in session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id))}
        day = session.exec(select(UsageDaily).where(UsageDaily.bot_id == bot_id)).one()
    assert stored == {"gpt-4o-mini": 0.14 + 0.055, "my-finetune": 3.0, "llama3.2": 0.0, "someone-elses-model": None}
    assert round(day.cost, 6) == round(0.195 + 3.0, 6)


def test_prices_and_currency_from_the_command_line(grobot_env, capsys):
    code, out, _ = run(capsys, "prices", "set", "anthropic", "claude-3-5-haiku-latest", "--input", "1", "--output", "5")
    assert code == 0 and "EUR 1 in, 5 out per million tokens" in out
    code, _, err = run(capsys, "prices", "set", "openai", "gpt-x", "--input", "cheap", "--output", "1")
    assert code == 2 and "the input price must be a number" in err
    assert run(capsys, "prices", "currency", "usd")[1].strip() == "USD"
    code, _, err = run(capsys, "prices", "currency", "dollars")
    assert code == 2 and "three-letter code" in err
    listed = json.loads(run(capsys, "prices", "list", "--json")[1])
    assert listed["currency"] == "USD" and "ollama" in listed["free_providers"]
    haiku = [p for p in listed["prices"] if p["model"] == "claude-3-5-haiku-latest"]
    assert haiku == [{"provider": "anthropic", "model": "claude-3-5-haiku-latest", "input_per_million": 1.0,
                      "output_per_million": 5.0, "source": "admin"}]
    assert any(p["model"] == "gpt-4o-mini" and p["source"] == "default" for p in listed["prices"])
    assert run(capsys, "prices", "delete", "anthropic", "claude-3-5-haiku-latest")[0] == 0
    listed = json.loads(run(capsys, "prices", "list", "--json")[1])
    assert [p["source"] for p in listed["prices"] if p["model"] == "claude-3-5-haiku-latest"] == ["default"]
    code, _, err = run(capsys, "prices", "delete", "anthropic", "claude-3-5-haiku-latest")
    assert code == 2 and "no price set for anthropic/claude-3-5-haiku-latest" in err


def test_usage_shows_cost_per_bot_model_day_and_month(any_db_env, capsys):
    alpha, beta = _bot("alpha"), _bot("beta")
    now = utcnow()
    last_month = now - timedelta(days=45)  # an earlier UTC month, out of the last 30 days
    with session_scope() as session:
        llm_calls.insert_calls(session=session, bot_id=alpha, run_id=None,
                               records=[_call("openai", "gpt-4o", 1_000_000, 0)])  # 2.30
        llm_calls.insert_calls(session=session, bot_id=beta, run_id=None,
                               records=[_call("openai", "gpt-4o-mini", 1_000_000, 0)])  # 0.14
        llm_calls.insert_calls(session=session, bot_id=alpha, run_id=None, now=last_month,
                               records=[_call("openai", "gpt-4o", 0, 1_000_000)])  # 9.20, last month
    by_model = {p["key"]: p for p in json.loads(run(capsys, "usage", "--by", "model", "--days", "60", "--json")[1])}
    assert round(by_model["openai/gpt-4o"]["cost"], 2) == 11.50 and by_model["openai/gpt-4o"]["calls"] == 2
    assert by_model["openai/gpt-4o-mini"]["currency"] == "EUR"
    by_bot = {p["label"]: round(p["cost"], 2) for p in json.loads(run(capsys, "usage", "--by", "bot", "--json")[1])}
    assert by_bot == {"alpha": 2.30, "beta": 0.14}  # the last 30 days by default
    days = json.loads(run(capsys, "usage", "--by", "day", "--days", "60", "--json")[1])
    assert [(d["key"], round(d["cost"], 2)) for d in days] == [
        (last_month.date().isoformat(), 9.20), (now.date().isoformat(), 2.44)]
    months = json.loads(run(capsys, "usage", "--by", "month", "--days", "93", "--json")[1])
    assert {(m["month"], m["bot_name"], round(m["cost"], 2)) for m in months} == {
        (now.strftime("%Y-%m"), "alpha", 2.30), (now.strftime("%Y-%m"), "beta", 0.14),
        (last_month.strftime("%Y-%m"), "alpha", 9.20)}
    code, out, _ = run(capsys, "usage", "--by", "model", "--days", "60")
    assert code == 0 and "COST (EUR)" in out and "11.50" in out
    today = {r["bot_name"]: r for r in json.loads(run(capsys, "usage", "--json")[1])}
    assert round(today["alpha"]["cost"], 2) == 2.30 and round(today["alpha"]["month_cost"], 2) == 2.30
    code, out, _ = run(capsys, "usage", "alpha")
    assert code == 0 and "cost EUR 2.30" in out and "this month" in out


def test_monthly_budgets_stop_the_bot_like_the_daily_limits(any_db_env, capsys):
    bot_id = _bot("Penny")
    assert run(capsys, "bot", "set", "Penny", "--monthly-call-limit", "10", "--monthly-cost-limit", "5")[0] == 0
    assert run(capsys, "settings", "set", "monthly_token_limit", "1000000")[0] == 0
    earlier = utcnow().replace(day=1, hour=0, minute=1)
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=6, tokens_in=10, tokens_out=0, errors=0,
                                       cost=1.0, now=earlier)
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=4, tokens_in=10, tokens_out=0, errors=0,
                                       cost=1.0)
    with session_scope(readonly=True) as session:
        state = usage_limits.read_state(session=session, bot=session.get(Bot, bot_id))
    assert (state.month_calls, state.month_call_limit, state.month_cost_limit, state.month_token_limit) == (
        10, 10, 5.0, 1_000_000)
    hit = usage_limits.check(state)
    assert hit is not None and hit.reason == "month_calls"
    assert hit.text == "Penny has reached its monthly limit; it will be back on the 1st (00:00 UTC)."
    row = json.loads(run(capsys, "usage", "--json")[1])[0]
    assert row["over_limit"] is True and row["budget_alert"] is True
    assert [(a["budget"], a["percent"], a["reached"]) for a in row["alerts"]] == [("monthly_calls", 100.0, True)]


async def test_the_chain_refuses_a_message_over_the_monthly_cost_budget(grobot_env, fake_llm):
    bot_id = _bot("Budget", monthly_cost_limit=0.5)
    use_fake_llm(fake_llm, bot_id=bot_id)
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=1, tokens_in=1, tokens_out=1, errors=0,
                                       cost=0.5)
    requests = len(fake_llm.chat_requests())
    fake_llm.script(Reply(text="never sent"))
    result = await answered(IncomingMessage(bot_id=bot_id, conversation_key="cli:me", content="hi", author_id="cli:me",
                                             author_name="me", platform="cli"), tools=FakeToolCatalog())
    assert result.error == "Budget has reached its monthly limit; it will be back on the 1st (00:00 UTC)."
    assert len(fake_llm.chat_requests()) == requests


async def test_a_price_makes_the_chains_calls_cost_something(grobot_env, fake_llm):
    bot_id = _bot("Priced")
    use_fake_llm(fake_llm, bot_id=bot_id, provider="openai", model="fake-pro")
    with session_scope() as session:
        costs.set_price("openai", "fake-pro", "1000", "2000", session=session)
    fake_llm.script(Reply(text="hello", prompt_tokens=100, completion_tokens=10))
    result = await answered(IncomingMessage(bot_id=bot_id, conversation_key="cli:me", content="hi", author_id="cli:me",
                                             author_name="me", platform="cli"), tools=FakeToolCatalog())
    assert result.error is None
    await wait_for_background()
    with session_scope(readonly=True) as session:
        calls = session.exec(select(LLMCall).where(LLMCall.bot_id == bot_id)).all()
        day = session.exec(select(UsageDaily).where(UsageDaily.bot_id == bot_id)).one()
    assert calls and all(c.cost == (c.tokens_in * 1000 + c.tokens_out * 2000) / 1e6 for c in calls)
    assert round(day.cost, 6) == round(sum(c.cost for c in calls), 6) > 0


def test_a_budget_at_80_percent_is_a_warning_in_the_bots_log_once_per_period(any_db_env, capsys):
    handler = DatabaseLogHandler(flush_interval=0.05)
    logging.getLogger().addHandler(handler)
    try:
        bot_id = _bot("Watched", monthly_token_limit=1000, daily_call_limit=100)
        with session_scope() as session:
            usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=50, tokens_in=700, tokens_out=100,
                                           errors=0)

        def read() -> None:
            with session_scope(readonly=True) as session:
                usage_limits.read_state(session=session, bot=session.get(Bot, bot_id))

        read()

        def warnings() -> list[str]:
            handler.flush()
            with session_scope(readonly=True) as session:
                return [e.message for e in session.exec(select(LogEntry).where(
                    LogEntry.bot_id == bot_id, LogEntry.level == "WARNING"))]

        expected = ("Bot Watched has used 80 % of its monthly tokens budget (800 of 1,000); at 100 % it stops "
                    "making LLM calls")
        wait_for(lambda: warnings() == [expected], timeout=10, message="the budget warning in the bot's log")
        row = json.loads(run(capsys, "usage", "--json")[1])[0]
        assert row["budget_alert"] is True and row["over_limit"] is False
        assert [(a["budget"], a["percent"]) for a in row["alerts"]] == [("monthly_tokens", 80.0)]

        # Another message, and another process (which has not alerted yet): still one warning in this period.
        read()
        reset_alerts()
        read()
        with session_scope() as session:  # the daily calls pass 80 % too: that budget's own warning
            usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=30, tokens_in=0, tokens_out=0,
                                           errors=0)
        read()
        wait_for(lambda: len(warnings()) == 2, timeout=10, message="the daily-calls warning")
        assert warnings()[0] == expected and "80 % of its daily LLM calls budget" in warnings()[1]
        with session_scope(readonly=True) as session:
            alerts = session.exec(select(BudgetAlert.budget, BudgetAlert.period)).all()
        assert sorted(alerts) == [("daily_calls", utcnow().date().isoformat()),
                                  ("monthly_tokens", utcnow().strftime("%Y-%m"))]
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


def test_breakdowns_per_discord_user_and_source(any_db_env):
    from grobot.core.services import conversations, tester_chat, usage_charts

    bot_id = _bot("Split")
    with session_scope() as session:
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:9", title="#x",
                                                        guild_id="1", channel_id="9")
        run_id = conversations.insert_user_message(session=session, conversation_id=conv.id, content="hi",
                                                   author_id="77", author_name="bob_the_user")
        tester = tester_chat.create_session(bot_id, session=session)
        test_run = tester_chat.submit(tester.id, "hello", session=session).id
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=run_id,
                               records=[_call("openai", "gpt-4o-mini", 1000, 10)] * 2)
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=test_run,
                               records=[_call("ollama", "llama3.2", 10, 1)])
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=[_call("ollama", "x", 1, 1)])
        # The advisory council's calls, stored with a deliberation (asked on Discord, in Test Chat or the CLI).
        council_calls = [_call("ollama", "x", 5, 5), _call("ollama", "x", 5, 5)]
        council_calls[0].role, council_calls[1].role = "council_advisor", "council_synthesis"
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=council_calls)
    with session_scope(readonly=True) as session:
        users = usage_charts.by_user(session=session, days=1)
        sources = usage_charts.by_source(session=session, days=1, bot_id=bot_id)
        days = usage_charts.by_day(session=session, days=1)
    assert [(u.key, u.label, u.calls, u.tokens) for u in users] == [("77", "bob_the_user", 2, 2020)]
    assert sorted((s.label, s.calls) for s in sources) == [("Background", 1), ("Council", 2), ("Discord", 2),
                                                          ("Test Chat", 1)]
    assert [(d.key, d.calls) for d in days] == [(utcnow().date().isoformat(), 6)]
