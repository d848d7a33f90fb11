"""A conversation's message list that keeps its newest message in view: like ``rx.auto_scroll`` it
follows the end of the list as messages arrive, and when a sticky bar below it (the message box)
covers the list's end, it also scrolls the page just enough to show that end above the bar. An empty
list (no message yet, only its placeholder) leaves the page where it is: on a phone the page's header
and tabs stay in view."""

from __future__ import annotations

import logging
from typing import Any

from reflex.components.component import Component
from reflex.components.core.auto_scroll import AutoScroll
from reflex.vars.base import Var

logger = logging.getLogger(__name__)

COVER_TESTID = "composer"  # the sticky message box under the list


class ChatHistory(AutoScroll):
    """``rx.auto_scroll`` that also keeps its end above the element ``data-testid="composer"``."""

    @classmethod
    def create(cls, *children: Any, empty: Var[bool] | bool = False, **props: Any) -> Component:
        """``empty``: the list holds no message yet (nothing to read): the page is not scrolled for it."""
        return super().create(*children, data_empty=empty, **props)

    def add_hooks(self) -> list[str | Var]:
        ref = self.get_ref()
        cover = COVER_TESTID
        hooks = list(super().add_hooks())
        hooks += [
            f"const shownHeight_{ref} = useRef(0);",
            f"""
useEffect(() => {{
    const container = {ref}.current;
    if (!container) return;
    const showEnd = () => {{
        // Nothing to read: the page stays where it is (its header and tabs in view).
        if (container.dataset.empty === "true") return;
        // Only when the list grew (a new message, a longer answer) and follows its end.
        if (container.scrollHeight === shownHeight_{ref}.current) return;
        shownHeight_{ref}.current = container.scrollHeight;
        if (container.scrollHeight - container.scrollTop - container.clientHeight > 50) return;
        const cover = document.querySelector('[data-testid="{cover}"]');
        if (!cover) return;
        const hidden = container.getBoundingClientRect().bottom - cover.getBoundingClientRect().top;
        if (hidden > 0) window.scrollBy(0, Math.ceil(hidden));
    }};
    showEnd();
    const observer = new ResizeObserver(showEnd);
    for (const child of container.children) observer.observe(child);
    return () => observer.disconnect();
}});
""",
        ]
        return hooks


chat_history = ChatHistory.create
