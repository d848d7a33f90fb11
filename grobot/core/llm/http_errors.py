"""Turning HTTP failures of an LLM server into :mod:`grobot.core.llm.errors` exceptions."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
from typing import Any

import aiohttp

from grobot.core.llm import errors


def error_text(body: str) -> str:
    """The error message inside a JSON error body (OpenAI, Anthropic, Gemini, Ollama shapes)."""
    try:
        data: Any = json.loads(body)
    except ValueError:
        return errors.one_line(body, 200) or "no details"
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return errors.one_line(str(err.get("message") or err.get("type") or err), 200)
        return errors.one_line(str(err), 200)
    return errors.one_line(str(data), 200)


def from_status(status: int, body: str, headers: Any, *, provider: str, url: str, model: str) -> errors.LLMError:
    """The error for an HTTP ``status`` answer of an LLM server (its ``status`` set)."""
    error = _status_error(status, body, headers, provider=provider, url=url, model=model)
    error.status = status
    return error


def _status_error(status: int, body: str, headers: Any, *, provider: str, url: str, model: str) -> errors.LLMError:
    detail = error_text(body)
    kw = {"provider": provider, "url": url}
    if status in (401, 403):
        return errors.AuthError(f"API key rejected by {provider} at {url} (HTTP {status}: {detail})", **kw)
    if status == 429:
        retry_after = errors.parse_retry_after(headers.get("retry-after") if headers is not None else None)
        return errors.RateLimited(f"{provider} at {url} is rate limiting requests (HTTP 429: {detail})", retry_after=retry_after, **kw)
    if errors.looks_like_context_error(detail) and status in (400, 413, 422, 500):
        return errors.ContextTooLong(f"the prompt is too long for model {model!r} ({detail})", **kw)
    if status == 404:
        return errors.ModelNotFound(f"model {model!r} not found at {url} ({detail})", **kw)
    if status == 408 or status == 504:
        return errors.LLMTimeout(f"{provider} at {url} timed out (HTTP {status})", **kw)
    if status >= 500:
        return errors.ServerError(f"{provider} at {url} failed (HTTP {status}: {detail})", **kw)
    return errors.BadRequest(f"{provider} at {url} refused the request (HTTP {status}: {detail})", **kw)


def from_transport(exc: Exception, *, provider: str, url: str, timeout: float) -> errors.LLMError:
    """The error for a network failure talking to an LLM server (aiohttp's exceptions)."""
    kw = {"provider": provider, "url": url}
    if isinstance(exc, (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)):
        return errors.ServerUnavailable(f"cannot reach the {provider} server at {url} (is it running?)", **kw)
    if isinstance(exc, asyncio.TimeoutError):
        return errors.LLMTimeout(f"{provider} at {url} did not answer within {timeout:g} s", **kw)
    if isinstance(exc, aiohttp.ClientPayloadError):  # the body stopped short of its announced end
        return errors.ServerError(f"{provider} at {url} ended the answer early: the connection broke in the middle "
                                  "of it (did the server stop?)", **kw)
    if isinstance(exc, aiohttp.InvalidURL):  # "not a url": nothing was sent
        return errors.ServerUnavailable(f"the base URL of {provider} is not a web address ({url!r}): give one that "
                                        "starts with http:// or https://", **kw)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return errors.ServerError(f"{provider} at {url} closed the connection without answering (did the server "
                                  "stop?)", **kw)
    reason = transport_reason(exc) or f"{type(exc).__name__}: {errors.one_line(str(exc), 120)}"
    return errors.ServerError(f"{provider} at {url}: connection failed ({reason})", **kw)


def transport_reason(exc: BaseException) -> str:
    """Why a connection failed, in plain words ("connection refused", "the host name is not known"), from
    the OS error under ``exc`` (aiohttp's and httpx's errors wrap it); "" when there is none."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"its TLS certificate is not accepted ({current.verify_message})"
        if isinstance(current, ssl.SSLError):
            return "the TLS handshake failed"
        if isinstance(current, socket.gaierror):
            return "the host name is not known"
        if isinstance(current, OSError) and current.errno and current.errno > 0:
            return os.strerror(current.errno).lower()
        if isinstance(current, TimeoutError):
            return "timed out"
        current = current.__cause__ or current.__context__
    return ""
