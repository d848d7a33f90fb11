"""The "details" toggle beside a message in plain words: the technical text behind it (an error's own
words, an address, a module name), folded away. The pages fill it in for admins only
(:mod:`grobot.core.plain_text`), so it shows nothing to testers."""

from __future__ import annotations

import reflex as rx

from grobot.components.safe_text import safe_text


def technical_details(detail: rx.Var[str] | str, *, label: str = "Details") -> rx.Component:
    """``detail`` behind a closed "Details" toggle (nothing when it is empty)."""
    body = rx.el.details(
        rx.el.summary(rx.text(label, as_="span", size="1"), cursor="pointer", color=rx.color("gray", 11),
                      width="fit-content"),
        safe_text(detail, size="1", color=rx.color("gray", 11), white_space="pre-wrap", word_break="break-word",
                  font_family="var(--code-font-family)", margin_top="0.25rem"),
        data_testid="technical-details",
    )
    if isinstance(detail, str):
        return body if detail else rx.fragment()
    return rx.cond(detail != "", body)
