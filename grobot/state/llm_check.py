"""The web app's LLM checks, shared by the Settings page and a bot's Settings tab: "Check connection"
of what is typed in a form, and the key check before a typed API key is saved.

``read(fn)`` runs ``fn(session)`` with the page's own access check (admin, and the bot when there is
one); the API key only passes through these functions, never into a state var.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import reflex as rx
from sqlmodel import Session

from grobot.core.llm import embedded
from grobot.core.services import llm_checks, llm_settings

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
    def from_form(cls, form: dict[str, Any], *, bot_id: int | None = None) -> Typed:
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


async def _with_server(read: Reader, typed: Typed) -> Typed:
    """``typed`` with the URL it talks to (an override without one inherits the global default's)."""
    if typed.base_url or typed.bot_id is None:
        return typed
    url = await read(lambda session: llm_settings.server_url(session=session, category=typed.category,
                                                             provider=typed.provider, bot_id=typed.bot_id))
    return replace(typed, base_url=url)


async def check_typed(read: Reader, typed: Typed) -> llm_checks.CheckResult:
    """Check the server and key typed in the form (the stored key when none is typed and it fits)."""
    typed = await _with_server(read, typed)
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
    typed = await _with_server(read, typed)
    result = await llm_checks.check_connection(provider=typed.provider, base_url=typed.base_url,
                                               api_key=typed.api_key, model=typed.model)
    if result.ok:
        return None
    if result.status == llm_checks.REJECTED:
        return replace(result, message=f"{result.message}; the key was not saved")
    result = replace(result, message=f"{result.message}, so the API key could not be checked")
    return await _with_suggestion(read, typed, result)


class LLMFormChecks(rx.State, mixin=True):
    """What a page with LLM forms keeps of their checks, per category: the result of "Check connection"
    (of what is typed), whether it failed, a typed key that could not be checked ("Save anyway"), and
    what the next submit of the category's form does (set by the button that submits it)."""

    check_result: dict[str, str] = {}
    check_failed: dict[str, bool] = {}
    unverified: dict[str, str] = {}
    intent: dict[str, str] = {}
    checking: str = ""

    @rx.event
    def set_intent(self, category: str, intent: str) -> None:
        """What the next submit of ``category``'s form does: "check", "force" (save anyway); else save."""
        self.intent = {**self.intent, category: intent}

    @rx.event
    def edited(self, category: str) -> None:
        """A field of ``category``'s form changed: a check result about other values is gone."""
        if category in self.check_result or category in self.unverified:
            self._forget_check(category)

    def _take_intent(self, category: str) -> str:
        intent = self.intent.get(category, "save")
        self.intent = {k: v for k, v in self.intent.items() if k != category}
        return intent

    async def _submit(self, category: str, form: dict[str, Any]):
        """A category's form submitted: "Check connection", "Save anyway" or Save, by the intent of its
        button. The page provides ``_check(category, form)`` and ``_save_llm(category, form, check_key=)``."""
        intent = self._take_intent(category)
        if intent == "check":
            async for event in self._check(category, form):  # type: ignore[attr-defined]
                yield event
            return
        if intent != "force" and str(form.get("api_key") or "").strip():
            self.checking = category  # the key is tried first: the form shows it is busy
            yield
        try:
            yield await self._save_llm(category, form, check_key=intent != "force")  # type: ignore[attr-defined]
        finally:
            self.checking = ""

    def _forget_checks(self) -> None:
        """No check result outlives the page (it is not about what the form shows any more)."""
        self.check_result, self.check_failed, self.unverified, self.intent, self.checking = {}, {}, {}, {}, ""

    def _forget_check(self, category: str) -> None:
        self.check_result = {k: v for k, v in self.check_result.items() if k != category}
        self.check_failed = {k: v for k, v in self.check_failed.items() if k != category}
        self.unverified = {k: v for k, v in self.unverified.items() if k != category}

    def _checked(self, category: str, result: llm_checks.CheckResult) -> None:
        self.checking = ""
        self.check_result = {**self.check_result, category: result.message}
        self.check_failed = {**self.check_failed, category: not result.ok}
