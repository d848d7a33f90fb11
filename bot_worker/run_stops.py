"""Which answers of a bot are running, so that their asker can stop them: ``/stop`` in the channel,
or a 🛑 reaction to the bot's streaming answer.

Stopping cancels the answer's task with a reason; the chain ends the run with one error event
saying it was cancelled (and why), closes the model's stream and abandons a running tool call.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

STOP_EMOJI = "🛑"


@dataclass
class RunningAnswer:
    """One answer in progress: who asked, where, and the bot's messages that carry it."""

    task: asyncio.Task[Any]
    channel_id: str
    author_id: str
    message_ids: set[str] = field(default_factory=set)


class RunStops:
    """The answers in progress of one bot process, found by channel and asker, or by a reply message."""

    def __init__(self) -> None:
        self._answers: dict[asyncio.Task[Any], RunningAnswer] = {}

    def add(self, task: asyncio.Task[Any], *, channel_id: str, author_id: str) -> RunningAnswer:
        answer = self._answers[task] = RunningAnswer(task, str(channel_id), str(author_id))
        task.add_done_callback(lambda t: self._answers.pop(t, None))
        return answer

    def current(self) -> RunningAnswer | None:
        """The answer the running task is (None: not an answer)."""
        task = asyncio.current_task()
        return self._answers.get(task) if task is not None else None

    def of_asker(self, channel_id: str, author_id: str) -> list[RunningAnswer]:
        return [a for a in self._answers.values()
                if a.channel_id == str(channel_id) and a.author_id == str(author_id) and not a.task.done()]

    def carrying(self, message_id: str) -> RunningAnswer | None:
        """The answer that a message of the bot belongs to (None: none running)."""
        return next((a for a in self._answers.values() if str(message_id) in a.message_ids and not a.task.done()),
                    None)

    def stop_asked(self, channel_id: str, author_id: str, reason: str) -> int:
        """Stop the answers to ``author_id`` in ``channel_id``; how many were stopped."""
        answers = self.of_asker(channel_id, author_id)
        for answer in answers:
            answer.task.cancel(reason)
        if answers:
            logger.info("Stopped %d answer(s): %s", len(answers), reason)
        return len(answers)

    def stop_by_reaction(self, message_id: str, user_id: str, emoji: str) -> bool:
        """A reaction to a bot message: 🛑 from the asker stops the answer it carries."""
        if emoji != STOP_EMOJI:
            return False
        answer = self.carrying(message_id)
        if answer is None or answer.author_id != str(user_id):
            return False  # only the asker may stop an answer
        answer.task.cancel(f"stopped with a {STOP_EMOJI} reaction")
        logger.info("Stopped an answer: a %s reaction from its asker", STOP_EMOJI)
        return True
