"""The Test Chat tab's state: sending, following a run live at its worker's runner, Stop, Retry
and Reset (the page: :mod:`grobot.pages.tester_chat`)."""


from __future__ import annotations

import asyncio
import logging
import time
from pathlib import PurePosixPath
from typing import Any

import reflex as rx

from grobot.core import tester_chat_link
from grobot.core.errors import NotFoundError
from grobot.core.services.tester_chat import IMAGE_ONLY
from grobot.core.services.users import NotSignedIn
from grobot.core.settings import get_settings
from grobot.core.tools.images import MAX_IMAGE_BYTES
from grobot.pages.tester_chat_runs import (
    CANNOT_READ_IMAGES,
    OPEN_STATUSES,
    ChatStep,
    ChatTurn,
    ChatView,
    SentImage,
    cancel_pending,
    check_image,
    end_if_abandoned,
    forget_chat,
    load_chat,
    locate_run,
    plain_error,
    retry_message,
    send_message,
    step_of,
    stopped_by,
)
from grobot.run_images import image_url
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, user_message
from grobot.web_session import upload_session

logger = logging.getLogger(__name__)

# How often the status of a run no runner streams is read (a message no worker has claimed yet, a run
# whose worker stopped): the runner that holds a run streams it, the stored turn shows once it ends.
CHECK_SECONDS = 1.0
FOLLOW_LIMIT_SECONDS = 15 * 60  # a page stops following a run after this long
ABANDON_CHECK_MAX_SECONDS = 5.0  # see abandon_check_seconds
FINAL_KINDS = ("done", "error")
IMAGE_UPLOAD_ID = "chat-image-upload"
# A message that no worker has claimed after this long says "Waiting for the bot worker…" (a running
# worker claims it within milliseconds: saying so at every message would only flash by).
CLAIM_NOTICE_SECONDS = 2.0
NO_CHANNEL = "none"


class ChatState(BotPageState):
    """The Test Chat of the open bot: the conversation so far and the message box. The run being
    answered lives in :class:`LiveState`, so that the answer growing on screen does not re-render
    the whole conversation at every step."""

    turns: list[ChatTurn] = []
    chat_loaded: bool = False
    draft: str = ""
    sending: bool = False
    confirm_reset: bool = False
    chat_error: str = ""
    live_id: int = 0  # the run being followed (the user's last message while it is pending or running)
    reads_images: bool = False  # the bot's output model reads images: the tester may send one
    image_name: str = ""  # the image chosen to go with the next message
    image_error: str = ""  # why an image cannot be sent, in plain words
    attaching: bool = False
    _image: bytes = b""
    # The channel the tester tests as: its persona and models answer (NO_CHANNEL: the bot's own).
    test_channel: str = NO_CHANNEL
    test_channels: list[list[str]] = []  # [id, "#name"] of the bot's channel personas

    @rx.var
    def has_turns(self) -> bool:
        return len(self.turns) > 0 or self.live_id > 0

    @rx.var
    def can_retry(self) -> bool:
        """The last message failed or was stopped, and nothing is being answered."""
        return self.live_id == 0 and len(self.turns) > 0 and self.turns[-1].status in ("error", "cancelled")

    @rx.var
    def test_channel_line(self) -> list[str]:
        """The channel tested as and its answers' model (["", ""]: none, the bot's own)."""
        found = next((c for c in self.test_channels if c[0] == self.test_channel), None)
        return [found[1], found[2]] if found is not None and len(found) > 2 else ["", ""]

    @rx.var
    def last_turn_id(self) -> int:
        return self.turns[-1].id if self.turns else 0

    @rx.event
    def set_draft(self, value: str) -> None:
        self.draft = value

    @rx.event
    def choose_test_channel(self, value: str) -> None:
        """Test as a channel with a persona (its persona and models answer the next messages), or as none."""
        value = str(value)
        self.test_channel = value if any(c[0] == value for c in self.test_channels) else NO_CHANNEL

    @rx.event
    def set_confirm_reset(self, value: bool) -> None:
        self.confirm_reset = bool(value)

    @rx.event
    async def load(self):
        """On load: the conversation so far; follow the last message while it is being answered."""
        self.chat_loaded = False
        self.chat_error = ""
        if not self.bot_ready:
            return None
        try:
            view = await asyncio.to_thread(load_chat, self.session_token, self.current_bot_id)
        except NotSignedIn:
            self._forget_session()
            return sign_out_script()
        except Exception as exc:
            self.chat_error = user_message(exc)
            return None
        (await self.get_state(LiveState))._show(view)
        self.reads_images = view.reads_images
        self.test_channels = view.channels
        if not any(c[0] == self.test_channel for c in self.test_channels):
            self.test_channel = NO_CHANNEL
        self.chat_loaded = True
        return LiveState.follow if self.live_id else None

    @rx.event
    async def send(self, form_data: dict[str, Any] | None = None):
        """Send the draft to the bot (stored as pending, then handed to a worker)."""
        content = (self.draft or "").strip()
        if (not content and not self._image) or self.sending:
            return
        async for update in self._submit(content):
            yield update

    @rx.event
    async def retry(self):
        """Send the last message again (after an error or a stop), in place: its failed answer is replaced
        by the new one, not followed by another copy of the question."""
        if not self.can_retry or self.sending:
            return
        failed = self.turns[-1]
        self.sending = True
        self.chat_error = ""
        yield
        try:
            run_id = await asyncio.to_thread(retry_message, self.session_token, self.current_bot_id, failed.id)
        except Exception as exc:
            self.sending = False
            self.chat_error = user_message(exc)
            return
        self.sending = False
        self.turns = self.turns[:-1]  # the failed turn is the live one now
        (await self.get_state(LiveState))._start_live(run_id, "pending", failed.question, failed.sent)
        yield LiveState.follow

    async def _submit(self, content: str):
        if self.live_id:
            yield rx.toast.info("Wait for the bot to answer the last message first.")
            return
        self.sending = True
        self.chat_error = ""
        yield
        image = SentImage(self._image, self.image_name) if self._image else None
        try:
            run_id, sent = await asyncio.to_thread(send_message, self.session_token, self.current_bot_id, content,
                                                   image, "" if self.test_channel == NO_CHANNEL else self.test_channel)
        except Exception as exc:
            self.sending = False
            self.chat_error = user_message(exc)  # the draft (and the image) stay
            return
        self.sending = False
        if (self.draft or "").strip() == content:
            self.draft = ""
        self._forget_image()
        # The question shows at once (an image sent alone asks what is in it).
        (await self.get_state(LiveState))._start_live(run_id, "pending", content or IMAGE_ONLY, sent)
        yield LiveState.follow

    @rx.event
    async def attach_image(self, uploads: list[rx.UploadFile]):
        """The image to send with the next message: refused at once, in plain words, when the bot's model
        does not read images or the file is not an image it can take."""
        if not uploads:
            return
        # The upload request's own session cookie, not this tab's (see grobot.web_session).
        token = upload_session(self.router.session.client_token)
        upload = uploads[0]
        name = PurePosixPath(upload.name or "image").name
        self.attaching, self.image_error = True, ""
        yield
        try:
            if upload.size is not None and upload.size > MAX_IMAGE_BYTES:
                data, why = b"", f"{name} cannot be sent: it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MiB."
            else:
                data = await upload.read()
                why = await asyncio.to_thread(check_image, token, self.current_bot_id, data, name)
        except Exception as exc:
            data, why = b"", user_message(exc)
        self.attaching = False
        if why:
            self._forget_image()
            self.image_error = why
        else:
            self._image, self.image_name = data, name
        yield rx.clear_selected_files(IMAGE_UPLOAD_ID)

    @rx.event
    def explain_no_images(self) -> None:
        """The bot's model does not read images: say so, plainly (nothing is uploaded)."""
        self.image_error = CANNOT_READ_IMAGES

    @rx.event
    def remove_image(self) -> None:
        self._forget_image()
        self.image_error = ""

    def _forget_image(self) -> None:
        self._image, self.image_name = b"", ""

    @rx.event
    async def reset_chat(self):
        """Forget this conversation with the bot and start a new one (after the user confirmed)."""
        self.confirm_reset = False
        try:
            removed = await asyncio.to_thread(forget_chat, self.session_token, self.current_bot_id)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self.turns = []
        self.live_id = 0
        self.chat_error = ""
        return rx.toast.success(f"Conversation reset ({removed} message{'' if removed == 1 else 's'} removed).")


class LiveState(ChatState):
    """The run being answered: the question, the answer as it grows, the steps, the end."""

    live_question: str = ""
    live_status: str = ""
    live_answer: str = ""
    live_steps: list[ChatStep] = []
    live_error: str = ""
    live_error_detail: str = ""  # admins: the whole error (see ``plain_error``)
    live_stopped: bool = False
    live_images: list[str] = []  # the tools' images, as they come
    live_sent: list[str] = []  # the image the user sent with the question
    worker_running: bool = True
    claim_slow: bool = False  # pending for longer than CLAIM_NOTICE_SECONDS although a worker runs
    stopping: bool = False
    _live_index: int = -1  # the last event of the run's feed shown (its runner's index)
    _source: str = ""  # the supervisor whose runner's feed the live content came from
    _following: bool = False

    @rx.var
    def waiting_for_worker(self) -> bool:
        return self.live_id > 0 and self.live_status == "pending" and not self.worker_running

    @rx.var
    def progress_text(self) -> str:
        """What the answer being written says below it."""
        if self.live_status == "pending" and (self.claim_slow or not self.worker_running):
            return "Waiting for the bot worker…"
        return "Writing…" if self.live_answer else "Thinking…"

    def _show(self, view: ChatView) -> None:
        """History turns, with a last unanswered message as the live run."""
        turns = list(view.turns)
        self.worker_running = view.worker_running
        last = turns[-1] if turns else None
        if last is not None and last.status in OPEN_STATUSES:
            turns.pop()
            if last.id != self.live_id:
                self._start_live(last.id, last.status, last.question, last.sent)
        else:
            self.live_id = 0
        self.turns = turns

    def _start_live(self, run_id: int, status: str, question: str, sent: list[str] | None = None) -> None:
        self.live_id = run_id
        self.live_question = question
        self.live_status = status
        self.live_sent = list(sent or [])
        self.claim_slow = False
        self._clear_live("")

    def _clear_live(self, source: str) -> None:
        """Forget the live run's content (before reading it again from another source)."""
        self.live_answer = ""
        self.live_steps = []
        self.live_error = ""
        self.live_error_detail = ""
        self.live_stopped = False
        self.live_images = []
        self._live_index, self._source = -1, source

    @rx.event(background=True)
    async def follow(self):
        """Follow the live run until it ends, at the runner of the worker that holds it: one source, which
        replays the run's events from its start, then streams the new ones (a pending message is claimed
        by the runner that streams it); then show the stored turn. While no runner streams the run (no
        worker runs yet, or its worker stopped) its status is read every ``CHECK_SECONDS``."""
        async with self:
            if self._following or not self.live_id:
                return
            self._following = True
            token, bot_id, run_id = self.session_token, self.current_bot_id, self.live_id
        started = time.monotonic()
        checked_at = started
        try:
            while time.monotonic() - started < FOLLOW_LIMIT_SECONDS:
                async with self:
                    if self.live_id != run_id or self.current_bot_id != bot_id:
                        return  # reset, another bot, or the run already ended
                try:
                    place = await asyncio.to_thread(locate_run, token, bot_id, run_id)
                except NotSignedIn:
                    async with self:
                        self._forget_session()
                    return
                except NotFoundError:  # gone (a reset), or not a run this user may follow
                    break
                except Exception as exc:  # the database is away for a moment: try again
                    logger.debug("Test Chat locate failed: %s", type(exc).__name__)
                    await asyncio.sleep(CHECK_SECONDS)
                    continue
                if place.status not in OPEN_STATUSES:
                    break
                async with self:
                    if self.live_id != run_id:
                        return
                    self.worker_running = place.worker_running
                    if self.live_status == "pending":
                        self.live_status = place.status
                    if place.status == "pending" and time.monotonic() - started >= CLAIM_NOTICE_SECONDS:
                        self.claim_slow = True
                # Followed where it runs; a pending message is claimed by the runner that streams it.
                candidates = [place.holder] if place.holder else place.runners if place.status == "pending" else []
                if await self._stream_first(candidates, run_id, claim=place.holder is None):
                    break
                if place.status == "running" and time.monotonic() - checked_at >= abandon_check_seconds():
                    checked_at = time.monotonic()
                    if await _ended_as_abandoned(token, bot_id, run_id):
                        continue
                await asyncio.sleep(CHECK_SECONDS)
        finally:
            async with self:
                self._following = False
        try:
            view = await asyncio.to_thread(load_chat, token, bot_id)
        except Exception as exc:
            logger.debug("Test Chat reload failed: %s", type(exc).__name__)
            return
        async with self:
            if self.live_id == run_id and self.current_bot_id == bot_id:
                self.live_id = 0
                self._show(view)

    async def _stream_first(self, runners: list[tester_chat_link.Runner], run_id: int, *, claim: bool) -> bool:
        """Follow the run at the first of ``runners`` that holds it (or claims it); True when it ended."""
        for runner in runners:
            try:
                return await self._stream(runner, run_id, claim=claim)
            except tester_chat_link.NotHere:
                continue
        return False

    async def _stream(self, runner: tester_chat_link.Runner, run_id: int, *, claim: bool) -> bool:
        """Show the run's events as the runner emits them; True when the run ended (False: the line
        broke, or the runner no longer holds the run). Raises ``NotHere`` when the runner does not hold
        the run.

        The events that arrive together are shown together: one page update (one render of the
        conversation) for each batch, not for each event. A frozen worker (SIGSTOP, a deadlocked loop)
        keeps its line open and sends nothing: after :func:`abandon_check_seconds` of silence the run is
        ended if its worker has stopped, as a killed worker's is, and followed on while it runs."""
        async with self:
            after = self._live_index if self._source == runner.supervisor_id else -1
            token, bot_id = self.session_token, self.current_bot_id
        queue: asyncio.Queue[tester_chat_link.FeedEvent | BaseException | None] = asyncio.Queue()
        reader = asyncio.get_running_loop().create_task(_read_feed(runner, run_id, after, claim, queue))
        try:
            while True:
                batch = await _next_batch(queue, abandon_check_seconds())
                if not batch:  # silence: a slow model, or a frozen worker
                    if await _ended_as_abandoned(token, bot_id, run_id):
                        return True
                    if not await _held_by(runner, token, bot_id, run_id):
                        return False  # ended or claimed elsewhere meanwhile (a pending message stopped)
                    continue
                events = [item for item in batch if isinstance(item, tester_chat_link.FeedEvent)]
                if events:
                    async with self:
                        if self.live_id != run_id:
                            return True
                        if self._source != runner.supervisor_id:
                            self._clear_live(runner.supervisor_id)  # another runner's feed: read from its start
                        for event in events:
                            self._apply_event(event.kind, event.data)
                            self._live_index = event.index
                    if any(event.kind in FINAL_KINDS for event in events):
                        return True
                ended = next((item for item in batch if not isinstance(item, tester_chat_link.FeedEvent)), False)
                if isinstance(ended, tester_chat_link.NotHere):
                    raise ended
                if ended is not False:
                    if ended is not None:
                        logger.debug("Following Test Chat run %s from its runner failed: %s", run_id,
                                     type(ended).__name__)
                    return False
        finally:
            reader.cancel()

    def _apply_event(self, kind: str, data: dict[str, Any]) -> None:
        if self.live_status == "pending":
            self.live_status = "running"
            self.worker_running = True
        if kind == "token":
            self.live_answer += str(data.get("text") or "")
        elif kind == "done" and data.get("moderated"):  # the answer broke a moderation rule: what it showed goes
            self.live_answer = str(data.get("text") or "")
        elif kind == "error":
            self.live_error, self.live_error_detail = plain_error(str(data.get("message") or "the bot could not answer"),
                                                                  admin=self.is_admin)
            self.live_stopped = bool(data.get("cancelled"))
        else:
            step = step_of(kind, data, admin=self.is_admin)
            if step is not None:
                self.live_steps = [*self.live_steps, step]
            shown = [image_url(int(i["id"])) for i in data.get("images") or [] if isinstance(i, dict) and i.get("id")]
            if kind == "tool_result" and shown:
                self.live_images = [*self.live_images, *shown]

    @rx.event
    async def stop(self):
        """Stop the live run: the worker's runner cancels it (a message not claimed yet is withdrawn)."""
        run_id, token, bot_id = self.live_id, self.session_token, self.current_bot_id
        if not run_id or self.stopping:
            return
        self.stopping = True
        yield
        stopped = False
        try:
            place = await asyncio.to_thread(locate_run, token, bot_id, run_id)
            for runner in [place.holder] if place.holder else place.runners:
                if await tester_chat_link.cancel(runner, run_id, stopped_by(self.username)):
                    stopped = True
                    break
            if not stopped and place.status == "pending":
                stopped = await asyncio.to_thread(cancel_pending, token, bot_id, run_id)
        except Exception as exc:
            self.stopping = False
            yield rx.toast.error(user_message(exc))
            return
        self.stopping = False
        if not stopped:
            yield rx.toast.info("Nothing to stop: the answer has ended or its worker cannot be reached.")


def abandon_check_seconds() -> float:
    """How often a running answer checks that its worker still runs: read from the database, or followed
    at a runner that has sent nothing for this long (a slow model, or a frozen worker whose line stays open).
    Once a heartbeat period (``GROBOT_HEARTBEAT_SECONDS``), between ``CHECK_SECONDS`` and 5 s: the answer of
    a stopped worker ends within this much of the point it counts as stopped
    (:func:`grobot.core.services.fleet.stale_after_seconds`)."""
    return min(max(get_settings().worker.heartbeat_seconds, CHECK_SECONDS), ABANDON_CHECK_MAX_SECONDS)


async def _ended_as_abandoned(token: str, bot_id: int, run_id: int) -> bool:
    """End the followed run if its worker was killed or is frozen (silent for
    :func:`grobot.core.services.fleet.stale_after_seconds`: 25 s by default): it ends now, not when a
    worker starts again."""
    try:
        return await asyncio.to_thread(end_if_abandoned, token, bot_id, run_id)
    except Exception as exc:  # the database is away for a moment: the next check tries again
        logger.debug("Test Chat abandoned-run check failed: %s", type(exc).__name__)
        return False


async def _held_by(runner: tester_chat_link.Runner, token: str, bot_id: int, run_id: int) -> bool:
    """Whether ``runner`` still holds the running run (False when that cannot be read now: the follow
    loop reads it again, and sees to a signed-out user)."""
    try:
        place = await asyncio.to_thread(locate_run, token, bot_id, run_id)
    except Exception as exc:
        logger.debug("Test Chat locate failed: %s", type(exc).__name__)
        return False
    return place.status == "running" and place.holder == runner


async def _next_batch(queue: asyncio.Queue[tester_chat_link.FeedEvent | BaseException | None],
                      timeout: float) -> list[tester_chat_link.FeedEvent | BaseException | None]:
    """The next item on ``queue`` and those that came with it ([] when none came within ``timeout`` s)."""
    try:
        batch = [await asyncio.wait_for(queue.get(), timeout)]
    except TimeoutError:
        return []
    while not queue.empty():
        batch.append(queue.get_nowait())
    return batch


async def _read_feed(runner: tester_chat_link.Runner, run_id: int, after: int, claim: bool,
                     queue: asyncio.Queue[tester_chat_link.FeedEvent | BaseException | None]) -> None:
    """Put the run's events on ``queue`` as they come, then None (the end), or the error that ended it."""
    try:
        async for event in tester_chat_link.follow(runner, run_id, after, claim=claim):
            queue.put_nowait(event)
        queue.put_nowait(None)
    except (tester_chat_link.NotHere, OSError, ValueError) as exc:  # OSError: ConnectionError, the line broke
        queue.put_nowait(exc)
