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


INHERIT = "inherit"  # the value of a bot card's "Inherit (provider, from where)" item: no provider of its own


@dataclass(frozen=True)
class Typed:
    """An LLM form as submitted: the service's fields (a bot's override: "" where nothing is typed, which
    inherits; the global default: what is left empty takes the service's default), the key as typed
    (``clear_key``: "Remove the key" is ticked)."""

    category: str
    fields: dict[str, Any]
    api_key: str | None
    clear_key: bool
    bot_id: int | None = None

    @classmethod
    def from_form(cls, form: dict[str, Any], *, bot_id: int | None = None) -> Typed:
        key = str(form.get("api_key") or "").strip() or None
        provider = str(form.get("provider") or "").strip().lower()
        fields: dict[str, Any] = {
            "provider": "" if provider == INHERIT else provider,
            "base_url": str(form.get("base_url") or "").strip(),
            "model": str(form.get("model") or "").strip(),
            "fallback_model": str(form.get("fallback_model") or "").strip() or None,
            "supports_images": bool(form.get("supports_images")),
        }
        for name in ("context_window", "temperature", "repeat_penalty"):
            text = str(form.get(name) or "").strip()
            if text or bot_id is not None:
                fields[name] = text
        return cls(category=str(form.get("category") or ""), fields=fields, api_key=key,
                   clear_key=bool(form.get("clear_api_key")) and key is None, bot_id=bot_id)


async def validated(read: Reader, typed: Typed) -> llm_settings.Validated:
    """``typed`` checked as Save stores it (the one validation of Save and "Check connection"): raises the
    service's ValidationError, which the page shows as it shows Save's."""
    return await read(lambda session: llm_settings.validate_llm(
        session=session, category=typed.category, bot_id=typed.bot_id, api_key=typed.api_key,
        clear_api_key=typed.clear_key, **typed.fields))


async def _with_suggestion(read: Reader, typed: Typed, target: llm_settings.Validated,
                           result: llm_checks.CheckResult) -> llm_checks.CheckResult:
    if result.status != llm_checks.UNREACHABLE:
        return result
    hint = await read(lambda session: llm_checks.suggestion(session=session, category=target.category,
                                                            provider=target.data.provider, base_url=target.base_url,
                                                            bot_id=typed.bot_id))
    return replace(result, message=f"{result.message}. {hint}") if hint else result


async def check_typed(read: Reader, typed: Typed) -> llm_checks.CheckResult:
    """Check what the form says, as Save would store it (refused as Save refuses it), against the server it
    talks to, with the typed key (else the stored one, when it goes to that server)."""
    target = await validated(read, typed)
    provider = target.data.provider
    key = typed.api_key
    if key is None and not typed.clear_key:
        key = await read(lambda session: llm_checks.key_for_check(
            session=session, category=target.category, provider=provider, base_url=target.base_url,
            bot_id=typed.bot_id))
    result = await llm_checks.check_connection(provider=provider, base_url=target.base_url, api_key=key,
                                               model=target.model)
    if len(result.models) > MAX_MODELS_SHOWN:
        result = replace(result, message=f"{result.message} (first {MAX_MODELS_SHOWN} shown)",
                         models=tuple(sorted(result.models)[:MAX_MODELS_SHOWN]))
    return await _with_suggestion(read, typed, target, result)


async def key_refusal(read: Reader, typed: Typed, target: llm_settings.Validated) -> llm_checks.CheckResult | None:
    """Before a typed API key is saved (with the settings ``target`` that :func:`validated` gave): None when
    it works (or there is nothing to check), else the failed check (``rejected``: never saved; otherwise the
    admin may save anyway)."""
    if not typed.api_key or target.data.provider == embedded.PROVIDER:
        return None
    result = await llm_checks.check_connection(provider=target.data.provider, base_url=target.base_url,
                                               api_key=typed.api_key, model=target.model)
    if result.ok:
        return None
    if result.status == llm_checks.REJECTED:
        return replace(result, message=f"{result.message}; the key was not saved")
    result = replace(result, message=f"{result.message}, so the API key could not be checked")
    return await _with_suggestion(read, typed, target, result)


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
