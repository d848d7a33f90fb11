"""Prices of LLM models and the estimated cost of LLM calls, in the admin's currency.

A price is per million input tokens and per million output tokens, per provider and model.
The admin's prices (``llm_price``) come first, then the defaults below for well-known cloud
models (approximate list prices, in EUR; edit them for another currency or a contract);
local providers (Ollama, llama.cpp) are free; any other model has no known price and its
calls have no cost (NULL), never a guessed one.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import select
from sqlmodel import Session

from grobot.core.errors import NotFoundError, ValidationError
from grobot.core.models import LLMPrice, utcnow
from grobot.core.services import app_settings

logger = logging.getLogger(__name__)

CURRENCY_KEY = "currency"
DEFAULT_CURRENCY = "EUR"
FREE_PROVIDERS = frozenset({"ollama", "llamacpp"})
MAX_PRICE = 10_000.0  # per million tokens
CACHE_SECONDS = 5.0

# (provider, model) -> (input, output) per million tokens, approximate list prices in EUR.
DEFAULT_PRICES: dict[tuple[str, str], tuple[float, float]] = {
    ("openai", "gpt-4o-mini"): (0.14, 0.55),
    ("openai", "gpt-4o"): (2.30, 9.20),
    ("openai", "gpt-4.1"): (1.84, 7.36),
    ("openai", "gpt-4.1-mini"): (0.37, 1.47),
    ("openai", "gpt-4.1-nano"): (0.09, 0.37),
    ("openai", "o3-mini"): (1.01, 4.05),
    ("anthropic", "claude-3-5-haiku-latest"): (0.74, 3.68),
    ("anthropic", "claude-3-5-sonnet-latest"): (2.76, 13.80),
    ("anthropic", "claude-3-7-sonnet-latest"): (2.76, 13.80),
    ("anthropic", "claude-sonnet-4-0"): (2.76, 13.80),
    ("anthropic", "claude-opus-4-0"): (13.80, 69.00),
    ("gemini", "gemini-2.0-flash"): (0.09, 0.37),
    ("gemini", "gemini-2.0-flash-lite"): (0.07, 0.28),
    ("gemini", "gemini-2.5-flash"): (0.28, 2.30),
    ("gemini", "gemini-2.5-pro"): (1.15, 9.20),
    ("mistral", "mistral-small-latest"): (0.09, 0.28),
    ("mistral", "mistral-medium-latest"): (0.37, 1.84),
    ("mistral", "mistral-large-latest"): (1.84, 5.52),
    ("xai", "grok-3-mini"): (0.28, 0.46),
    ("xai", "grok-3"): (2.76, 13.80),
    ("deepseek", "deepseek-chat"): (0.25, 1.01),
    ("deepseek", "deepseek-reasoner"): (0.51, 2.01),
    ("groq", "llama-3.3-70b-versatile"): (0.54, 0.73),
    ("groq", "llama-3.1-8b-instant"): (0.05, 0.07),
    ("openrouter", "openai/gpt-4o-mini"): (0.14, 0.55),
    ("openrouter", "anthropic/claude-3.5-haiku"): (0.74, 3.68),
}


@dataclass(frozen=True)
class Price:
    """A model's price per million tokens; ``source``: "admin", "default" or "free"."""

    provider: str
    model: str
    input_per_million: float
    output_per_million: float
    source: str

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input_per_million + tokens_out * self.output_per_million) / 1_000_000

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(provider: str, model: str) -> tuple[str, str]:
    return (provider or "").strip().lower(), (model or "").strip()


def resolve(provider: str, model: str, admin: dict[tuple[str, str], tuple[float, float]]) -> Price | None:
    """The price of ``provider``/``model`` given the admin's prices, or None when unknown."""
    key = _key(provider, model)
    if key in admin:
        return Price(key[0], key[1], *admin[key], source="admin")
    if key in DEFAULT_PRICES:
        return Price(key[0], key[1], *DEFAULT_PRICES[key], source="default")
    if key[0] in FREE_PROVIDERS:
        return Price(key[0], key[1], 0.0, 0.0, source="free")
    return None


# --------------------------------------------------------------------------- the price cache of a process


class _PriceCache:
    """The admin's prices, read at most every ``CACHE_SECONDS`` (a price change reaches the costs within it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prices: dict[tuple[str, str], tuple[float, float]] = {}
        self._read_at = -1e9

    def get(self, session: Session) -> dict[tuple[str, str], tuple[float, float]]:
        now = time.monotonic()
        if now - self._read_at < CACHE_SECONDS:
            return self._prices
        rows = session.connection().execute(select(LLMPrice.provider, LLMPrice.model, LLMPrice.input_per_million,
                                                   LLMPrice.output_per_million)).all()
        with self._lock:
            self._prices = {_key(p, m): (float(i), float(o)) for p, m, i, o in rows}
            self._read_at = now
        return self._prices

    def clear(self) -> None:
        with self._lock:
            self._read_at = -1e9


_cache = _PriceCache()


def clear_cache() -> None:
    """Read the admin's prices again at the next call (after a change in this process; the tests)."""
    _cache.clear()


def estimate(records: list[dict[str, Any]], *, session: Session) -> None:
    """Set ``cost`` on call rows (dicts with provider, model, tokens_in, tokens_out): None when no price is known."""
    admin = _cache.get(session)
    found: dict[tuple[str, str], Price | None] = {}
    for row in records:
        key = (row["provider"], row["model"])
        if key not in found:
            found[key] = resolve(row["provider"], row["model"], admin)
        price = found[key]
        row["cost"] = None if price is None else round(price.cost(row["tokens_in"], row["tokens_out"]), 8)


# --------------------------------------------------------------------------- the admin's prices


def list_prices(*, session: Session) -> list[Price]:
    """The admin's prices and the defaults (those the admin did not replace), by provider and model."""
    stored: list[LLMPrice] = list(session.execute(select(LLMPrice).limit(1000)).scalars())
    admin = {_key(r.provider, r.model): (r.input_per_million, r.output_per_million) for r in stored}
    merged = {**{k: (v, "default") for k, v in DEFAULT_PRICES.items()}, **{k: (v, "admin") for k, v in admin.items()}}
    return [Price(p, m, values[0], values[1], source) for (p, m), (values, source) in sorted(merged.items())]


def _price_value(name: str, value: Any) -> float:
    try:
        number = float(str(value).strip().replace(",", "."))
    except (TypeError, ValueError):
        raise ValidationError(f"the {name} price must be a number (per million tokens)") from None
    if not 0 <= number <= MAX_PRICE:
        raise ValidationError(f"the {name} price must be between 0 and {MAX_PRICE:,.0f} per million tokens")
    return number


def price_problems(provider: str, model: str, input_per_million: Any, output_per_million: Any) -> dict[str, str]:
    """What is wrong with each part of a price, by ``provider``, ``model``, ``input``, ``output``
    (empty when it can be saved), for a form that shows each problem next to its field."""
    provider, model = _key(provider, model)
    problems: dict[str, str] = {}
    if not re.fullmatch(r"[a-z0-9_-]{1,32}", provider):
        problems["provider"] = "the provider is 1-32 lowercase letters, digits, '-' or '_' (e.g. openai)"
    if not 1 <= len(model) <= 200:
        problems["model"] = "the model name is 1-200 characters"
    for name, value in (("input", input_per_million), ("output", output_per_million)):
        try:
            _price_value(name, value)
        except ValidationError as exc:
            problems[name] = str(exc)
    return problems


def set_price(provider: str, model: str, input_per_million: Any, output_per_million: Any, *,
              session: Session) -> Price:
    """Set the admin's price of a model (per million input and output tokens)."""
    problems = price_problems(provider, model, input_per_million, output_per_million)
    if problems:
        raise ValidationError(next(iter(problems.values())))
    provider, model = _key(provider, model)
    pin, pout = _price_value("input", input_per_million), _price_value("output", output_per_million)
    row = session.execute(select(LLMPrice).where(LLMPrice.provider == provider, LLMPrice.model == model)).scalars().first()
    row = row or LLMPrice(provider=provider, model=model)
    row.input_per_million, row.output_per_million, row.updated_at = pin, pout, utcnow()
    session.add(row)
    session.flush()
    clear_cache()
    logger.info("Price of %s/%s set: %s in, %s out per million tokens", provider, model, pin, pout)
    return Price(provider, model, pin, pout, source="admin")


def delete_price(provider: str, model: str, *, session: Session) -> None:
    """Remove the admin's price of a model (its default, if any, applies again)."""
    provider, model = _key(provider, model)
    row = session.execute(select(LLMPrice).where(LLMPrice.provider == provider, LLMPrice.model == model)).scalars().first()
    if row is None:
        raise NotFoundError(f"no price set for {provider}/{model}")
    session.delete(row)
    session.flush()
    clear_cache()


# --------------------------------------------------------------------------- currency


def get_currency(*, session: Session) -> str:
    """The currency costs are shown in (the ``currency`` setting, default EUR)."""
    return str(app_settings.get_value(CURRENCY_KEY, session=session) or DEFAULT_CURRENCY)


def set_currency(code: str, *, session: Session) -> str:
    """Set the currency of prices and costs: a three-letter code (ISO 4217), e.g. EUR, USD, CHF."""
    app_settings.set_value(CURRENCY_KEY, code, session=session)
    return str(app_settings.check_value(CURRENCY_KEY, code))


def money(value: float | None, currency: str) -> str:
    """A cost as people read it: "EUR 12.50", "EUR 0.14", "EUR 0.00" (nothing); a sum below a cent
    with two significant digits ("EUR 0.0016", "EUR 0.000032") instead of "0.00"; "—" when unknown."""
    if value is None:
        return "—"
    size = abs(value)
    if size == 0 or size >= 0.01:
        return f"{currency} {value:,.2f}"
    decimals = 1 - math.floor(math.log10(size))  # two significant digits
    return f"{currency} {value:.{decimals}f}"
