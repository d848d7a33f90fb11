"""How a call samples its tokens, per role: what keeps a small model from degenerating.

A role that answers in prose (the Synthesizer, the native loop, the Clarifier, the council's
advisors) is where a small model loops ("I hope you're well." to its cap): those calls get a
repetition penalty and, on llama.cpp, its DRY sampler (which penalises repeating a sequence of
tokens already written). A role that answers in JSON (the Gatekeeper, Tool Identifier,
Parameter Extractor, Archivist, the council's synthesis) is constrained by a grammar and asked at
temperature 0: a penalty there would push the model off the keys and quotes it must repeat.

The penalty is a setting of each LLM category (``llm set --repeat-penalty``, the LLM forms): 1.0
turns it off. Unset, the embedded llama.cpp models get ``EMBEDDED_REPEAT_PENALTY`` and DRY, the
other providers nothing (their servers apply their own defaults). Each provider sends what its API
has: llama.cpp ``repeat_penalty`` and the DRY fields, Ollama ``repeat_penalty``, the
OpenAI-compatible services ``frequency_penalty`` (see :func:`frequency_penalty`); Anthropic and
Gemini have no such setting and get none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EMBEDDED = "llamacpp"
# Roles that write prose for a reader (the others answer in JSON under a grammar).
PROSE_ROLES = frozenset({"synthesizer", "native", "clarifier", "council_advisor"})

EMBEDDED_REPEAT_PENALTY = 1.1
REPEAT_LAST_N = 128  # tokens the repetition penalty looks back over
# llama.cpp's DRY ("don't repeat yourself") sampler: a sequence longer than ALLOWED tokens that
# repeats one already written is penalised, more the longer it gets (multiplier * base ** extra).
DRY_MULTIPLIER = 0.8
DRY_BASE = 1.75
DRY_ALLOWED_LENGTH = 2
DRY_PENALTY_LAST_N = 1024  # tokens DRY looks back over (this llama.cpp refuses -1, "the whole context")
MIN_P = 0.05  # a token far less likely than the best one is never drawn (cuts the tail a small model rambles in)


@dataclass(frozen=True)
class Sampling:
    """What a call asks of the sampler beyond its temperature (None: the server's default)."""

    repeat_penalty: float | None = None
    repeat_last_n: int | None = None
    dry_multiplier: float | None = None
    min_p: float | None = None

    def llamacpp_fields(self) -> dict[str, Any]:
        """The fields of a llama.cpp server's request."""
        fields: dict[str, Any] = {}
        if self.repeat_penalty is not None:
            fields["repeat_penalty"] = self.repeat_penalty
            fields["repeat_last_n"] = self.repeat_last_n or REPEAT_LAST_N
        if self.dry_multiplier:
            fields.update(dry_multiplier=self.dry_multiplier, dry_base=DRY_BASE, dry_allowed_length=DRY_ALLOWED_LENGTH,
                          dry_penalty_last_n=DRY_PENALTY_LAST_N)
        if self.min_p is not None:
            fields["min_p"] = self.min_p
        return fields

    def ollama_options(self) -> dict[str, Any]:
        """The options of an Ollama request."""
        options: dict[str, Any] = {}
        if self.repeat_penalty is not None:
            options["repeat_penalty"] = self.repeat_penalty
            options["repeat_last_n"] = self.repeat_last_n or REPEAT_LAST_N
        if self.min_p is not None:
            options["min_p"] = self.min_p
        return options

    def openai_fields(self) -> dict[str, Any]:
        """The fields of an OpenAI-compatible request (a standard one: other fields are refused)."""
        penalty = frequency_penalty(self.repeat_penalty)
        return {"frequency_penalty": penalty} if penalty else {}


def default_text(provider: str) -> str:
    """What an unset repetition penalty means for ``provider``, in words (the settings forms' hint)."""
    return f"{EMBEDDED_REPEAT_PENALTY:g} with DRY" if provider == EMBEDDED else "the server's own"


def frequency_penalty(repeat_penalty: float | None) -> float | None:
    """OpenAI's additive ``frequency_penalty`` (-2 to 2) for a multiplicative repetition penalty: 1.1 -> 0.2."""
    if repeat_penalty is None or repeat_penalty <= 1.0:
        return None
    return round(min(2.0, (repeat_penalty - 1.0) * 2), 3)


def for_call(role: str, llm: Any) -> Sampling | None:
    """The sampling of one call of ``role`` on ``llm`` (its :class:`~grobot.core.llm.effective.EffectiveLLM`)."""
    if role not in PROSE_ROLES:
        return None
    setting = getattr(llm, "repeat_penalty", None)
    embedded = getattr(llm, "provider", "") == EMBEDDED
    penalty = setting if setting is not None else EMBEDDED_REPEAT_PENALTY if embedded else None
    if penalty is not None and penalty <= 1.0:
        penalty = None  # 1.0: turned off
    if penalty is None and not embedded:
        return None
    if embedded:
        return Sampling(repeat_penalty=penalty, repeat_last_n=REPEAT_LAST_N if penalty else None,
                        dry_multiplier=DRY_MULTIPLIER if penalty else None, min_p=MIN_P)
    return Sampling(repeat_penalty=penalty, repeat_last_n=REPEAT_LAST_N)
