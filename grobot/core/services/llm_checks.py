"""Checking LLM settings before they are used: a connection check of what the admin typed, and the key
check that comes before an API key is saved.

The check is one cheap call: the server's model list, or (for a server without one) a one-token
answer. A rejected key (HTTP 401/403) reads "API key rejected by <provider>"; a server that cannot
be reached is said so, with another provider already configured that the admin could use instead.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from sqlmodel import Session, select

from grobot.core.errors import GroBotError, ValidationError
from grobot.core.llm import alternatives, embedded, errors, providers
from grobot.core.llm.base import ChatRequest
from grobot.core.llm.http_errors import transport_reason
from grobot.core.models import LLMSetting
from grobot.core.settings import get_settings
from grobot.core.wording import counted

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 10.0
OK, REJECTED, UNREACHABLE, FAILED = "ok", "rejected", "unreachable", "failed"


@dataclass(frozen=True)
class CheckResult:
    """What one check found: ``status`` is ok, rejected, unreachable or failed."""

    status: str
    message: str
    models: tuple[str, ...] = ()
    # Why it failed, in plain words and without the server ("connection refused", "401: the API key was
    # refused"); "" when it did not fail, or nothing more is known than the message says.
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK


class KeyRejected(ValidationError):
    """The provider refused the API key: it is not saved."""


class KeyNotChecked(GroBotError):
    """The API key could not be checked (the provider cannot be reached): saved only when asked to anyway."""


def provider_name(provider: str) -> str:
    """The provider as people name it ("OpenAI", "Mistral", "Ollama")."""
    found = providers.entry(provider)
    if found is None:
        return provider
    return found.title.split(" (")[0].split(" or ")[0]


def resolved_url(provider: str, base_url: str) -> str:
    """The URL a setting talks to: its own, else the provider's default (``OLLAMA_HOST`` for Ollama)."""
    url = base_url.strip().rstrip("/")
    if url:
        return url
    if provider.strip().lower() == "ollama":
        return get_settings().ollama_host
    found = providers.entry(provider)
    return found.base_url if found is not None else ""


async def check_connection(*, provider: str, base_url: str = "", api_key: str | None = None, model: str = "",
                           timeout: float = CHECK_TIMEOUT_SECONDS) -> CheckResult:
    """One cheap call to the server of these settings (as typed, nothing read from the database)."""
    from grobot.core.llm.registry import PROVIDER_CLASSES

    provider = provider.strip().lower()
    name = provider_name(provider)
    if provider == embedded.PROVIDER:
        models = tuple(embedded.available_models())
        return CheckResult(OK, f"{counted(len(models), 'GGUF file')} on this machine", models)
    cls = PROVIDER_CLASSES.get(provider)
    if cls is None:
        return CheckResult(FAILED, f"unknown provider {provider!r}")
    url = resolved_url(provider, base_url)
    client = cls(url, api_key or None, timeout=timeout)
    try:
        models = await asyncio.wait_for(_probe(client, model or _default_model(provider)), timeout)
    except errors.AuthError as exc:
        return CheckResult(REJECTED, f"API key rejected by {name} at {url}", reason=_refusal(exc, api_key))
    except (TimeoutError, errors.ServerUnavailable, errors.LLMTimeout) as exc:
        return CheckResult(UNREACHABLE, f"{name} at {url} cannot be reached", reason=_unreachable(exc, timeout))
    except errors.LLMError as exc:
        detail = errors.one_line(str(exc), 200)
        return CheckResult(FAILED, f"{name} at {url} answered with an error: {detail}", reason=detail)
    except Exception as exc:  # a server answering something unexpected
        logger.warning("Checking %s at %s failed: %s", provider, url, type(exc).__name__)
        reason = transport_reason(exc) or errors.one_line(str(exc), 200) or type(exc).__name__
        return CheckResult(FAILED, f"{name} at {url} could not be checked: {reason}", reason=reason)
    finally:
        try:
            await client.aclose()
        except Exception:  # closing is best effort
            logger.debug("Closing the check client failed", exc_info=True)
    count = f"{counted(len(models), 'model')} available" if models else "it answered"
    return CheckResult(OK, f"Connected to {name} at {url}: {count}", tuple(models))


def _refusal(exc: errors.LLMError, api_key: str | None) -> str:
    """Why a server refused the check: "401: the API key was refused" (never what it sent back, which
    may quote the key)."""
    what = "the API key was refused" if api_key else "an API key is needed and none is set"
    return f"{exc.status}: {what}" if exc.status else what


def _unreachable(exc: Exception, timeout: float) -> str:
    """Why a server could not be reached: "connection refused", "no answer within 10 s"."""
    status = getattr(exc, "status", None)
    if status:
        return f"{status}: the server timed out"
    if isinstance(exc, (TimeoutError, errors.LLMTimeout)):
        return f"no answer within {timeout:g} s"
    return transport_reason(exc) or (errors.one_line(str(exc), 200) if isinstance(exc, errors.ServerUnavailable) else "")


def _default_model(provider: str) -> str:
    found = providers.entry(provider)
    return found.default_model if found is not None else ""


async def _probe(client, model: str) -> list[str]:
    """The model list; a server without one is asked for a one-token answer instead."""
    try:
        return await client.list_models()
    except (errors.ModelNotFound, errors.BadRequest):
        if not model:
            raise
    request = ChatRequest(model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0.0)
    async for _chunk in client.stream(request):
        pass
    return []


async def check_key(*, provider: str, base_url: str, api_key: str, model: str = "",
                    timeout: float = CHECK_TIMEOUT_SECONDS) -> CheckResult:
    """The check made before an API key is saved: raises :class:`KeyRejected` (never save it) or
    :class:`KeyNotChecked` (save only when the admin says so); returns the result when the key works."""
    result = await check_connection(provider=provider, base_url=base_url, api_key=api_key, model=model, timeout=timeout)
    if result.status == REJECTED:
        raise KeyRejected(f"{result.message}; the key was not saved")
    if not result.ok:
        raise KeyNotChecked(f"{result.message}, so the API key could not be checked")
    return result


def suggestion(*, session: Session, category: str, provider: str, base_url: str, bot_id: int | None = None) -> str:
    """Another provider configured for the bot or globally that could serve ``category`` ("" when none);
    the setting of ``category`` being changed (the bot's, or the global one) is not offered."""
    rows = session.exec(select(LLMSetting).where(
        (LLMSetting.bot_id.is_(None)) | (LLMSetting.bot_id == bot_id))).all()  # type: ignore[union-attr]
    ordered = sorted(rows, key=lambda r: (r.bot_id is None, r.category != category, r.category))
    candidates = [
        alternatives.Candidate(provider=row.provider, base_url=resolved_url(row.provider, row.base_url),
                               model=row.model or _default_model(row.provider),
                               where=(f"this bot's {row.category} model" if row.bot_id is not None
                                      else f"the global {row.category} default"))
        for row in ordered
        if row.provider != embedded.PROVIDER and not (row.category == category and row.bot_id == bot_id)
    ]  # the setting being changed is no alternative to itself
    return alternatives.suggestion(category, provider, resolved_url(provider, base_url), candidates)


def key_for_check(*, session: Session, category: str, provider: str, base_url: str,
                  bot_id: int | None = None) -> str | None:
    """The stored API key a check of typed settings uses when no key is typed: the category's own,
    when the typed settings talk to the same provider and server."""
    from grobot.core.services.llm_settings import effective_llm

    llm = effective_llm(session=session, category=category, bot_id=bot_id)
    if llm.provider != provider.strip().lower():
        return None
    if base_url.strip() and resolved_url(provider, base_url) != llm.base_url.rstrip("/"):
        return None
    return llm.api_key
