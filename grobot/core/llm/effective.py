"""The LLM settings one call uses: plain data, so that bot processes need no database layer to hold them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EffectiveLLM:
    """The settings a call of one category uses for one bot (secrets decrypted)."""

    category: str
    provider: str
    base_url: str
    model: str
    context_window: int
    temperature: float
    api_key: str | None = field(repr=False)
    fallback_model: str | None
    supports_images: bool
    source: str  # "bot", "global" or "builtin"
    unavailable: str | None = None  # why calls cannot be made now (an embedded model that is not running)
    repeat_penalty: float | None = None  # the prose roles' (None: the provider's default; see grobot.core.llm.sampling)

    def public(self) -> dict[str, Any]:
        """As shown to people: the API key is only "set" or "not set"."""
        return {
            "category": self.category,
            "provider": self.provider,
            "base_url": self.base_url,
            "model": self.model,
            "context_window": self.context_window,
            "temperature": self.temperature,
            "repeat_penalty": self.repeat_penalty,
            "api_key": "set" if self.api_key else "not set",
            "fallback_model": self.fallback_model,
            "supports_images": self.supports_images,
            "source": self.source,
            "unavailable": self.unavailable,
        }

    def as_dict(self) -> dict[str, Any]:
        """Every field, the API key included (for the supervisor's link to its own bots only)."""
        return dict(vars(self))  # flat: a shallow copy (dataclasses.asdict deep-copies, slowly)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EffectiveLLM:
        return cls(**data)
