"""Security headers on every response of the real web app, enforced by a real browser, and no
secret in any page, WebSocket frame, log line or ``--json`` output while an admin visits every
page (issue 17)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import urllib.request
import uuid

import pytest
from playwright.sync_api import expect

from grobot.core.db import session_scope
from grobot.core.services import llm_settings, mcp_servers
from tests.helpers import make_token, wait_for
from tests.ui.auth import PAGE_TIMEOUT_MS, login_url_pattern
from tests.ui.chat import add_bot, unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ADMIN_PAGES = {"/": "Bots", "/mcp": "MCP servers", "/usage": "Usage", "/users": "Users", "/settings": "Settings"}
BOT_TABS = ("chat", "logs", "settings", "files", "knowledge", "memory", "council")


def fetch(url: str) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}


def directives(policy: str) -> dict[str, list[str]]:
    parts = (d.strip().split() for d in policy.split(";") if d.strip())
    return {p[0]: p[1:] for p in parts}


def test_every_response_carries_the_security_headers(web_app) -> None:
    bot_id = add_bot(unique("Headed"))
    with urllib.request.urlopen(f"{web_app.url}/", timeout=10) as response:
        asset = re.search(r'src="(/assets/[^"]+\.js)"|href="(/assets/[^"]+\.js)"', response.read().decode()).group(0)
    asset_path = asset.split('"')[1]
    paths = ["/", "/login", *ADMIN_PAGES, *(f"/bots/{bot_id}/{tab}" for tab in BOT_TABS), "/no-such-page",
             "/ping", asset_path]
    for path in paths:
        status, headers = fetch(web_app.url + path)
        assert status in (200, 404), (path, status)
        assert headers.get("x-frame-options") == "DENY", path
        assert headers.get("x-content-type-options") == "nosniff", path
        assert headers.get("referrer-policy") == "no-referrer", path
        policy = directives(headers.get("content-security-policy", ""))
        assert policy.get("frame-ancestors") == ["'none'"], (path, policy)
        assert policy.get("frame-src") == ["'none'"] and policy.get("object-src") == ["'none'"], path
        assert policy.get("connect-src") == ["'self'"] and policy.get("img-src") == ["'self'", "data:", "blob:"]
        scripts = policy.get("script-src", [])
        assert scripts[0] == "'self'" and "'unsafe-inline'" not in scripts, scripts
        assert all(s in ("'self'", "'unsafe-eval'") or s.startswith("'sha256-") for s in scripts), scripts


def test_the_browser_enforces_the_policy_and_the_app_still_works(admin_page, attacker, ui_admin) -> None:
    """Every page works under the policy (no violation); injected markup could do nothing anyway."""
    page = admin_page
    log = page.grobot_log
    bot_id = add_bot(unique("Policed"))
    for path, heading in ADMIN_PAGES.items():
        page.goto(path)
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        assert log.csp_reports() == [], path
    for tab in BOT_TABS:
        page.goto(f"/bots/{bot_id}/{tab}")
        expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        assert log.csp_reports() == [], tab

    # Markup that got into the page by any other way: no inline script, handler or foreign load runs.
    page.evaluate(f"""() => {{
        const s = document.createElement('script'); s.textContent = 'window.__pwned_inline = 1';
        document.body.appendChild(s);
        const d = document.createElement('div');
        d.innerHTML = '<img src="{attacker.origin}/csp-img" onerror="window.__pwned_onerror = 1">'
            + '<iframe src="{attacker.origin}/csp-frame"></iframe>';
        document.body.appendChild(d);
        const f = document.createElement('script'); f.src = '{attacker.origin}/csp.js'; document.body.appendChild(f);
    }}""")
    fragments = ("Executing inline script violates", "Executing inline event handler violates",
                 f"Loading the script '{attacker.origin}/csp.js' violates",
                 f"Loading the image '{attacker.origin}/csp-img' violates")
    wait_for(lambda: all(f in "\n".join(log.csp_reports()) for f in fragments), timeout=10,
             message=lambda: f"the CSP reports of {fragments}: {log.csp_reports()}")
    assert page.evaluate("() => Object.keys(window).filter((k) => k.startsWith('__pwned'))") == []
    assert attacker.hits == []  # the frame was not loaded either (frame-src 'none')

    # The app cannot be framed by another site.
    framer = page.context.new_page()
    framer.set_content(f'<iframe id="app" src="{page.url}" width="600" height="400"></iframe>')
    frame = framer.frame_locator("#app")
    expect(frame.get_by_role("heading", name="Bots")).to_have_count(0)
    wait_for(lambda: len(framer.frames) == 2 and framer.frames[1].url != "", timeout=10, message="the frame")
    assert framer.frames[1].url.startswith("chrome-error://"), framer.frames[1].url
    framer.close()

    # Signing out (Reflex runs it as a script) still works under the policy.
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(login_url_pattern(), timeout=PAGE_TIMEOUT_MS)
    assert page.evaluate("() => window.localStorage.getItem('grobot_session')") is None
    assert [c for c in page.context.cookies() if c["name"] == "grobot_session" and c["value"]] == []


def test_no_secret_reaches_a_page_a_frame_a_log_or_json_output(admin_page, web_app, ui_env) -> None:
    """An admin visits every page of a fleet full of secrets: none is ever sent or written."""
    from grobot.cli.main import main

    page = admin_page
    discord_token = make_token(556677889900112233)
    api_key = "sk-test-" + uuid.uuid4().hex
    env_secret = "env-secret-" + uuid.uuid4().hex
    header_secret = "hdr-secret-" + uuid.uuid4().hex
    bot_id = add_bot(unique("Secretive"), token=discord_token)
    mcp_local, mcp_remote = unique("local"), unique("remote")
    with session_scope() as session:
        llm_settings.set_llm(session=session, category="output", bot_id=bot_id, provider="openai",
                             base_url="http://127.0.0.1:9/v1", model="gpt-test", api_key=api_key)
        llm_settings.set_llm(session=session, category="decision", bot_id=None, provider="openai",
                             base_url="http://127.0.0.1:9/v1", model="gpt-test", api_key=api_key)
        mcp_servers.create_server(session=session, name=mcp_local, command="python", args=["-m", "x"],
                                  env={"API_TOKEN": env_secret})
        mcp_servers.create_server(session=session, name=mcp_remote, transport="streamable_http", url="http://127.0.0.1:9/mcp",
                                  headers={"Authorization": f"Bearer {header_secret}"})
    secrets = (discord_token, api_key, env_secret, header_secret)

    seen: list[str] = []
    for path, heading in ADMIN_PAGES.items():
        page.goto(path)
        expect(page.get_by_role("heading", name=heading, exact=True)).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        seen.append(page.content())
    for tab in BOT_TABS:
        page.goto(f"/bots/{bot_id}/{tab}")
        expect(page.get_by_role("navigation", name="Bot sections")).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        seen.append(page.content())
    page.goto(f"/bots/{bot_id}/settings")
    expect(page.get_by_test_id("token-state")).to_have_text("set", timeout=PAGE_TIMEOUT_MS)
    expect(page.locator(f'[data-server="{mcp_local}"]')).to_be_visible(timeout=PAGE_TIMEOUT_MS)  # fully loaded
    seen.append(page.content())

    outputs = []
    for argv in (["bot", "list", "--json"], ["bot", "show", str(bot_id), "--json"], ["mcp", "list", "--json"],
                 ["mcp", "show", mcp_local, "--json"], ["mcp", "show", mcp_remote, "--json"],
                 ["llm", "show", "--json"], ["llm", "show", "--bot", str(bot_id), "--json"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(argv)
        assert code == 0, argv
        json.loads(out.getvalue())  # really JSON
        outputs.append(out.getvalue())

    log = page.grobot_log
    assert len(log.frames) > 20  # the pages did talk to the server
    web_log = web_app.log_path.read_text(errors="replace")
    for secret in secrets:
        assert not any(secret in html for html in seen), "a secret in a page"
        assert not any(secret in frame for frame in log.frames), "a secret in a WebSocket frame"
        assert secret not in web_log, "a secret in the web app's log"
        assert not any(secret in text for text in outputs), "a secret in --json output"
