"""Every LLM provider GroBot knows by name: base URL, default model, API key, tool support.

Plain data (no HTTP client): the settings service, the command line and the web app read
it. The named hosted services (Mistral, xAI, DeepSeek, Groq, OpenRouter) speak dialects of
the OpenAI-compatible API (``grobot.core.llm.dialects``); ``openai`` stays the entry for any
other OpenAI-compatible server (vLLM, LM Studio, a llama.cpp server, a proxy).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderEntry:
    """One provider as admins choose it."""

    name: str
    title: str
    base_url: str  # the default base URL ("": OLLAMA_HOST for ollama, the worker's server for llamacpp)
    default_model: str
    key_needed: bool  # its own service refuses calls without an API key
    # True: its chat models call tools; None: it depends on the model, and the server says so at run time.
    tools: bool | None
    no_tools: tuple[str, ...] = ()  # model names (or their start) known not to call tools

    def summary(self) -> str:
        """What choosing it means, in a line for a form: ``Mistral: default model mistral-small-latest; needs an
        API key (its own service).``"""
        if self.name == "llamacpp":
            return f"{self.title}: give the model file (a path under the data folder, or an absolute one)."
        if self.name == "openai":
            key = "an API key for OpenAI's own service; for another server, give its base URL"
        elif self.key_needed:
            key = "needs an API key (its own service)"
        else:
            key = "no API key needed (a key only for a server that asks for one)"
        return f"{self.title}: default model {self.default_model}; {key}."

    def supports_tools(self, model: str) -> bool | None:
        """Whether ``model`` can call tools: True, False, or None (known only at run time)."""
        name = model.strip().lower()
        if any(name == p or name.startswith(p) for p in self.no_tools):
            return False
        return self.tools


ENTRIES: dict[str, ProviderEntry] = {e.name: e for e in (
    ProviderEntry("ollama", "Ollama", "", "llama3.2", False, None,
                  no_tools=("llama2", "gemma2", "gemma3", "gemma:", "phi3", "tinyllama")),
    ProviderEntry("openai", "OpenAI or any OpenAI-compatible server", "https://api.openai.com/v1", "gpt-4o-mini",
                  True, None),
    ProviderEntry("anthropic", "Anthropic", "https://api.anthropic.com", "claude-3-5-haiku-latest", True, True),
    ProviderEntry("gemini", "Google Gemini", "https://generativelanguage.googleapis.com/v1beta", "gemini-2.0-flash",
                  True, True, no_tools=("gemma-",)),
    ProviderEntry("mistral", "Mistral", "https://api.mistral.ai/v1", "mistral-small-latest", True, True,
                  no_tools=("mistral-embed", "codestral-embed", "mistral-ocr", "mistral-moderation")),
    ProviderEntry("xai", "xAI (Grok)", "https://api.x.ai/v1", "grok-3-mini", True, True,
                  no_tools=("grok-2-image", "grok-imagine")),
    ProviderEntry("deepseek", "DeepSeek", "https://api.deepseek.com/v1", "deepseek-chat", True, True),
    ProviderEntry("groq", "Groq", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile", True, True,
                  no_tools=("whisper-", "distil-whisper", "playai-tts")),
    ProviderEntry("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", "openai/gpt-4o-mini", True, None),
    ProviderEntry("llamacpp", "Embedded model (a GGUF file the bot worker runs with llama.cpp)", "", "", False, None),
)}

NAMES: tuple[str, ...] = tuple(ENTRIES)


def entry(name: str) -> ProviderEntry | None:
    """The entry of ``name`` (None: unknown)."""
    return ENTRIES.get(name.strip().lower())


def supports_tools(provider: str, model: str) -> bool | None:
    """Whether ``provider``'s ``model`` can call tools: True, False, or None (known only at run time)."""
    found = entry(provider)
    return found.supports_tools(model) if found is not None else None


def uses_default_url(provider: str, base_url: str) -> bool:
    """Whether ``base_url`` is the provider's own service (empty, or its default base URL)."""
    found = entry(provider)
    url = base_url.strip().rstrip("/")
    return not url or (found is not None and url == found.base_url)


def help_table() -> str:
    """The providers as the command line's help lists them."""
    lines = []
    for e in ENTRIES.values():
        tools = {True: "tools", None: "tools: per model"}[e.tools]
        url = e.base_url or ("OLLAMA_HOST" if e.name == "ollama" else "run by the worker")
        model = e.default_model or "a GGUF file"
        lines.append(f"  {e.name:<11} {e.title}; {url}; default model {model}; {tools}"
                     f"{'; API key needed' if e.key_needed else ''}")
    return "\n".join(lines)
