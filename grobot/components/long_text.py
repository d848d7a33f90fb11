"""Long texts in their place: an entry of thousands of characters (a memory, a note) shows its first lines
with "Show more" (in the browser, no server round trip), and a prompt field counts its tokens against the
context window of the model that reads it, with a warning when it takes much of it."""

from __future__ import annotations

from typing import Any

import reflex as rx

from grobot.components.safe_text import safe_text

CLAMP_LINES = 6
CLAMP_CHARS = 480  # shorter texts are shown whole, with no toggle
WARN_SHARE = 0.25  # a prompt field that takes more of the context than this is warned about


def clamped_text(text: rx.Var[str], *, lines: int = CLAMP_LINES, **props: Any) -> rx.Component:
    """Untrusted ``text`` (see :func:`safe_text`); past ``CLAMP_CHARS`` characters, its first ``lines`` lines and a
    "Show more" / "Show less" toggle (a checkbox: the page's CSS opens the text while it is ticked)."""
    shown = safe_text(text, class_name="grobot-clamped", **props)
    toggle = rx.el.label(
        rx.el.input(type="checkbox", class_name="grobot-more-toggle", style={"position": "absolute", "opacity": "0",
                                                                            "width": "1px", "height": "1px"}),
        rx.el.span("Show more", class_name="grobot-more"),
        rx.el.span("Show less", class_name="grobot-less"),
        cursor="pointer",
        color=rx.color("accent", 11),
        font_size="var(--font-size-1)",
        position="relative",
        width="fit-content",
        data_testid="show-more",
    )
    opened = "&:has(.grobot-more-toggle:checked)"
    return rx.cond(
        text.length() > CLAMP_CHARS,  # type: ignore[attr-defined]
        rx.vstack(
            shown,
            toggle,
            spacing="1",
            width="100%",
            style={
                "& .grobot-clamped": {"display": "-webkit-box", "WebkitBoxOrient": "vertical",
                                      "WebkitLineClamp": str(lines), "overflow": "hidden"},
                f"{opened} .grobot-clamped": {"display": "block", "WebkitLineClamp": "unset", "overflow": "visible"},
                "& .grobot-less": {"display": "none"},
                f"{opened} .grobot-less": {"display": "inline"},
                f"{opened} .grobot-more": {"display": "none"},
                "& label:has(.grobot-more-toggle:focus-visible)": {"outline": f"2px solid {rx.color('accent', 8)}",
                                                                    "outline_offset": "2px"},
            },
            data_clamped="",
        ),
        shown,
    )


def context_use(tokens: int, context: int, model: str) -> tuple[str, str]:
    """``(text, level)`` of a prompt field's size against ``model``'s ``context`` window: level ``""``, ``"warn"``
    (more than a quarter of it) or ``"over"`` (all of it or more)."""
    if not context:
        return f"About {tokens:,} tokens.", ""
    share = tokens / context
    text = f"About {tokens:,} tokens of the {context:,}-token context of {model}"
    if share >= 1:
        return (f"{text}: longer than the whole context. The model cannot read it with a conversation: shorten it "
                "or choose a model with a larger context."), "over"
    if share > WARN_SHARE:
        return (f"{text} ({share:.0%}): little is left for the conversation, the tools and the answer. Shorten it "
                "or choose a model with a larger context."), "warn"
    return f"{text}.", ""


def token_meter(text: rx.Var[str], level: rx.Var[str], *, testid: str) -> rx.Component:
    """The line under a prompt field that says its size against the model's context (amber, red past a limit)."""
    color = rx.match(level, ("over", rx.color("red", 11)), ("warn", rx.color("amber", 11)), rx.color("gray", 11))
    return rx.hstack(
        rx.cond(level != "", rx.icon("triangle-alert", size=12, flex_shrink="0", margin_top="2px")),
        rx.text(text, size="1"),
        spacing="1",
        align="start",
        color=color,
        role=rx.cond(level != "", "alert", "status"),
        data_level=level,
        data_testid=testid,
    )
