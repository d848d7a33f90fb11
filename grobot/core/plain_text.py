"""Plain words for what admins and testers read: a technical text (an exception's name, an address, a
module name, a score) split into a sentence for everyone and its detail, which only admins see (the web
app puts it behind a "details" toggle). The full text stays in the logs."""

from __future__ import annotations

import re
from dataclasses import dataclass

# What no plain sentence holds: an exception's name, a traceback, an OS error, an HTTP status, an aiohttp
# connection key ("ssl:default"), URL escapes, a Python module's dotted name, the Tool Router's scores; and
# (``_ADDRESSES``) a URL or a host:port, which only admins read.
_CODE = r"""\b[A-Z][A-Za-z]*(?:Error|Exception|Failure)\b
      | \bTraceback\b | \bErrno\b | \bHTTP\ \d{3}\b | \bssl:\w | %[0-9A-Fa-f]{2}
      | \b(?:grobot|bot_worker|aiohttp|httpx|asyncio|mcp)\.[a-z_][a-z_.]*
      | \b(?:embeddings\+)?words:\ \S+\ \d\.\d\d"""
_ADDRESSES = r""" | :// | \b[a-z0-9-]+(?:\.[a-z0-9-]+)+:\d{2,5}\b"""
_TECHNICAL = re.compile(_CODE + _ADDRESSES, re.VERBOSE)
_TECHNICAL_CODE = re.compile(_CODE, re.VERBOSE)
# " at http://x:1/v1" (not the punctuation after it)
_ADDRESS = re.compile(r"\s+(?:at|on|to|from)\s+(?:\S+://|[a-z0-9-]+(?:\.[a-z0-9-]+)+:\d)\S*?(?=[:;,.)]?(?:\s|$))")
_PARENTHESES = re.compile(r"\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")  # one level of nested parentheses


@dataclass(frozen=True)
class Plain:
    """A text as people read it: ``text`` for everyone, ``detail`` for admins only ("" when there is none)."""

    text: str
    detail: str = ""


def looks_technical(text: str, *, addresses: bool = True) -> bool:
    """Whether ``text`` holds something only a developer reads (see ``_TECHNICAL``); ``addresses``: a URL or
    a host:port counts too."""
    return bool((_TECHNICAL if addresses else _TECHNICAL_CODE).search(text or ""))


def without_technical(text: str, *, fallback: str, addresses: bool = True) -> Plain:
    """``text`` with its technical parts moved to the detail: a technical part in parentheses is taken
    out ("the tools could not be loaded (OSError: x); answering without them" reads "the tools could not
    be loaded; answering without them"), a technical tail after ": " too; a text that is still technical
    reads ``fallback``. ``addresses`` False (what admins read): a URL or host:port may stay in the text."""

    def technical(part: str) -> bool:
        return looks_technical(part, addresses=addresses)

    whole = (text or "").strip()
    text = " ".join(whole.split())
    if not technical(text):
        return Plain(text)
    first = whole.splitlines()[0].strip()
    if first != whole and first and not technical(first):  # a traceback under its message
        return Plain(first, whole)
    kept = _PARENTHESES.sub(lambda m: "" if technical(m.group(1)) else m.group(0), text).strip()
    if addresses:
        kept = _ADDRESS.sub("", kept).strip()
    if technical(kept):
        head, sep, _tail = kept.partition(": ")
        kept = head if sep and head and not technical(head) else ""
    return Plain(kept or fallback, whole)


def bot_status(detail: str) -> Plain:
    """Why a bot is stopped, offline or in error (its status's detail), for its header and the lists."""
    detail = " ".join((detail or "").split())
    lowered = detail.lower()
    if lowered.startswith(("cannot reach discord", "discord could not be reached")):
        return Plain("Discord could not be reached; the worker tries again", detail)
    if re.match(r"[A-Z][A-Za-z]*(?:Error|Exception)\b", detail):
        return Plain("the bot stopped with an error; the worker starts it again", detail)
    return without_technical(detail, fallback="the bot stopped with an error")


def run_error(message: str) -> Plain:
    """Why a run could not answer (Test Chat): the message without its technical parts."""
    return without_technical(message, fallback="something went wrong while answering")
