"""The pieces of issue 17 that need no browser: one component for untrusted text everywhere,
the CSP's inline-script hashes, the session handoff and cookie parsing."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from pathlib import Path

from grobot.security_headers import content_security_policy, inline_script_hashes
from grobot.web_session import make_handoff, read_handoff, session_from_cookie_header

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]


def test_no_page_renders_markdown_or_html_but_through_safe_text() -> None:
    """``rx.markdown`` turns raw HTML on, ``rx.html`` is raw HTML: only safe_text.py may render markdown."""
    offenders = []
    for path in (ROOT / "grobot").rglob("*.py"):
        if path.name == "safe_text.py" or "core" in path.relative_to(ROOT).parts:
            continue
        text = path.read_text()
        for pattern in (r"rx\.markdown\b", r"rx\.html\(", r"dangerouslySetInnerHTML", r"rehype.?raw", r"use_raw"):
            offenders += [f"{path.relative_to(ROOT)}: {pattern}" for _ in re.finditer(pattern, text)]
    assert offenders == []


def test_safe_markdown_compiles_without_raw_html_or_math() -> None:
    from grobot.components.safe_text import safe_markdown

    markdown = safe_markdown("x").children[0]
    code = str(markdown.render()) + (markdown._get_custom_code() or "")
    imports = markdown._get_all_imports()
    assert not any("rehype-raw" in lib or "katex" in lib or "remark-math" in lib for lib in imports), imports
    assert "rehypePlugins:[]" in str(safe_markdown("x"))
    assert "https?" in code and "mailto" in code  # the link filter is in the page's code


def test_the_csp_allows_exactly_the_inline_scripts_of_the_build() -> None:
    html = '<script>one()</script><script src="/a.js"></script><script type="module">two()</script>'
    expected = {f"'sha256-{base64.b64encode(hashlib.sha256(b).digest()).decode()}'" for b in (b"one()", b"two()")}
    assert inline_script_hashes(html) == expected
    policy = content_security_policy(expected)
    assert "'unsafe-inline'" not in policy.split("style-src")[0]
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy


def test_a_handoff_is_short_lived_and_carries_only_a_valid_session(grobot_env) -> None:
    from grobot.core import security

    token = security.sign_session(7)
    assert read_handoff(make_handoff(token)) == token
    assert read_handoff(make_handoff(token, now=1)) is None  # expired
    assert read_handoff(make_handoff("not a session")) is None
    assert read_handoff(token) is None  # a session token is not a handoff
    assert read_handoff(security.encrypt('{"session": "x"}')) is None  # nor a secret's ciphertext


def test_the_session_cookie_is_read_from_the_cookie_header_only() -> None:
    assert session_from_cookie_header("a=1; grobot_session=tok-en; b=2") == "tok-en"
    assert session_from_cookie_header("") == ""
    assert session_from_cookie_header("grobot_sessionx=1") == ""
    assert session_from_cookie_header('bad"cookie; ;;=') == ""
