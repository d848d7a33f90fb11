"""The one way the web app shows text it does not control (issue 17).

What an LLM answers, what a tool returns, the chain's thinking steps, notes, memories, log
lines, file names and Discord names are all attacker-controlled: anyone on Discord can make a
bot repeat text, and tool results come from servers GroBot does not run. Show them with:

- :func:`safe_text`: plain text (React escapes it; line breaks kept), for everything that is
  not meant as markdown;
- :func:`safe_markdown`: markdown for the bot's answers, with no raw HTML (an HTML tag shows
  as the characters it is made of), links only to ``http``, ``https`` and ``mailto`` targets
  and always shown with their real target, and images that are never fetched by the page: an
  image is a link that opens it in a new tab when the admin clicks it.

Reflex's ``rx.markdown`` turns raw HTML on by default (``rehype-raw``) and loads images at
once: never use it directly for untrusted text.
"""

from __future__ import annotations

import logging
from typing import Any

import reflex as rx
from reflex.vars.base import Var
from reflex_components_core.el.elements.inline import A

logger = logging.getLogger(__name__)

# A remark plugin that turns raw HTML into plain text (a block of HTML into a paragraph of text), so that
# ``<script>``, ``<iframe>``, ``<style>`` or ``<img onerror>`` shows as text and never as markup.
_HTML_AS_TEXT = Var(
    _js_expr=(
        "(() => (tree) => { const blocks = ['root', 'blockquote', 'listItem']; "
        "const walk = (node) => { if (!Array.isArray(node.children)) { return; } "
        "node.children = node.children.map((child) => { if (child.type !== 'html') { walk(child); return child; } "
        "const text = { type: 'text', value: String(child.value ?? '') }; "
        "return blocks.includes(node.type) ? { type: 'paragraph', children: [text] } : text; }); }; "
        "walk(tree); })"
    )
)

# Only these URL schemes become clickable (checked in the browser, after react-markdown's own
# URL filter, which already drops ``javascript:``, ``vbscript:``, ``data:`` and the like).
_SAFE_URL = r"/^(https?:\/\/|mailto:)/i"
_HREF_OK = Var(_js_expr=f"{_SAFE_URL}.test(String(props.href ?? '').trim())", _var_type=bool)
_HREF = Var(_js_expr="String(props.href ?? '')", _var_type=str)
# An autolink (``https://x.org``, ``a@b.org``) already shows its target as its text.
_HREF_IS_TEXT = Var(
    _js_expr=("(typeof children === 'string' && "
              "(children === props.href || 'mailto:' + children === props.href))"),
    _var_type=bool,
)
_SRC_OK = Var(_js_expr=f"{_SAFE_URL}.test(String(props.src ?? '').trim())", _var_type=str)
_SRC = Var(_js_expr="String(props.src ?? '')", _var_type=str)
_ALT = Var(_js_expr="String(props.alt || 'image')", _var_type=str)
_CHILDREN = Var(_js_expr="children", _var_type=str)

LINK_REL = "noopener noreferrer nofollow"


def _link(_children: Any) -> rx.Component:
    """A markdown link: clickable only for http(s)/mailto, its real target always visible."""
    target = rx.text(" (", _HREF, ")", as_="span", size="1", color=rx.color("gray", 11), data_link_target="")
    return rx.el.span(
        rx.cond(
            _HREF_OK,
            rx.fragment(
                A.create(_CHILDREN, href=_HREF, target="_blank", rel=LINK_REL, referrer_policy="no-referrer",
                        color=rx.color("accent", 11), text_decoration="underline"),
                rx.cond(_HREF_IS_TEXT, rx.fragment(), target),
            ),
            rx.el.span(_CHILDREN, data_unsafe_link=""),  # not a link: just its text
        ),
    )


def _image(_children: Any) -> rx.Component:
    """A markdown image: never loaded by the page; a click opens it in a new tab."""
    return rx.el.span(
        rx.cond(
            _SRC_OK,
            A.create(
                rx.icon("image", size=14), " ", _ALT, " ",
                rx.text("(image at ", _SRC, ", not loaded: click to open)", as_="span", size="1",
                        color=rx.color("gray", 11)),
                href=_SRC, target="_blank", rel=LINK_REL, referrer_policy="no-referrer",
                color=rx.color("accent", 11), data_image_link="",
            ),
            rx.el.span("[", _ALT, "]", data_unsafe_image=""),
        ),
    )


SAFE_COMPONENT_MAP: dict[str, Any] = {"a": _link, "img": _image}


def safe_markdown(text: Var[str] | str, **props: Any) -> rx.Component:
    """Untrusted markdown (a bot's answer) without raw HTML, foreign loads or unsafe links."""
    from reflex_components_markdown.markdown import Markdown, markdown

    return rx.box(
        Markdown.create(
            text,
            component_map=SAFE_COMPONENT_MAP,
            remark_plugins=Var.create([markdown.plugin.gfm, _HTML_AS_TEXT]).to(list),
            rehype_plugins=Var.create([]).to(list),
        ),
        data_safe_markdown="",
        overflow_wrap="anywhere",
        **props,
    )


def safe_text(*parts: Var[str] | str, **props: Any) -> rx.Component:
    """Untrusted plain text (line breaks kept), never interpreted as markup."""
    if not props.get("truncate"):
        props.setdefault("white_space", "pre-wrap")
        props.setdefault("overflow_wrap", "anywhere")
    return rx.text(*parts, **props)
