"""The Usage page in a real browser (issue 14 item 8, issue 15 items 2 and 3): charts over days with
recharts, breakdowns per model, bot, Discord user (by name) and source, estimated costs, the budget
alerts banner, and the prices and currency the admin edits."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from grobot.core.db import session_scope
from grobot.core.models import LLMCall, utcnow
from grobot.core.services import app_settings, conversations, costs, llm_calls, tester_chat, usage_accounting
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import NARROW, sized_page

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def _call(provider: str, model: str, tokens_in: int, tokens_out: int, latency: float) -> SimpleNamespace:
    return SimpleNamespace(role="synthesizer", provider=provider, model=model, tokens_in=tokens_in,
                           tokens_out=tokens_out, ttft_ms=None, latency_ms=latency, error="")


@pytest.fixture
def euro():
    """The currency of the other browser tests (they share the database) is EUR again afterwards."""
    yield
    with session_scope() as session:
        costs.set_currency("EUR", session=session)


def test_usage_charts_breakdowns_costs_alerts_and_prices(admin_page, euro) -> None:
    page = admin_page
    name = unique("Charted")
    bot_id = add_bot(name, monthly_cost_limit=0.2)
    now = utcnow()
    with session_scope() as session:
        conv = conversations.get_or_create_conversation(session=session, bot_id=bot_id, key="guild:700",
                                                        title="#general", guild_id="1", channel_id="700")
        discord_run = conversations.insert_user_message(session=session, conversation_id=conv.id, content="hi",
                                                        author_id="4242", author_name="alice_w")
        tester = tester_chat.create_session(bot_id, session=session)
        test_run = tester_chat.submit(tester.id, "hello", session=session).id
        # Yesterday: one Discord run on gpt-4o (EUR 0.23 for 100k tokens in); today: more on two models.
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=discord_run, now=now - timedelta(days=1),
                               records=[_call("openai", "gpt-4o", 100_000, 0, 900.0)])
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=discord_run,
                               records=[_call("openai", "gpt-4o-mini", 1_000_000, 0, 300.0)])
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=test_run,
                               records=[_call("ollama", "llama3.2", 500, 20, 100.0),
                                        _call("ollama", "llama3.2", 400, 20, 200.0)])
        tester_chat.finish(test_run, session=session)  # answered: no pending message left for other tests
    page.goto("/usage")
    expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    # Over days: one bar per day with calls (yesterday and today) in the calls and cost charts.
    expect(page.get_by_test_id("chart-calls").locator(".recharts-bar-rectangle")).to_have_count(2)
    expect(page.get_by_test_id("chart-cost").locator(".recharts-bar-rectangle")).to_have_count(2)
    expect(page.get_by_test_id("chart-latency").locator(".recharts-line")).to_have_count(1)
    expect(page.get_by_test_id("chart-tokens").locator(".recharts-area")).to_have_count(2)
    # Discord vs Test Chat, per model, per Discord user (by name).
    expect(page.get_by_test_id("chart-sources")).to_contain_text("Discord")
    expect(page.get_by_test_id("chart-sources")).to_contain_text("Test Chat")
    expect(page.get_by_test_id("chart-users")).to_contain_text("alice_w")
    models = page.get_by_test_id("usage-by-model")
    mini = models.get_by_role("row").filter(has_text="gpt-4o-mini (openai)")
    expect(mini.get_by_role("cell")).to_have_text(["1", "1,000,000", "300 ms", "EUR 0.14"])
    free = models.get_by_role("row").filter(has_text="llama3.2 (ollama)")
    expect(free.get_by_role("cell")).to_have_text(["2", "940", "150 ms", "EUR 0.00"])
    users = page.get_by_test_id("usage-by-user")
    expect(users.get_by_role("row").filter(has_text="alice_w").get_by_role("cell")).to_have_text(
        ["2", "1,100,000", "600 ms", "EUR 0.37"])
    months = page.get_by_test_id("usage-by-month").get_by_role("row")
    expect(months.filter(has_text=now.strftime("%B %Y"))).to_have_count(1)
    bots_row = page.get_by_test_id("usage-by-bot").get_by_role("row").filter(
        has=page.get_by_role("rowheader").get_by_text(name, exact=True))
    expect(bots_row.get_by_role("cell").last).to_have_text("EUR 0.37")

    # The budget: 0.37 of 0.20 this month (at least 0.14 today; the 1st of a month has no yesterday in it).
    banner = page.get_by_test_id("budget-alerts")
    expect(banner).to_contain_text(re.compile(rf"{name}: \d+ % of the monthly cost budget reached"))

    # Prices: the admin sets one, and the currency.
    prices = page.get_by_test_id("prices")
    expect(prices.locator("tr[data-price-model='gpt-4o-mini']")).to_contain_text("default")
    page.get_by_label("Provider").fill("openai")
    page.get_by_label("Model").fill("gpt-4o-mini")
    page.get_by_label("Input price per million tokens").fill("0.5")
    page.get_by_label("Output price per million tokens").fill("abc")
    page.get_by_role("button", name="Save price").click()
    expect(page.get_by_text("the output price must be a number (per million tokens)")).to_be_visible()
    page.get_by_label("Provider").fill("openai")
    page.get_by_label("Model").fill("gpt-4o-mini")
    page.get_by_label("Input price per million tokens").fill("0.5")
    page.get_by_label("Output price per million tokens").fill("2")
    page.get_by_role("button", name="Save price").click()
    row = prices.locator("tr[data-price-model='gpt-4o-mini']")
    expect(row.get_by_role("cell")).to_have_text(["openai", "0.5", "2", "set here", ""])
    with session_scope(readonly=True) as session:
        assert [p for p in costs.list_prices(session=session) if p.model == "gpt-4o-mini"][0].source == "admin"
    page.get_by_label("Currency").fill("chf")
    page.get_by_role("button", name="Save currency").click()
    expect(page.get_by_text("Costs are shown in CHF")).to_be_visible()
    expect(mini.get_by_role("cell").last).to_have_text("CHF 0.14")
    page.get_by_role("button", name="Remove the price of openai gpt-4o-mini").click()
    expect(row.get_by_role("cell").nth(3)).to_have_text("default")
    assert page.grobot_record.console_errors == [], page.grobot_record.console_errors


@pytest.fixture
def no_global_budgets():
    """The other browser tests (they share the database) see no global budget afterwards."""
    yield
    with session_scope() as session:
        app_settings.set_values({key: "0" for key in app_settings.BUDGET_KEYS}, session=session)


def test_global_budgets_on_the_settings_page_alert_on_the_usage_page(admin_page, no_global_budgets) -> None:
    page = admin_page
    name = unique("Defaulted")
    bot_id = add_bot(name)
    with session_scope() as session:
        usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=90, tokens_in=10, tokens_out=0,
                                       errors=0)
    page.goto("/settings")
    fleet = page.get_by_role("form", name="Fleet settings")
    expect(page.locator("#app-monthly_call_limit")).to_have_value("0", timeout=PAGE_TIMEOUT_MS)
    page.locator("#app-monthly_call_limit").fill("100")
    page.locator("#app-monthly_cost_limit").fill("12.5")
    fleet.get_by_role("button", name="Save settings").click()
    expect(page.get_by_text("Settings saved")).to_be_visible()
    with session_scope(readonly=True) as session:
        stored = app_settings.get_values(("monthly_call_limit", "monthly_cost_limit"), session=session)
    assert stored == {"monthly_call_limit": 100, "monthly_cost_limit": 12.5}
    page.goto("/usage")
    expect(page.get_by_test_id("budget-alerts")).to_contain_text(
        f"{name}: 90 % of the monthly LLM calls budget used (90 of 100)", timeout=PAGE_TIMEOUT_MS)


def assert_on_screen(page, element, what: str) -> None:
    """``element`` is shown within the width of the screen, as the page first shows it (no table
    scrolled sideways)."""
    expect(element).to_be_visible()
    box, width = element.bounding_box(), page.viewport_size["width"]
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, \
        f"the {what} is off the {width} px screen: {box}"


def test_an_admins_price_and_its_remove_button_fit_a_phone(browser, web_app, ui_admin) -> None:
    """At 420 px the prices table showed Provider, Model, Input and Output only: whether a price was
    the admin's ("set here") and its Remove button were past the right edge of the screen."""
    model = unique("phone-model").lower()
    with session_scope() as session:
        costs.set_price("openai", model, "1.5", "3", session=session)
    try:
        with sized_page(browser, web_app.url, NARROW, ui_admin) as page:
            page.goto("/usage")
            row = page.get_by_test_id("prices").locator(f"tr[data-price-model='{model}']")
            remove = row.get_by_role("button", name=f"Remove the price of openai {model}")
            expect(remove).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            assert_on_screen(page, remove, "Remove button")
            assert_on_screen(page, row.get_by_text("set here").locator("visible=true"), "'set here'")
            expect(row.get_by_test_id("price-details")).to_contain_text("openai")
            remove.click()
            expect(row).to_have_count(0)
            assert page.grobot_errors == [], page.grobot_errors
    finally:
        with session_scope() as session:
            if any(p.model == model and p.source == "admin" for p in costs.list_prices(session=session)):
                costs.delete_price("openai", model, session=session)


def test_the_usage_per_bot_and_per_agent_role_fit_a_phone(browser, web_app, ui_admin) -> None:
    """At 420 px the tables per bot and per agent role had seven columns: the mean latency and the
    estimated cost were past the right edge of the screen."""
    name = unique("Pocket")
    bot_id = add_bot(name)
    with session_scope() as session:
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None,
                               records=[_call("openai", "gpt-4o", 1_200, 34, 900.0)])
    with sized_page(browser, web_app.url, NARROW, ui_admin) as page:
        page.goto("/usage")
        bots_row = page.get_by_test_id("usage-by-bot").get_by_role("row").filter(
            has=page.get_by_role("rowheader").get_by_text(name, exact=True))
        expect(bots_row).to_have_count(1, timeout=PAGE_TIMEOUT_MS)
        roles_row = page.get_by_test_id("usage-by-role").get_by_role("row").filter(
            has=page.get_by_role("rowheader").get_by_text("Synthesizer", exact=True))
        for table, row in (("per bot", bots_row), ("per agent role", roles_row)):
            assert_on_screen(page, row.get_by_role("cell").last, f"estimated cost {table}")
            assert_on_screen(page, row.get_by_role("cell").nth(-2), f"mean latency {table}")
        expect(bots_row.get_by_role("cell")).to_have_text(["1", "0", "900 ms", re.compile(r"^[A-Z]{3} ")])
        expect(bots_row.get_by_test_id("usage-tokens")).to_have_text("1,200 in · 34 out tokens")
        assert page.grobot_errors == [], page.grobot_errors


@contextmanager
def only_new_calls() -> Iterator[None]:
    """The LLM calls the other browser tests stored (they share the database) are out of the periods the
    Usage page shows while this runs (a year back), then where they were."""
    with session_scope() as session:
        moved = {call.id: call.created_at for call in session.exec(select(LLMCall)).all()}
        for call_id, created in moved.items():
            session.get(LLMCall, call_id).created_at = created - timedelta(days=400)
    try:
        yield
    finally:
        with session_scope() as session:
            for call_id, created in moved.items():
                call = session.get(LLMCall, call_id)
                if call is not None:
                    call.created_at = created


TICK_LEFT_JS = """(svg) => {
    const left = svg.getBoundingClientRect().left;
    return [...svg.querySelectorAll('.recharts-yAxis-tick-labels text')]
        .map((text) => Math.round(text.getBoundingClientRect().left - left));
}"""
STROKES_JS = """(chart) => [...chart.querySelectorAll('.recharts-area-curve')].map((path) => getComputedStyle(path).stroke)"""


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", css)[:3])


def test_the_usage_charts_read_plainly(admin_page) -> None:
    """Issue 30 item 7: a long model name beside its bar was cut at the chart's left edge; the "per Discord
    user" chart was an empty frame; tokens in and out were two oranges; a week with calls on one day had
    one tick; latencies read "45,804 ms", a tiny cost "EUR 0.0000", roles `tool_identifier`."""
    page = admin_page
    name = unique("Plain")
    bot_id = add_bot(name)
    model = "gpt-4o-mini-2024-07-18-with-a-very-long-name"
    with only_new_calls():
        with session_scope() as session:
            tester = tester_chat.create_session(bot_id, session=session)
            run = tester_chat.submit(tester.id, "hello", session=session).id
            costs.set_price("openai", model, "0.15", "0.6", session=session)
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=run, records=[
                SimpleNamespace(role="tool_identifier", provider="openai", model=model, tokens_in=12, tokens_out=3,
                                ttft_ms=None, latency_ms=45_804.0, error="")])
            tester_chat.finish(run, session=session)
        try:
            page.goto("/usage")
            expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
            models = page.get_by_test_id("usage-by-model")
            row = models.get_by_role("row").filter(has_text=model)
            expect(row.get_by_role("cell")).to_have_text(["1", "15", "45.8 s", "EUR 0.0000036"])
            roles = page.get_by_test_id("usage-by-role")
            expect(roles.get_by_role("rowheader").get_by_text("Tool Identifier", exact=True)).to_be_visible()
            body = page.locator("main").inner_text()
            for raw in ("tool_identifier", "45,804 ms", "0.0000 ", "EUR 0.0000\n"):
                assert raw not in body, f"{raw!r} on the Usage page"

            # Nobody on Discord: the chart says so instead of an empty frame.
            expect(page.get_by_test_id("chart-users")).to_contain_text("No Discord user's message was answered")
            # A week has a mark for each day, not one tick for the one day with calls.
            ticks = page.get_by_test_id("chart-calls").locator(".recharts-xAxis-tick-labels text")
            expect(ticks.first).to_be_visible()
            assert ticks.count() >= 4, ticks.all_inner_texts()
            # The model's name fits beside its bar (cut with "…", whole in the table).
            svg = page.get_by_test_id("chart-models").locator("svg.recharts-surface").first
            expect(svg).to_be_visible()
            lefts = svg.evaluate(TICK_LEFT_JS)
            assert lefts and min(lefts) >= 0, f"the model's label is cut at the chart's left edge: {lefts}"
            # Tokens in and out in colours far apart.
            strokes = page.get_by_test_id("chart-tokens").evaluate(STROKES_JS)
            assert len(strokes) == 2, strokes
            distance = sum((a - b) ** 2 for a, b in zip(_rgb(strokes[0]), _rgb(strokes[1]), strict=True)) ** 0.5
            assert distance > 150, f"tokens in and out look alike: {strokes}"
            assert page.grobot_record.console_errors == [], page.grobot_record.console_errors
        finally:
            with session_scope() as session:
                costs.delete_price("openai", model, session=session)
