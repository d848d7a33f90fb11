"""Small grey and coloured text reads well (real browser, real web app): helper lines, labels of
pages and the Memory tab's "worker not running" callout reach WCAG AA's 4.5:1 contrast against
what is really behind them, in light and in dark mode.

The ratio is computed in the page: the text's computed colour and the backgrounds of its
ancestors (semi-transparent ones composed over the next), both read through a canvas so any CSS
colour syntax (``rgb()``, ``color(display-p3 …)``) comes out as sRGB.

Shares the running web app (and its database) with the other modules of ``tests/ui``.
"""

from __future__ import annotations

import logging

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.models import LogEntry
from tests.ui.auth import PAGE_TIMEOUT_MS
from tests.ui.chat import add_bot, unique
from tests.ui.screens import WIDE, sized_page

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

AA_NORMAL_TEXT = 4.5

# element -> {ratio, fg, bg, size, text}: the text colour against the composed background.
CONTRAST_JS = """el => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', {willReadFrequently: true});
    const rgba = css => {
        ctx.clearRect(0, 0, 1, 1);
        ctx.fillStyle = '#000';
        ctx.fillStyle = css;
        ctx.fillRect(0, 0, 1, 1);
        const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
        return {r, g, b, a: a / 255};
    };
    const over = (top, below) => ({r: top.r * top.a + below.r * (1 - top.a), g: top.g * top.a + below.g * (1 - top.a),
                                   b: top.b * top.a + below.b * (1 - top.a), a: 1});
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
        const colour = rgba(getComputedStyle(node).backgroundColor);
        if (colour.a > 0) layers.push(colour);
        if (colour.a >= 1) break;
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};  // the canvas behind a page without an opaque background
    for (const layer of layers.reverse()) bg = over(layer, bg);
    let opacity = 1;
    for (let node = el; node; node = node.parentElement) opacity *= parseFloat(getComputedStyle(node).opacity);
    const text = rgba(getComputedStyle(el).color);
    const fg = over({...text, a: text.a * opacity}, bg);
    const lum = c => [c.r, c.g, c.b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
                                      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    return {ratio: (hi + 0.05) / (lo + 0.05), bg_luminance: lum(bg), size: getComputedStyle(el).fontSize,
            fg: `${fg.r},${fg.g},${fg.b}`, bg: `${bg.r},${bg.g},${bg.b}`, text: el.textContent.slice(0, 60)};
}"""


def contrast(locator) -> dict:
    return locator.evaluate(CONTRAST_JS)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_helper_texts_reach_aa_contrast(browser, web_app, ui_admin, scheme: str) -> None:
    bot_id = add_bot(unique("Contrast"))
    with session_scope() as session:
        session.add(LogEntry(bot_id=bot_id, level="INFO", logger="bot_worker.bot_process", message="Connected"))
    measured: list[tuple[str, dict]] = []
    with sized_page(browser, web_app.url, WIDE, ui_admin, color_scheme=scheme) as page:
        page.goto(f"/bots/{bot_id}/files")
        target = page.get_by_test_id("upload-target")  # "Files go into …, up to … each."
        expect(target).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        measured.append(("files: upload target", contrast(target)))
        hint = page.get_by_text("They are uploaded at once and become readable by the bot's file tools.")
        measured.append(("files: drop zone hint", contrast(hint)))

        page.goto(f"/bots/{bot_id}/logs")
        pager = page.get_by_test_id("logs-page")
        expect(pager).to_have_text("1 entry", timeout=PAGE_TIMEOUT_MS)
        measured.append(("logs: pager", contrast(pager)))

        page.goto(f"/bots/{bot_id}/memory")  # no worker: the amber callout
        callout = page.get_by_test_id("memory-unavailable")
        expect(callout).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        for what, locator in (
            ("memory callout: first line", callout.locator("p").first),
            ("memory callout: second line", callout.get_by_text("The bot's memories are kept by the worker")),
            ("memory callout: command", callout.locator("code")),
            ("memory callout: Try again", callout.get_by_role("button", name="Try again")),
        ):
            measured.append((what, contrast(locator)))

    dark = scheme == "dark"
    assert all((m["bg_luminance"] < 0.2) == dark for _, m in measured), ("not the expected colour scheme", measured)
    low = [(what, round(m["ratio"], 2), m) for what, m in measured if m["ratio"] < AA_NORMAL_TEXT]
    assert low == [], f"below {AA_NORMAL_TEXT}:1 in {scheme} mode: {low}"
