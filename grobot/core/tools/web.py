"""The web as the built-in tools ``web_search`` and ``web_read`` see it: a search that needs no
key, and pages read as text, both cut to what a small model can read.

Search: without a SearXNG address, the ``ddgs`` metasearch library (DuckDuckGo, Wikipedia,
Brave, Mojeek... in its own order of preference; no key, no account); with one (the global
setting ``web_search_url``, or the bot's own), that SearXNG instance's JSON API
(``/search?format=json``, which the instance must allow in its ``search.formats``).

Pages: fetched with httpx (redirects followed here, each hop checked), at most
``PAGE_MAX_BYTES``; HTML is cleaned (scripts, menus, headers and footers go) and turned into
Markdown by ``markdownify`` on ``lxml``'s parse. A page may only be on the public web: an address
that is, or resolves to, a private, loopback or link-local one (the host's own services, a cloud
metadata endpoint) is refused, whoever asked for it.

Requests to search engines and pages go through ``GROBOT_WEB_PROXY`` (else ``HTTPS_PROXY``)
and trust ``GROBOT_WEB_CA_FILE`` when set. A search that fails (no network, a rate limit, a
timeout) raises :class:`WebUnavailable`: the model hears only :data:`SEARCH_UNAVAILABLE`, the
admins see why in the run's steps.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from grobot.core.errors import GroBotError, ValidationError

logger = logging.getLogger(__name__)

SEARCH_UNAVAILABLE = "web search is not available right now"
PAGE_UNAVAILABLE = "the page could not be read right now"
RESULTS = 4  # results a search hands the model, at most
RESULTS_BUDGET = 1200  # characters of the results, at most
SNIPPET_CHARS = 200  # characters of one result's extract
PAGE_BUDGET = 3000  # characters of a page's text, at most
PAGE_MAX_BYTES = 1_000_000  # the most of a page that is downloaded
TIMEOUT_SECONDS = 8.0
MAX_REDIRECTS = 5
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "text/markdown", "application/json", "text/csv")
_DROP = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "nav", "header",
         "footer", "aside", "form", "button", "select", "input", "dialog", "menu")
_BLANKS = re.compile(r"\n\s*\n+")


class WebUnavailable(GroBotError):
    """The web could not be reached as asked; the message (for the admins) says why."""


@dataclass(frozen=True)
class WebAccess:
    """How a bot's web tools reach the web: its SearXNG instance ("": the keyless metasearch),
    the proxy and the authorities to trust (the process's settings)."""

    searxng_url: str = ""
    proxy: str = ""
    ca_file: str = ""
    timeout: float = TIMEOUT_SECONDS

    @classmethod
    def for_bot(cls, searxng_url: str = "") -> WebAccess:
        from grobot.core.settings import get_settings

        settings = get_settings()
        return cls(searxng_url=searxng_url.strip(), proxy=settings.web_proxy, ca_file=settings.web_ca_file)

    @property
    def engine(self) -> str:
        """Where searches go, in words (the steps of a run say it)."""
        return f"SearXNG at {self.searxng_url}" if self.searxng_url else "DuckDuckGo and other engines (ddgs)"


@dataclass(frozen=True)
class WebHit:
    title: str
    url: str
    snippet: str


def check_searxng_url(value: str) -> str:
    """A SearXNG address as stored ("" for none), or :class:`ValidationError`."""
    url = (value or "").strip().rstrip("/")
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("the SearXNG address must start with http:// or https://, e.g. https://searx.example.org")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValidationError("the SearXNG address is the instance's address alone (no query, no password in it)")
    if len(url) > 500:
        raise ValidationError("the SearXNG address is at most 500 characters")
    return url


# --------------------------------------------------------------------------- search


async def search(query: str, access: WebAccess, *, limit: int = RESULTS) -> list[WebHit]:
    """The first ``limit`` results for ``query``; :class:`WebUnavailable` when the search fails."""
    query = " ".join((query or "").split())
    if not query:
        raise ValidationError("the search needs words to look for")
    if access.searxng_url:
        hits = await _searxng(query, access, limit)
    else:
        hits = await asyncio.to_thread(_ddgs, query, access, limit)
    return [h for h in hits if h.url.startswith(("http://", "https://"))][:limit]


def _ddgs(query: str, access: WebAccess, limit: int) -> list[WebHit]:
    from ddgs import DDGS
    from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

    try:
        found = DDGS(proxy=access.proxy or None, timeout=max(1, round(access.timeout)),
                     verify=access.ca_file or True).text(query, max_results=limit)
    except RatelimitException:
        raise WebUnavailable("the search engines refused: too many searches (rate limit)") from None
    except TimeoutException:
        raise WebUnavailable(f"the search engines did not answer within {access.timeout:g} s") from None
    except DDGSException as exc:
        text = str(exc)
        if "No results found" in text:
            return []
        raise WebUnavailable(f"the search engines could not be reached ({_short(text)})") from None
    return [WebHit(title=str(r.get("title") or ""), url=str(r.get("href") or ""), snippet=str(r.get("body") or ""))
            for r in found]


async def _searxng(query: str, access: WebAccess, limit: int) -> list[WebHit]:
    import httpx

    where = access.searxng_url
    try:
        async with httpx.AsyncClient(timeout=access.timeout, follow_redirects=True) as client:
            response = await client.get(f"{where}/search", params={"q": query, "format": "json"},
                                        headers={"Accept": "application/json"})
    except httpx.TimeoutException:
        raise WebUnavailable(f"SearXNG at {where} did not answer within {access.timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise WebUnavailable(f"SearXNG at {where} could not be reached ({_short(str(exc)) or type(exc).__name__})") from None
    if response.status_code == 429:
        raise WebUnavailable(f"SearXNG at {where} refused: too many searches (rate limit)")
    if response.status_code == 403:
        raise WebUnavailable(f"SearXNG at {where} refused the JSON format: add 'json' to search.formats in its settings.yml")
    if response.status_code != 200:
        raise WebUnavailable(f"SearXNG at {where} answered HTTP {response.status_code}")
    try:
        results = response.json().get("results") or []
    except (ValueError, AttributeError):
        raise WebUnavailable(f"SearXNG at {where} did not answer in JSON: is 'json' in its search.formats?") from None
    return [WebHit(title=str(r.get("title") or ""), url=str(r.get("url") or ""), snippet=str(r.get("content") or ""))
            for r in results if isinstance(r, dict)][: limit * 2]


# At least this share of a query's words must be the user's for the query to be searched as written.
GROUNDED_SHARE = 0.5


def grounded_query(query: str, said: str) -> str:
    """What to search for: ``query`` when it is the user's (at least half of its words are in
    ``said``, the message being answered), else the message itself. A small model asked for a
    query may write one of its own (a date, a word of its prompt); the user's words never mislead a
    search engine."""
    from grobot.core.words import content_words

    query = " ".join((query or "").split())
    message = " ".join((said or "").split())[:200]
    words = content_words(query)
    if message and (not words or len(words & content_words(message)) < GROUNDED_SHARE * len(words)):
        return message
    return query


def results_text(query: str, hits: list[WebHit], *, budget: int = RESULTS_BUDGET) -> str:
    """The results as the model reads them: numbered, title, address and extract, within ``budget``."""
    if not hits:
        return f'No web results for "{query}".'
    lines = [f'Web results for "{query}":']
    used = len(lines[0])
    for number, hit in enumerate(hits, 1):
        snippet = _cut(" ".join(hit.snippet.split()), SNIPPET_CHARS)
        entry = f"{number}. {_cut(' '.join(hit.title.split()), 120) or hit.url}\n   {hit.url}" + (f"\n   {snippet}" if snippet else "")
        if used + len(entry) + 1 > budget:
            break
        lines.append(entry)
        used += len(entry) + 1
    return "\n".join(lines)


# --------------------------------------------------------------------------- pages


@dataclass(frozen=True)
class PageText:
    url: str  # where it was read (after redirects)
    title: str
    text: str
    cut: bool  # the text was longer than the budget


async def read_page(url: str, access: WebAccess, *, budget: int = PAGE_BUDGET) -> PageText:
    """The text of the page at ``url`` (Markdown for HTML), at most ``budget`` characters.

    :class:`ValidationError` for an address that is not on the public web, :class:`WebUnavailable`
    when the page cannot be fetched or is not text."""
    import httpx

    url = (url or "").strip()
    context: ssl.SSLContext | bool = ssl.create_default_context(cafile=access.ca_file) if access.ca_file else True
    try:
        async with httpx.AsyncClient(proxy=access.proxy or None, verify=context, trust_env=False,
                                     timeout=access.timeout, follow_redirects=False,
                                     headers={"User-Agent": "Mozilla/5.0 (compatible; GroBot web_read)",
                                              "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"}) as client:
            for _ in range(MAX_REDIRECTS + 1):
                await _check_public(url, proxied=bool(access.proxy))
                async with client.stream("GET", url) as response:
                    if response.is_redirect and response.headers.get("location"):
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code != 200:
                        raise WebUnavailable(f"{url} answered HTTP {response.status_code}")
                    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if kind and kind not in TEXT_TYPES:
                        raise WebUnavailable(f"{url} is not a text page ({kind})")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= PAGE_MAX_BYTES:
                            break
                    encoding = response.encoding or "utf-8"
                    break
            else:
                raise WebUnavailable(f"{url} redirects more than {MAX_REDIRECTS} times")
    except httpx.TimeoutException:
        raise WebUnavailable(f"{url} did not answer within {access.timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise WebUnavailable(f"{url} could not be reached ({_short(str(exc)) or type(exc).__name__})") from None
    raw = bytes(body[:PAGE_MAX_BYTES]).decode(encoding, errors="replace")
    if kind in ("", "text/html", "application/xhtml+xml"):
        title, text = await asyncio.to_thread(html_text, raw)
    else:
        title, text = "", raw
    text = _BLANKS.sub("\n\n", text).strip()
    return PageText(url=url, title=title, text=_cut(text, budget), cut=len(text) > budget)


def html_text(page: str) -> tuple[str, str]:
    """``(title, Markdown of the main content)`` of an HTML page: scripts, menus, headers, footers
    and forms dropped; the ``main`` or ``article`` element when there is one, else the body."""
    import markdownify
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "lxml")
    title = " ".join((soup.title.get_text() if soup.title else "").split())
    for tag in soup(_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.find(None, {"role": "main"}) or soup.body or soup
    converter = markdownify.MarkdownConverter(heading_style=markdownify.ATX, strip=["img"])
    return title, converter.convert_soup(root)


def page_text(page: PageText) -> str:
    """A page as the model reads it."""
    head = f"{page.title}\n{page.url}" if page.title else page.url
    tail = f"\n[... cut at {len(page.text)} characters]" if page.cut else ""
    return f"{head}\n\n{page.text}{tail}" if page.text else f"{head}\n\n(the page has no text)"


async def _check_public(url: str, *, proxied: bool) -> None:
    """:class:`ValidationError` unless ``url`` is an http(s) address on the public web."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(f"{_cut(url, 200)!r} is not a web address (http:// or https://)")
    if parts.username or parts.password:
        raise ValidationError("a web address with a user name or password in it is not read")
    host = parts.hostname.rstrip(".").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".home.arpa")):
        raise ValidationError(f"{host} is not on the public web")
    try:
        addresses = [ipaddress.ip_address(host)]
    except ValueError:
        if proxied:  # the proxy resolves the name (and answers for what it reaches)
            return
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
        except OSError:
            raise WebUnavailable(f"{host} could not be found (DNS)") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if any(not address.is_global for address in addresses):
        raise ValidationError(f"{host} is not on the public web")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def _short(text: str, limit: int = 160) -> str:
    return _cut(" ".join(str(text).split()), limit)

