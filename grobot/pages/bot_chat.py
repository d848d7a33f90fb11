"""The Test Chat tab: talk to a bot from the web app (admins and testers).

A message is stored as ``pending``; a bot worker supervisor claims it and runs the agent
chain, which writes the run's events (thinking, tool calls and results, answer tokens,
done or error). The page polls those events in a background task and shows the answer
as it grows, with the chain's steps. Each user has their own conversation with each bot.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from sqlmodel import Session

from grobot.components.bot_frame import bot_page
from grobot.components.bot_tabs import CHAT
from grobot.components.empty_state import command_line
from grobot.components.safe_text import safe_markdown, safe_text
from grobot.core.models import AgentEvent, AppUser, Bot, Message
from grobot.core.services import conversations, test_chat
from grobot.core.services.users import NotSignedIn
from grobot.state.app_state import sign_out_script
from grobot.state.bot_page import BotPageState, run_for_bot, user_message

logger = logging.getLogger(__name__)

HISTORY_LIMIT = 100  # messages shown
POLL_SECONDS = 0.3  # how often a running answer is read
PENDING_POLL_SECONDS = 1.5  # how often a message no worker has claimed yet is checked
FOLLOW_LIMIT_SECONDS = 15 * 60  # a page stops following a run after this long
WORKER_COMMAND = "python -m grobot worker"
DETAIL_CHARS = 2000
TITLE_CHARS = 160


@dataclass
class ChatStep:
    """One step of the chain in a run: a thought, a tool call or its result."""

    kind: str
    title: str
    detail: str = ""
    failed: bool = False


@dataclass
class ChatTurn:
    """A user message and the bot's answer to it."""

    id: int
    question: str
    author: str
    status: str  # pending | running | done | error ("" for messages not from the Test Chat)
    error: str = ""
    answer: str = ""
    steps: list[ChatStep] = field(default_factory=list)


def _short(value: Any, limit: int = DETAIL_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def step_of(kind: str, data: dict[str, Any]) -> ChatStep | None:
    """How one event of a run reads in the step list (None: not worth a line)."""
    if kind == "thinking":
        step = str(data.get("step") or "thinking").replace("_", " ")
        text = str(data.get("text") or "")
        title = f"{step[:1].upper()}{step[1:]}: {text}" if text else step[:1].upper() + step[1:]
        failed = bool(data.get("failed"))  # e.g. a council advisor that could not answer
        if len(title) <= TITLE_CHARS:
            return ChatStep(kind, title, failed=failed)
        return ChatStep(kind, title[:TITLE_CHARS] + "…", _short(text), failed)
    if kind == "tool_call":
        return ChatStep(kind, f"Calls {data.get('name', 'a tool')}", _short(data.get("arguments") or {}))
    if kind == "tool_result":
        failed = bool(data.get("is_error"))
        took = data.get("duration_ms")
        timing = f" in {float(took) / 1000:.1f} s" if isinstance(took, (int, float)) else ""
        verb = "failed" if failed else "answered"
        return ChatStep(kind, f"{data.get('name', 'The tool')} {verb}{timing}", _short(data.get("content") or ""), failed)
    if kind == "progress" and data.get("acknowledgement"):
        return ChatStep(kind, "Told the user", _short(data["acknowledgement"]))
    if kind == "progress" and data.get("status") == "retrying":
        return ChatStep(kind, f"Retrying {data.get('tool', 'the tool')} (attempt {data.get('attempt', '?')})",
                        _short(data.get("error") or ""))
    return None


def build_turns(messages: list[Message], events: list[AgentEvent]) -> list[ChatTurn]:
    """The conversation as turns: each user message with the final answer and the steps of its run."""
    steps: dict[int, list[ChatStep]] = {}
    for event in events:
        step = step_of(event.kind, event.data or {})
        if step is not None:
            steps.setdefault(event.run_id, []).append(step)
    turns: list[ChatTurn] = []
    for message in messages:
        if message.role == "user":
            turns.append(ChatTurn(id=message.id or 0, question=message.content, author=message.author_name or "tester",
                                  status=message.status or "", error=message.error or "",
                                  steps=steps.get(message.id or 0, [])))
        elif message.role == "assistant" and message.content and turns:
            turns[-1].answer = message.content  # the last words of the run are its answer
    return turns


@dataclass
class ChatView:
    """What the tab shows when it (re)loads."""

    turns: list[ChatTurn]
    worker_running: bool


def load_chat(token: str, bot_id: int) -> ChatView:
    """The signed-in user's conversation with the bot (blocking)."""

    def work(session: Session, user: AppUser, bot: Bot) -> ChatView:
        conv = test_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        messages = test_chat.recent_messages(conv.id or 0, session=session, limit=HISTORY_LIMIT) if conv else []
        run_ids = [m.id or 0 for m in messages if m.role == "user"]
        events = test_chat.run_steps(run_ids, session=session)
        return ChatView(build_turns(messages, events), test_chat.worker_running(session=session))

    return run_for_bot(token, bot_id, work, admin=False)


def send_message(token: str, bot_id: int, content: str) -> int:
    """Store the user's message as pending in their conversation with the bot; returns its id."""

    def work(session: Session, user: AppUser, bot: Bot) -> int:
        conv = test_chat.open_session(bot.id or 0, user.id or 0, session=session)
        # Each web user is their own "user" to the bot: notes and memories are not shared between testers.
        message = test_chat.submit(conv.id or 0, content, session=session, author_name=user.username,
                                   author_id=f"app-user:{user.id}")
        logger.info("User %s sent a Test Chat message to bot %s", user.username, bot.id)
        return message.id or 0

    return run_for_bot(token, bot_id, work, admin=False, readonly=False)


def forget_chat(token: str, bot_id: int) -> int:
    """Forget the user's conversation with the bot; returns how many messages were removed."""

    def work(session: Session, user: AppUser, bot: Bot) -> int:
        conv = test_chat.latest_session(bot.id or 0, user.id or 0, session=session)
        if conv is None:
            return 0
        return conversations.reset_conversation(session=session, bot_id=bot.id or 0, key=conv.key)

    return run_for_bot(token, bot_id, work, admin=False, readonly=False)


@dataclass
class RunUpdate:
    """What changed in a followed run since the last poll."""

    status: str
    error: str
    events: list[tuple[int, str, dict[str, Any]]]
    worker_running: bool


def poll_run(token: str, bot_id: int, run_id: int, after_seq: int) -> RunUpdate:
    """The run's status and its events after ``after_seq`` (blocking)."""

    def work(session: Session, user: AppUser, bot: Bot) -> RunUpdate:
        status, error = test_chat.run_status(run_id, session=session)
        events = [(e.seq, e.kind, dict(e.data or {})) for e in conversations.run_events(session=session, run_id=run_id,
                                                                                      after_seq=after_seq)]
        running = test_chat.worker_running(session=session) if status == "pending" else True
        return RunUpdate(status, error, events, running)

    return run_for_bot(token, bot_id, work, admin=False)


class ChatState(BotPageState):
    """The Test Chat of the open bot."""

    turns: list[ChatTurn] = []
    chat_loaded: bool = False
    draft: str = ""
    sending: bool = False
    chat_error: str = ""
    # The run being followed (the user's last message while it is pending or running).
    live_id: int = 0
    live_question: str = ""
    live_status: str = ""
    live_answer: str = ""
    live_steps: list[ChatStep] = []
    live_error: str = ""
    worker_running: bool = True
    _live_seq: int = 0
    _following: bool = False

    @rx.var
    def has_turns(self) -> bool:
        return len(self.turns) > 0 or self.live_id > 0

    @rx.var
    def waiting_for_worker(self) -> bool:
        return self.live_id > 0 and self.live_status == "pending" and not self.worker_running

    @rx.event
    def set_draft(self, value: str) -> None:
        self.draft = value

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
        self._show(view)
        self.chat_loaded = True
        return ChatState.follow if self.live_id else None

    def _show(self, view: ChatView) -> None:
        """History turns, with a last unanswered message as the live run."""
        turns = list(view.turns)
        self.worker_running = view.worker_running
        last = turns[-1] if turns else None
        if last is not None and last.status in ("pending", "running"):
            turns.pop()
            if last.id != self.live_id:
                self._start_live(last.id, last.status, last.question)
        else:
            self.live_id = 0
        self.turns = turns

    def _start_live(self, run_id: int, status: str, question: str) -> None:
        self.live_id = run_id
        self.live_question = question
        self.live_status = status
        self.live_answer = ""
        self.live_steps = []
        self.live_error = ""
        self._live_seq = 0

    @rx.event
    async def send(self, form_data: dict[str, Any] | None = None):
        """Send the draft to the bot (stored as pending until a worker answers it)."""
        content = (self.draft or "").strip()
        if not content or self.sending:
            return
        if self.live_id:
            yield rx.toast.info("Wait for the bot to answer the last message first.")
            return
        self.sending = True
        self.chat_error = ""
        yield
        try:
            run_id = await asyncio.to_thread(send_message, self.session_token, self.current_bot_id, content)
        except Exception as exc:
            self.sending = False
            self.chat_error = user_message(exc)  # the draft stays in the box
            return
        self.sending = False
        self.draft = ""
        self._start_live(run_id, "pending", content)  # the question shows at once as the live turn
        yield ChatState.follow

    @rx.event(background=True)
    async def follow(self):
        """Poll the live run's events and status until it ends, updating the page (throttled)."""
        async with self:
            if self._following or not self.live_id:
                return
            self._following = True
            token, bot_id, run_id = self.session_token, self.current_bot_id, self.live_id
        started = time.monotonic()
        try:
            while time.monotonic() - started < FOLLOW_LIMIT_SECONDS:
                async with self:
                    if self.live_id != run_id or self.current_bot_id != bot_id:
                        return  # reset, another bot, or the run already ended
                    after = self._live_seq
                try:
                    update = await asyncio.to_thread(poll_run, token, bot_id, run_id, after)
                except NotSignedIn:
                    async with self:
                        self._forget_session()
                    return
                except Exception as exc:  # the database is away for a moment: try again
                    logger.debug("Test Chat poll failed: %s", type(exc).__name__)
                    await asyncio.sleep(POLL_SECONDS * 5)
                    continue
                final = update.status in ("done", "error", "")
                async with self:
                    if self.live_id != run_id:
                        return
                    self._apply(update)
                if final:
                    break
                await asyncio.sleep(PENDING_POLL_SECONDS if update.status == "pending" else POLL_SECONDS)
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

    def _apply(self, update: RunUpdate) -> None:
        self.worker_running = update.worker_running
        self.live_status = update.status or self.live_status
        answer = self.live_answer
        steps = list(self.live_steps)
        for seq, kind, data in update.events:
            self._live_seq = max(self._live_seq, seq)
            if kind == "token":
                answer += str(data.get("text") or "")
            elif kind == "error":
                self.live_error = str(data.get("message") or "the bot could not answer")
            else:
                step = step_of(kind, data)
                if step is not None:
                    steps.append(step)
        if answer != self.live_answer:
            self.live_answer = answer
        if len(steps) != len(self.live_steps):
            self.live_steps = steps
        if update.status == "error" and update.error:
            self.live_error = update.error

    @rx.event
    async def reset_chat(self):
        """Forget this conversation with the bot and start a new one."""
        try:
            removed = await asyncio.to_thread(forget_chat, self.session_token, self.current_bot_id)
        except Exception as exc:
            return rx.toast.error(user_message(exc))
        self.turns = []
        self.live_id = 0
        self.chat_error = ""
        return rx.toast.success(f"Conversation reset ({removed} message{'' if removed == 1 else 's'} removed).")


# --------------------------------------------------------------------------- components


def step_row(step: ChatStep) -> rx.Component:
    """One step of the chain, its details folded away."""
    icon = rx.match(step.kind, ("tool_call", "wrench"), ("tool_result", "circle-check"), ("thinking", "lightbulb"),
                    "activity")
    return rx.el.details(
        rx.el.summary(
            rx.hstack(
                rx.cond(step.failed, rx.icon("circle-x", size=14, color=rx.color("red", 10)),
                        rx.icon(icon, size=14, color=rx.color("gray", 10))),
                safe_text(step.title, size="1", weight="medium", color=rx.cond(step.failed, rx.color("red", 11),
                                                                               rx.color("gray", 11))),
                spacing="2", align="center", display="inline-flex",
                max_width="calc(100% - 1.25rem)", vertical_align="top",  # a long title wraps beside its marker
            ),
            cursor="pointer",
        ),
        rx.cond(step.detail != "", rx.code_block(step.detail, language="json", wrap_long_lines=True, font_size="12px",
                                                 margin_top="0.25rem", custom_style={"maxHeight": "16rem"})),
        data_step=step.kind,
    )


def steps_panel(steps: rx.Var[list[ChatStep]], *, open_: bool = False) -> rx.Component:
    """The chain's steps of a run, collapsible as a whole."""
    return rx.cond(
        steps.length() > 0,  # type: ignore[attr-defined]
        rx.el.details(
            rx.el.summary(rx.text(f"Steps ({steps.length()})", size="1", color=rx.color("gray", 10), as_="span"),
                          cursor="pointer"),
            rx.vstack(rx.foreach(steps, step_row), spacing="1", padding_left="0.75rem", margin_top="0.25rem",
                      border_left=f"2px solid {rx.color('gray', 5)}"),
            open=open_,
            data_testid="chain-steps",
            width="100%",
        ),
    )


def user_bubble(text: rx.Var[str], author: rx.Var[str] | str) -> rx.Component:
    return rx.hstack(
        rx.box(
            safe_text(text, size="2"),
            padding="0.6rem 0.9rem",
            border_radius="12px 12px 2px 12px",
            background=rx.color("accent", 9),
            color="white",
            max_width="75%",
            data_testid="user-message",
        ),
        justify="end",
        width="100%",
        title=author,
    )


def bot_bubble(*children: rx.Component, testid: str = "bot-answer") -> rx.Component:
    return rx.hstack(
        rx.center(rx.icon("bot", size=16, color=rx.color("accent", 11)), width="2rem", height="2rem", min_width="2rem",
                  border_radius="50%", background=rx.color("accent", 3)),
        rx.vstack(*children, spacing="2", padding="0.6rem 0.9rem", border_radius="12px 12px 12px 2px",
                  background=rx.color("gray", 3), max_width="75%", min_width="6rem", align="start",
                  data_testid=testid),
        align="start",
        spacing="2",
        width="100%",
    )


def error_text(text: rx.Var[str]) -> rx.Component:
    return rx.hstack(rx.icon("circle-alert", size=16, color=rx.color("red", 10)),
                     safe_text("The bot could not answer: ", text, size="2", color=rx.color("red", 11)),
                     spacing="2", align="start", data_testid="answer-error")


def turn_view(turn: ChatTurn) -> rx.Component:
    """A finished exchange."""
    return rx.vstack(
        user_bubble(turn.question, turn.author),
        rx.cond(
            (turn.answer != "") | (turn.error != "") | (turn.steps.length() > 0),  # type: ignore[attr-defined]
            bot_bubble(
                steps_panel(turn.steps),
                rx.cond(turn.answer != "", safe_markdown(turn.answer)),
                rx.cond(turn.error != "", error_text(turn.error)),
            ),
        ),
        spacing="3",
        width="100%",
        data_turn=turn.id,
    )


def waiting_notice() -> rx.Component:
    return rx.callout(
        rx.vstack(
            rx.text("No bot worker is running: the message is waiting for the bot worker. "
                    "It will be answered as soon as a worker starts:", size="2"),
            command_line(WORKER_COMMAND),
            spacing="2",
        ),
        icon="clock",
        color_scheme="amber",
        width="100%",
        data_testid="waiting-for-worker",
    )


def live_turn() -> rx.Component:
    """The message being answered, with the answer as it streams."""
    return rx.cond(
        ChatState.live_id > 0,
        rx.vstack(
            user_bubble(ChatState.live_question, ChatState.username),
            bot_bubble(
                steps_panel(ChatState.live_steps, open_=True),
                rx.cond(
                    ChatState.live_answer != "",
                    safe_markdown(ChatState.live_answer),
                    rx.cond(
                        ChatState.live_error == "",
                        rx.hstack(rx.spinner(size="1"),
                                  rx.text(rx.match(ChatState.live_status, ("pending", "Waiting for the bot worker…"),
                                                   "Thinking…"), size="2", color=rx.color("gray", 11)),
                                  spacing="2", align="center", data_testid="answer-progress"),
                    ),
                ),
                rx.cond(ChatState.live_error != "", error_text(ChatState.live_error)),
                testid="live-answer",
            ),
            rx.cond(ChatState.waiting_for_worker, waiting_notice()),
            spacing="3",
            width="100%",
        ),
    )


def no_messages() -> rx.Component:
    return rx.center(
        rx.vstack(
            rx.icon("messages-square", size=32, color=rx.color("gray", 8)),
            rx.text("Say hello", weight="medium"),
            rx.text("Messages you send here go through the bot's whole agent chain, with its tools, "
                    "as if you wrote to it on Discord. Only you see this conversation.",
                    size="2", color=rx.color("gray", 11), text_align="center", max_width="28rem"),
            align="center",
            spacing="2",
        ),
        padding="3rem 1rem",
        width="100%",
    )


def composer() -> rx.Component:
    """The message box and the send button (Enter sends, Shift+Enter starts a new line)."""
    return rx.form(
        rx.hstack(
            rx.text_area(
                value=ChatState.draft,
                on_change=ChatState.set_draft,
                placeholder=f"Message {ChatState.bot_name}…",
                name="message",
                aria_label="Message",
                rows="2",
                resize="vertical",
                width="100%",
                enter_key_submit=True,
            ),
            rx.button(rx.icon("send-horizontal", size=16), "Send", type="submit", loading=ChatState.sending,
                      disabled=ChatState.live_id > 0, size="3"),
            align="end",
            spacing="3",
            width="100%",
        ),
        on_submit=ChatState.send,
        width="100%",
    )


def chat_tab() -> rx.Component:
    """The Test Chat tab's content."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.hstack(rx.icon("flask-conical", size=16, color=rx.color("gray", 10)),
                          rx.text("Test conversation", weight="medium", size="2"), spacing="2", align="center"),
                rx.button(rx.icon("rotate-ccw", size=14), "Reset conversation", variant="soft", color_scheme="gray",
                          size="1", on_click=ChatState.reset_chat),
                justify="between",
                align="center",
                width="100%",
            ),
            rx.divider(),
            rx.cond(
                ChatState.chat_loaded,
                rx.auto_scroll(
                    rx.cond(
                        ChatState.has_turns,
                        rx.vstack(rx.foreach(ChatState.turns, turn_view), live_turn(), spacing="4", width="100%"),
                        no_messages(),
                    ),
                    height="min(60vh, 36rem)",
                    width="100%",
                    padding_right="0.5rem",
                    data_testid="chat-history",
                ),
                rx.center(rx.spinner(size="3"), height="12rem", width="100%"),
            ),
            rx.cond(ChatState.chat_error != "",
                    rx.callout(ChatState.chat_error, icon="triangle-alert", color_scheme="red", width="100%")),
            composer(),
            spacing="3",
            width="100%",
        ),
        width="100%",
        size="3",
    )


def chat_page() -> rx.Component:
    return bot_page(CHAT, chat_tab())
