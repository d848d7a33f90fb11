"""The state of one run of the chain, shared by the roles (nothing outlives the message)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from grobot.core.agents.events import AnswerWithheld, RunRecorder
from grobot.core.agents.run_store import ImageStore
from grobot.core.agents.types import BotConfig, EventKind, IncomingMessage
from grobot.core.llm import alternatives
from grobot.core.llm.base import Usage
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.llm.errors import LLMError, ServerUnavailable, StreamStopped
from grobot.core.llm.service import CallRecord, LLMCallFailed, LLMResult, call_llm
from grobot.core.tools.base import ToolContext, ToolImage, ToolSpec

logger = logging.getLogger(__name__)

__all__ = ["BotConfig", "Run"]


def with_suggestion(error: LLMError, category: str, llms: dict[str, EffectiveLLM]) -> LLMError:
    """``error``, naming another provider the bot is configured with when its server cannot be reached."""
    if not isinstance(error, ServerUnavailable):
        return error
    llm = llms[category]
    hint = alternatives.suggestion(category, llm.provider, llm.base_url,
                                   alternatives.from_effective(llms, skip=category))
    if not hint:
        return error
    return type(error)(f"{str(error).rstrip('.')}. {hint}", provider=error.provider, url=error.url)


@dataclass
class Run:
    msg: IncomingMessage
    bot: BotConfig
    llms: dict[str, EffectiveLLM]
    recorder: RunRecorder
    tool_timeout: float = 30.0
    acknowledge_after: float = 2.0
    # Reads (acknowledge_after, tool_timeout) from the settings, once, when a tool is first called.
    settings_loader: Callable[[], Awaitable[tuple[float, float]]] | None = None
    system_prompt: str = ""
    history: list[dict[str, Any]] = field(default_factory=list)  # as the models see it
    user_msg: dict[str, Any] = field(default_factory=dict)  # text only (decision and tools models)
    output_user_msg: dict[str, Any] | None = None  # with images when the output model takes them
    tool_context: ToolContext | None = None
    records: list[CallRecord] = field(default_factory=list)
    new_messages: list[dict[str, Any]] = field(default_factory=list)  # saved at the end
    started: float = field(default_factory=time.perf_counter)
    tools_seconds: float = 0.0
    notices: list[str] = field(default_factory=list)
    unavailable_tools: dict[str, str] = field(default_factory=dict)  # name -> why (from the catalog; the model gets the names)
    # The Tool Router's scores of the message by tool text, read with it (:meth:`Prepared.found_scores`).
    known_scores: Callable[[], Awaitable[dict[str, float] | None]] | None = None
    # Every tool call that ran, with its tool (None: unknown), in order: what the reply must state.
    tool_results: list[tuple[ToolSpec | None, Any]] = field(default_factory=list)  # (tool, executor.ExecutedCall)
    write_asked: dict[str, bool] = field(default_factory=dict)  # tool -> whether the message asks for it (tools that write)
    images: list[ToolImage] = field(default_factory=list)  # the tools' images, shown to the user with the answer

    async def llm(self, category: str, role: str, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResult:
        """One LLM call on the model of ``category``; every attempt is accounted for, also one cut short
        by a stop. An answer that breaks a moderation rule as it streams is cut there (AnswerWithheld
        once its call is counted)."""
        calls: list[CallRecord] = []  # every attempt, also when the run is stopped in the middle of one
        on_text = kwargs.get("on_text")
        if on_text is not None and self.recorder.guard is not None:
            async def checked(text: str) -> None:
                await on_text(text)
                if self.recorder.withheld:
                    raise StreamStopped

            kwargs["on_text"] = checked
        try:
            result = await call_llm(self.llms[category], messages, role=role, on_notice=self._notice, records=calls,
                                    **kwargs)
        except LLMCallFailed as exc:
            raise with_suggestion(exc.cause, category, self.llms) from None
        finally:
            self.records.extend(calls)
        if self.recorder.withheld:
            raise AnswerWithheld
        if result.trimmed:
            await self.recorder.emit(EventKind.THINKING, {
                "step": role,
                "text": f"the history was trimmed by {result.trimmed} old message(s) to fit the {category} model's context window"})
        return result

    async def keep_images(self, images: list[ToolImage]) -> list[dict[str, Any]]:
        """Keep a tool's images for the user (at most ``MAX_IMAGES_PER_RUN`` a run): a stored run's
        (Test Chat) are stored, for the page to show; a Discord run's go with the answer as attachments.
        Returns what the run's events say of each (``id``: where the web app serves it, if stored)."""
        from grobot.core.tools.images import MAX_IMAGES_PER_RUN

        kept = images[: max(0, MAX_IMAGES_PER_RUN - len(self.images))]
        if not kept:
            return []
        self.images.extend(kept)
        ids: list[int | None] = [None] * len(kept)
        store = self.recorder.store
        if self.msg.run_id is not None and isinstance(store, ImageStore):
            try:
                ids = list(await store.save_images(self.msg.run_id, kept))
            except Exception as exc:
                logger.warning("Could not store a tool's images: %s", type(exc).__name__, extra={"bot_id": self.msg.bot_id})
        return [{"id": image_id, "mime_type": image.mime_type, "name": image.name, "size": len(image.data)}
                for image_id, image in zip(ids, kept)]

    async def load_tool_settings(self) -> None:
        if self.settings_loader is not None:
            loader, self.settings_loader = self.settings_loader, None
            self.acknowledge_after, self.tool_timeout = await loader()

    async def _notice(self, text: str) -> None:
        await self.notice(text)

    async def notice(self, text: str) -> None:
        """Something the run did instead of what was asked (shown as a step and in the done event)."""
        self.notices.append(text)
        await self.recorder.emit(EventKind.THINKING, {"step": "fallback", "text": text})

    async def think(self, step: str, text: str, **extra: Any) -> None:
        await self.recorder.emit(EventKind.THINKING, {"step": step, "text": text, **extra})

    def usage(self) -> Usage:
        total = Usage()
        for r in self.records:
            total = total + Usage(r.tokens_in, r.tokens_out, r.estimated)
        return total

    def llm_seconds(self) -> float:
        return sum(r.latency_ms for r in self.records) / 1000
