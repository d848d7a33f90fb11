"""The web app's LLM checks, shared by the Settings page and a bot's Settings tab: "Check connection"
of what is typed in a form, and the key check before a typed API key is saved.

``read(fn)`` runs ``fn(session)`` with the page's own access check (admin, and the bot when there is
one); the API key only passes through these functions, never into a state var.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from sqlmodel import Session

from grobot.core.llm import embedded
from grobot.core.services import llm_checks

T = TypeVar("T")
Reader = Callable[[Callable[[Session], T]], Awaitable[T]]
MAX_MODELS_SHOWN = 40


@dataclass(frozen=True)
class Typed:
    """An LLM form as submitted (the key as typed; ``clear_key``: "Remove the key" is ticked)."""

    category: str
    provider: str
    base_url: str
    model: str
    api_key: str | None
    clear_key: bool
    bot_id: int | None = None

    @classmethod
    def from_form(cls, form: dict[str, Any], *, bot_id: int | None = None) -> "Typed":
        key = str(form.get("api_key") or "").strip() or None
        return cls(category=str(form.get("category") or ""), provider=str(form.get("provider") or "").strip().lower(),
                   base_url=str(form.get("base_url") or "").strip(), model=str(form.get("model") or "").strip(),
                   api_key=key, clear_key=bool(form.get("clear_api_key")) and key is None, bot_id=bot_id)


async def _with_suggestion(read: Reader, typed: Typed, result: llm_checks.CheckResult) -> llm_checks.CheckResult:
    if result.status != llm_checks.UNREACHABLE:
        return result
    hint = await read(lambda session: llm_checks.suggestion(session=session, category=typed.category,
                                                            provider=typed.provider, base_url=typed.base_url,
                                                            bot_id=typed.bot_id))
    return replace(result, message=f"{result.message}. {hint}") if hint else result


async def check_typed(read: Reader, typed: Typed) -> llm_checks.CheckResult:
    """Check the server and key typed in the form (the stored key when none is typed and it fits)."""
    key = typed.api_key
    if key is None and not typed.clear_key:
        key = await read(lambda session: llm_checks.key_for_check(
            session=session, category=typed.category, provider=typed.provider, base_url=typed.base_url,
            bot_id=typed.bot_id))
    result = await llm_checks.check_connection(provider=typed.provider, base_url=typed.base_url, api_key=key,
                                               model=typed.model)
    if len(result.models) > MAX_MODELS_SHOWN:
        result = replace(result, message=f"{result.message} (first {MAX_MODELS_SHOWN} shown)",
                         models=tuple(sorted(result.models)[:MAX_MODELS_SHOWN]))
    return await _with_suggestion(read, typed, result)


async def key_refusal(read: Reader, typed: Typed) -> llm_checks.CheckResult | None:
    """Before a typed API key is saved: None when it works (or there is nothing to check), else the
    failed check (``rejected``: never saved; otherwise the admin may save anyway)."""
    if not typed.api_key or typed.provider == embedded.PROVIDER:
        return None
    result = await llm_checks.check_connection(provider=typed.provider, base_url=typed.base_url,
                                               api_key=typed.api_key, model=typed.model)
    if result.ok:
        return None
    if result.status == llm_checks.REJECTED:
        return replace(result, message=f"{result.message}; the key was not saved")
    result = replace(result, message=f"{result.message}, so the API key could not be checked")
    return await _with_suggestion(read, typed, result)
