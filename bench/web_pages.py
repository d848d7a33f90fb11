"""How fast the web app's pages are in a real browser, against the prod-mode app.

    .venv/bin/python bench/web_pages.py [--rounds N]

Starts the real web app (``reflex run --env prod``, as ``tests/ui`` does) on a throwaway SQLite
database with one admin and one bot that has something on every tab, signs in with Debian's
Chromium, then measures, over N rounds:

- **page load**: ``page.goto`` of each global page and each bot tab until the page is ready (its
  heading shown, the session checked, no spinner left);
- **tab switch**: a click on a bot's tab until that tab is ready.

Prints p50 and p95 of each (targets: page load <= 400 ms, tab switch <= 500 ms), the slowest
pages, and the machine's load average (the browser, the app and this script share its cores: on
a busy machine the figures grow with the load). Needs Debian's Chromium: its headless shell, else /usr/bin/chromium (or GROBOT_CHROMIUM).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)

PAGE_TARGET_MS = 400.0
TAB_TARGET_MS = 500.0
GLOBAL_PAGES = (("/", "Bots"), ("/mcp", "MCP servers"), ("/usage", "Usage"), ("/users", "Users"),
                ("/settings", "Settings"))
BOT_TABS = ("chat", "logs", "settings", "files", "knowledge", "memory", "conversations", "council")  # the whole bar
BOT_NAME = "bench-bot"

# Ready: the heading is the page's, the session is checked, nothing is still loading.
READY_JS = """([heading, tab]) => {
    const h1 = document.querySelector('main h1');
    if (!h1 || h1.textContent.trim() !== heading) return false;
    const text = document.body.innerText;
    if (text.includes('Checking your session') || text.includes('Loading the bot')) return false;
    if (document.querySelector('main .rt-Spinner')) return false;
    if (tab && !document.querySelector(`a[data-tab="${tab}"][aria-current="page"]`)) return false;
    return true;
}"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def seed(data_dir: Path) -> tuple[int, str]:
    """The database: one admin (returned with its password's user name) and one bot with data."""
    from grobot.core import migrations
    from grobot.core.db import session_scope
    from grobot.core.models import BotStatus, LogEntry, Role
    from grobot.core.services import bots, council, discord_users, files, user_notes, users

    migrations.upgrade()
    password = users.generate_password()
    with session_scope() as session:
        users.create_user(session=session, username="bench-admin", password=password, role=Role.ADMIN.value)
        bot_id = bots.create_bot(session=session, name=BOT_NAME, personality="Be brief.").id or 0
        status = session.get(BotStatus, bot_id)
        status.state, status.discord_user_name, status.guild_count = "online", "bench", 2
        session.add(status)
        for i in range(50):
            session.add(LogEntry(bot_id=bot_id, level="INFO", logger="bot_worker.bot_process", message=f"line {i}"))
        files.write_file(session=session, bot_id=bot_id, path="docs/faq.md", data=b"# FAQ\n", content_type="text/markdown")
        for i in range(10):
            discord_users.set_directives(session=session, bot_id=bot_id, discord_user_id=str(1000 + i),
                                         directives="Be formal.", display_name=f"User {i}")
            user_notes.add_note(session=session, bot_id=bot_id, discord_user_id=str(1000 + i), note=f"Likes {i}",
                                reliability=0.8, source="archivist")
        for i in range(3):
            council.save_deliberation(bot_id, {
                "question": f"Question {i} to the council?", "synthesis": "Consensus.", "consensus": "Yes.",
                "advisors": [{"name": "Analyst", "provider": "ollama", "model": "llama3.2", "answer": "Yes."}],
                "confidence": 70}, session=session, asked_by="User 1")
    return bot_id, password


def wait_ready(page, heading: str, tab: str = "") -> None:
    page.wait_for_function(READY_JS, arg=[heading, tab], polling="raf", timeout=30_000)


def measure(page, bot_id: int, rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    loads: dict[str, list[float]] = {}
    switches: dict[str, list[float]] = {}
    targets = [(path, heading, "") for path, heading in GLOBAL_PAGES]
    targets += [(f"/bots/{bot_id}/{tab}", BOT_NAME, tab) for tab in BOT_TABS]
    for _ in range(rounds):
        for path, heading, tab in targets:
            start = time.perf_counter()
            page.goto(path)
            wait_ready(page, heading, tab)
            loads.setdefault(path, []).append((time.perf_counter() - start) * 1000)
        page.goto(f"/bots/{bot_id}/chat")
        wait_ready(page, BOT_NAME, "chat")
        for tab in (*BOT_TABS[1:], BOT_TABS[0]):
            link = page.locator(f'nav[aria-label="Bot sections"] a[data-tab="{tab}"]')
            start = time.perf_counter()
            link.click()
            wait_ready(page, BOT_NAME, tab)
            switches.setdefault(tab, []).append((time.perf_counter() - start) * 1000)
    return loads, switches


def report(title: str, samples: dict[str, list[float]], target: float) -> None:
    every = [value for values in samples.values() for value in values]
    p50, p95 = statistics.median(every), percentile(every, 0.95)
    verdict = "meets" if p95 <= target else "MISSES"
    print(f"{title}: p50 {p50:.0f} ms, p95 {p95:.0f} ms over {len(every)} ({verdict} the {target:.0f} ms target)")
    for name, values in sorted(samples.items(), key=lambda item: -statistics.median(item[1]))[:4]:
        print(f"    {name:<22} p50 {statistics.median(values):.0f} ms, max {max(values):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="grobot-bench-web-"))
    data_dir = tmp / "data"
    data_dir.mkdir()
    os.environ.update(GROBOT_DATA_DIR=str(data_dir), DATABASE_URL=f"sqlite:///{data_dir / 'grobot.db'}",
                      GROBOT_EMBEDDED_LLM="0")
    for var in ("CHROMA_URL", "OLLAMA_HOST", "GROBOT_SECRET_KEY"):
        os.environ.pop(var, None)
    bot_id, password = seed(data_dir)

    from playwright.sync_api import sync_playwright

    from tests.ui.webapp import CHROMIUM_ARGS, WebApp, chromium_path

    app = WebApp(env=dict(os.environ), log_path=tmp / "reflex.log", states_dir=tmp / "states")
    started = time.perf_counter()
    app.start()
    print(f"web app (prod) ready in {time.perf_counter() - started:.0f} s at {app.url}")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=app.url)
            page = context.new_page()
            page.goto("/login")
            page.get_by_label("Username").fill("bench-admin")
            page.get_by_label("Password").fill(password)
            page.get_by_role("button", name="Sign in").click()
            wait_ready(page, "Bots")
            measure(page, bot_id, 1)  # warm-up: first compiles of each route's chunks
            loads, switches = measure(page, bot_id, args.rounds)
            browser.close()
    finally:
        app.stop()
    load1, load5, _ = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load1:.1f} (1 min), {load5:.1f} (5 min)")
    report("page load", loads, PAGE_TARGET_MS)
    report("tab switch", switches, TAB_TARGET_MS)


if __name__ == "__main__":
    main()
