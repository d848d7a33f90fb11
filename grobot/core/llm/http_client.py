"""The HTTP client of the LLM providers: one pooled aiohttp session per LLM server.

aiohttp, not httpx, because its request path costs a quarter of the CPU: a streamed chat
call (40-message history, three chunks) takes 0.5-0.8 ms of client CPU, against 2.3-3.3 ms
through the official ``ollama`` client over httpx (``bench/bot_footprint.py`` prints both), and
every message pays it for each call of its chain. discord.py depends on aiohttp, so bot
processes load nothing more for it.

A client belongs to the event loop that first uses it (the provider registry keeps one per
loop). Network failures and HTTP errors come out as :mod:`grobot.core.llm.errors`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from grobot.core.llm import errors
from grobot.core.llm.http_errors import from_status, from_transport

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT_SECONDS = 10.0
LIST_TIMEOUT_SECONDS = 15.0


def dumps(value: Any) -> bytes:
    """A request body as JSON (orjson: 0.004 ms for a 40-message prompt, json 0.072 ms; bench/bot_footprint.py)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # what orjson refuses (keys that are not strings, huge integers)
        return json.dumps(value).encode()


loads = orjson.loads  # JSON of a streamed answer line; raises a ValueError


def env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy the environment sets for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``).

    Looked up once per client: aiohttp's ``trust_env`` would look it up, and ``.netrc``, in a
    worker thread on every request.
    """
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except (LookupError, ValueError):
        return None, None
    return str(proxy), auth


class LLMHttpClient:
    """JSON requests to one LLM server (``headers`` carry its authentication), through the
    environment's proxy when it sets one for that server."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float, *, provider: str,
                 keepalive: bool = True) -> None:
        self.base_url = base_url.rstrip("/")
        # llama.cpp's server closes idle connections without notice: a reused one fails while
        # the request is written, so its clients open one per request (cheap on loopback).
        self.keepalive = keepalive
        self.provider = provider
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json", **headers}
        self._session: aiohttp.ClientSession | None = None
        self._proxy, self._proxy_auth = env_proxy(self.base_url)

    def _timeout(self, seconds: float) -> aiohttp.ClientTimeout:
        # ``seconds`` bounds each wait for data (an LLM may think long, but never in silence).
        return aiohttp.ClientTimeout(total=None, sock_connect=min(CONNECT_TIMEOUT_SECONDS, seconds), sock_read=seconds)

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = (aiohttp.TCPConnector(limit=50, keepalive_timeout=60) if self.keepalive
                         else aiohttp.TCPConnector(limit=50, force_close=True))
            self._session = aiohttp.ClientSession(headers=self._headers, connector=connector,
                                                  timeout=self._timeout(self.timeout), json_serialize_bytes=dumps)
        return self._session

    @asynccontextmanager
    async def stream(self, path: str, body: Any, *, timeout: float | None = None, model: str = "",
                     params: dict[str, str] | None = None, check: bool = True) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST ``body`` as JSON to ``path`` and hold the (streamed) answer open.

        An HTTP error status raises the matching LLMError, unless ``check`` is False (the
        caller reads the error body itself). Network failures raise, also while reading.
        """
        async with self._request("POST", path, json=body, params=params, timeout=timeout, model=model,
                                 check=check) as response:
            yield response

    async def get_json(self, path: str, *, timeout: float = LIST_TIMEOUT_SECONDS) -> Any:
        """GET ``path`` and parse the JSON answer."""
        async with self._request("GET", path, timeout=timeout) as response:
            try:
                return loads(await response.read())
            except ValueError:
                raise errors.ServerError(f"{self.provider} at {self.base_url} answered something that is not JSON",
                                         provider=self.provider, url=self.base_url) from None

    @asynccontextmanager
    async def _request(self, method: str, path: str, *, timeout: float | None, model: str = "", check: bool = True,
                       **kwargs: Any) -> AsyncIterator[aiohttp.ClientResponse]:
        seconds = timeout or self.timeout
        try:
            async with self._session_now().request(method, self.base_url + path, timeout=self._timeout(seconds),
                                                   proxy=self._proxy, proxy_auth=self._proxy_auth,
                                                   **kwargs) as response:
                if check:
                    await raise_for_status(response, provider=self.provider, url=self.base_url, model=model)
                yield response
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise from_transport(exc, provider=self.provider, url=self.base_url, timeout=seconds) from None

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def raise_for_status(response: aiohttp.ClientResponse, *, provider: str, url: str, model: str) -> None:
    """Raise the matching LLMError for an HTTP error status, or for a web page where the API should answer."""
    if response.status >= 400:
        body = (await response.read()).decode(errors="replace")
        raise from_status(response.status, body, response.headers, provider=provider, url=url, model=model)
    if "html" in response.content_type:  # a web app's catch-all page: the base URL is not the API's
        raise errors.BadRequest(f"{provider} at {url} returned an HTML page (HTTP {response.status}), not an answer "
                                "of its API: is the base URL right?", provider=provider, url=url)


async def iter_lines(response: aiohttp.ClientResponse) -> AsyncIterator[str]:
    """The lines of a streamed body, without their line ends (no length limit on a line)."""
    pending = b""
    async for chunk in response.content.iter_any():
        pending += chunk
        if b"\n" not in chunk:
            continue
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r").decode(errors="replace")
    if pending:
        yield pending.rstrip(b"\r").decode(errors="replace")

