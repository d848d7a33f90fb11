"""Scripts the pages run in the browser: when they run."""

from __future__ import annotations


def after_paint(script: str) -> str:
    """``script`` (which reads the layout: a size, a position) run once the page has painted: read while
    React is still adding the page, it would make the browser lay the whole page out an extra time."""
    return f"requestAnimationFrame(() => setTimeout(() => {{ {script} }}, 0))"
