"""LLM errors: each message is one clear line a user can act on."""

from __future__ import annotations

from datetime import UTC

from grobot.core.errors import GroBotError


class LLMError(GroBotError):
    """An LLM call failed. ``retryable``: the same call may work when repeated."""

    retryable = False
    # The fallback model (same server) may help: the model itself failed, not the server or key.
    fallback_helps = False
    status: int | None = None  # the HTTP status the server answered, when it answered one

    def __init__(self, message: str, *, provider: str = "", url: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.url = url


class StreamStopped(Exception):
    """Raised by a call's text callback: the caller wants no more of this answer (moderation cut it).
    The call ends at once, as an answer that stopped there (its stream closed, its usage estimated)."""


class AuthError(LLMError):
    """401/403: the key is wrong or lacks rights. Never retried."""


class RateLimited(LLMError):
    """429: too many requests; ``retry_after`` seconds when the server said so."""

    retryable = True
    fallback_helps = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: str) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class LLMTimeout(LLMError):
    """No answer in time."""

    retryable = True
    fallback_helps = True


class ContextTooLong(LLMError):
    """The prompt does not fit the model's context window."""


class EmptyAnswer(LLMError):
    """The model answered nothing at all."""

    fallback_helps = True


class ServerUnavailable(LLMError):
    """The server cannot be reached (down, wrong URL)."""


class ModelNotFound(LLMError):
    """The server does not know the model."""

    fallback_helps = True


class ServerError(LLMError):
    """The server failed (5xx) or answered something unusable."""

    fallback_helps = True


class BadRequest(LLMError):
    """The server refused the request (4xx other than the above)."""


def one_line(text: object, limit: int | None = 300) -> str:
    """``text`` squeezed onto one line, cut at ``limit`` characters (None: whole)."""
    line = " ".join(str(text).split())
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


CONTEXT_MARKERS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeds the context",
    "reduce the length",
    "too long",
)


def looks_like_context_error(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in CONTEXT_MARKERS)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds, possibly fractional); None when absent or a date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from datetime import datetime
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())


def ended_early(provider: str, url: str) -> ServerError:
    """A streamed answer whose body stopped before the server said it was complete (a crash, a cut
    connection): what came is not the whole answer."""
    return ServerError(f"{provider} at {url} ended the answer early: the stream stopped before its end "
                       "(did the server crash or the connection break?)", provider=provider, url=url)
