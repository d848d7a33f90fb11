"""Grounded lines: what a tool's result says, in one short exact line, whatever the model writes.

A small model given a tool result often answers beside it (a greeting, a snippet about
``datetime``, a time it made up). Each result of a run therefore has a line that states it,
built from the result itself, per kind of result:

- a **time** (any JSON holding ISO 8601 date-times, as ``datetime_now`` or mcp-server-time
  return): "It is 06:10 on Saturday 28 November 2026 in Asia/Tokyo."; two zones of one instant
  (a conversion): "15:00 in Europe/London is 10:00 in America/New_York (Friday 27 November 2026).";
- a **list** (a JSON array): "Files: notes.txt, recipes.md.";
- a **text** (a file's, a page's): 'notes.txt: "Shopping list: milk, eggs, bread."';
- a **confirmation** (a tool that changes things, which worked): 'Remembered: "the team meeting is on Friday".';
- an **error**: "That did not work: unknown time zone 'Mars/Olympus'.";
- an **object** (other JSON): "Weather: city: Paris; temperature: 21.".

:meth:`Grounded.stated_in` says whether a reply already states the result (its time, its items,
enough of its words), so that a model that grounds itself keeps its own words.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from grobot.core.agents.reply_check import loop_at
from grobot.core.agents.tool_router import content_words
from grobot.core.tools.base import ToolSpec
from grobot.core.tools.images import DESCRIBED

MAX_ITEMS = 10  # items of a list shown in its line
MAX_TEXT_CHARS = 300  # characters of a text shown in its line
MAX_REASON_CHARS = 200
MAX_FIELDS = 5  # fields of an object shown in its line
ITEM_CHARS = 120
TEXT_SHARE = 0.3  # share of a text's words a reply must hold to state it (a summary says fewer)
WORDS_SHARE = 0.5  # the same for an item, a confirmation or an object
ERROR_WORDS = 2  # words of an error's reason a reply must hold to say it (at most half of them): in its own words

# Verbs of tool names that say what a tool does, not what it returns: left out of a list's label
# ("files_list" lists "Files").
_ACTION_WORDS = frozenset("list lists read get gets show fetch find search query lookup look retrieve view".split())
# Keys that name an item of a list, best first (a file's "path", a note's "note").
_ITEM_KEYS = ("name", "title", "path", "filename", "file", "note", "text", "content", "summary", "label", "id")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?$")
_FAILED_PREFIX = re.compile(r"^Tool [\w.-]+ (?:failed|was not called): ")
_FALLBACK_PREFIX = re.compile(r"^\(answered by the fallback tool [\w.-]+\)\n")


@dataclass(frozen=True)
class Grounded:
    """The line that states one tool result, and what a reply must say to state it too."""

    kind: str  # time | list | text | confirmation | error | object | image (images only: stated by being shown)
    line: str
    times: tuple[tuple[int, int], ...] = ()  # (hour, minute) a reply must name (a time result)
    items: tuple[str, ...] = ()  # what a reply must name of a list, each item
    words: frozenset[str] = frozenset()  # the result's meaningful words (text, confirmation, error, object)
    share: float = WORDS_SHARE
    most: int | None = None  # the most of ``words`` a reply must hold (an error, said in other words)
    places: tuple[tuple[str, ...], ...] = ()  # a time's places the user named: a reply names each (any spelling given)
    dates: tuple[date, ...] = ()  # a time's dates: a reply names no other year, month, day or weekday
    zones: tuple[str, ...] = ()  # a time's zones: a reply names no other zone id

    def stated_in(self, reply: str) -> bool:
        """Whether ``reply`` states this result (its times, its items, enough of its words) and, for a
        time, names the place asked about and no other date or zone."""
        if self.kind == "image":  # the images themselves go with the answer
            return True
        if self.kind == "time":
            return (bool(self.times) and all(_time_said(reply, hour, minute) for hour, minute in self.times)
                    and all(any(_names(reply, p) for p in place) for place in self.places)
                    and not _other_date_or_zone(reply, self.dates, self.zones))
        if self.kind == "list":
            return bool(self.items) and all(_item_said(item, reply) for item in self.items)
        if not self.words:
            return False
        needed = max(1.0, self.share * len(self.words))
        return len(self.words & content_words(reply)) >= (min(needed, self.most) if self.most else needed)


def label(name: str) -> str:
    """A tool's name as words: ``time__get_current_time`` -> "get current time"."""
    return " ".join(name.split("__")[-1].replace("-", "_").split("_")).strip() or name


def _list_label(name: str) -> str:
    words = [w for w in label(name).split() if w.lower() not in _ACTION_WORDS]
    text = " ".join(words) or label(name)
    return text[:1].upper() + text[1:]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…", '"', "”")) else text + "."


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def ground(spec: ToolSpec | None, name: str, arguments: dict[str, Any], content: str, *, is_error: bool,
           asked: str = "") -> Grounded:
    """The grounded line of one call of ``name`` (``spec``: the tool, if known) that returned ``content``.

    ``asked``: the user's message (a time it names itself is not one a reply must repeat).
    """
    body = _FALLBACK_PREFIX.sub("", content.strip(), count=1)
    shown = DESCRIBED.sub("", body).strip()
    if shown != body and not is_error:  # the tool's images reach the user with the answer: its text is grounded
        if not shown:
            return Grounded("image", "")
        body = shown
    if is_error:
        return _error(name, body)
    value = _json(body)
    times = _times(value) if value is not None else []
    if times:
        return _time(times, asked)
    if spec is not None and (spec.writes or spec.from_user):
        return _confirmation(spec, name, arguments, body, value)
    if isinstance(value, list):
        return _list(name, value)
    if isinstance(value, dict):
        return _object(name, value)
    if value is not None and not isinstance(value, str):
        text = json.dumps(value)
        return Grounded("object", f"{_list_label(name)}: {text}.", words=frozenset({text.lower()}) & content_words(text))
    return _text(name, arguments, value if isinstance(value, str) else body)


def _json(text: str) -> Any:
    if not text or text[0] not in "[{\"" and not text[0].isdigit():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------- errors


def _error(name: str, body: str) -> Grounded:
    reason = _FAILED_PREFIX.sub("", body.splitlines()[0] if body else "", count=1)
    reason = re.sub(rf"^{re.escape(name)}: ", "", reason).replace(name, label(name))  # a tool's name reads as words
    reason = _cut(reason, MAX_REASON_CHARS).rstrip(".") or "the tool failed"
    return Grounded("error", f"That did not work: {reason}.", words=frozenset(content_words(reason)), most=ERROR_WORDS)


# --------------------------------------------------------------------------- times


@dataclass(frozen=True)
class _Moment:
    zone: str
    at: datetime


def _times(value: Any, zone: str = "") -> list[_Moment]:
    """Every ISO date-time in a JSON value, with the time zone named beside it (else its offset)."""
    found: list[_Moment] = []
    if isinstance(value, dict):
        here = next((str(v) for k, v in value.items() if isinstance(v, str) and "zone" in k.lower() and v.strip()), zone)
        for item in value.values():
            found += _times(item, here)
    elif isinstance(value, list):
        for item in value:
            found += _times(item, zone)
    elif isinstance(value, str) and _DATETIME.match(value.strip()):
        try:
            at = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return []
        found.append(_Moment(zone or _offset(at), at))
    return found


def _offset(at: datetime) -> str:
    offset = at.strftime("%z")
    return f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"


def _day(at: datetime) -> str:
    return f"{at.strftime('%A')} {at.day} {at.strftime('%B %Y')}"


def _time(moments: list[_Moment], asked: str) -> Grounded:
    unique = list({(m.zone, m.at.isoformat()): m for m in moments}.values())
    if len(unique) == 2 and _same_instant(unique[0].at, unique[1].at):
        first, second = unique
        if first.at.date() == second.at.date():
            line = (f"{first.at:%H:%M} in {first.zone} is {second.at:%H:%M} in {second.zone} "
                    f"({_day(second.at)}).")
        else:
            line = (f"{first.at:%H:%M} on {_day(first.at)} in {first.zone} is {second.at:%H:%M} on {_day(second.at)} "
                    f"in {second.zone}.")
    elif len(unique) == 1:
        only = unique[0]
        line = f"It is {only.at:%H:%M} on {_day(only.at)} in {only.zone}."
    else:
        line = "; ".join(f"{m.zone}: {m.at:%H:%M} on {_day(m.at)}" for m in unique[:MAX_ITEMS]) + "."
    wanted = [(m.at.hour, m.at.minute) for m in unique if not _time_said(asked, m.at.hour, m.at.minute)]
    places = tuple(dict.fromkeys(p for p in (_place(m.zone) for m in unique) if p and _names(asked, p[0])))
    return Grounded("time", line, times=tuple(dict.fromkeys(wanted or [(m.at.hour, m.at.minute) for m in unique])),
                    places=places, dates=tuple(dict.fromkeys(m.at.date() for m in unique)),
                    zones=tuple(dict.fromkeys(m.zone for m in unique)))


def _place(zone: str) -> tuple[str, ...]:
    """How a reply may name the place of an IANA zone: its city ("America/New_York": "New York"), or the id."""
    if "/" not in zone:
        return ()
    return (zone.rsplit("/", 1)[1].replace("_", " "), zone)


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE) is not None


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_MONTH = "|".join(_MONTHS)
_YEAR_SAID = re.compile(r"(?<![\d:.])(?:19|20)\d\d(?![\d:])")
_WEEKDAY_SAID = re.compile(rf"\b({'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
# A month named with a number ("May I" is no month): "29 November", "29th of November", "November 29th",
# "November 2026" (a day of 1-2 digits, else a year).
_MONTH_SAID = re.compile(rf"(?<![\d:.])(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b"
                         rf"|\b({_MONTH}),?\s+(\d{{1,4}})(?:st|nd|rd|th)?(?![\d:])")
_ZONE_SAID = re.compile(r"\b[A-Z][A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?")


def _other_date_or_zone(reply: str, dates: tuple[date, ...], zones: tuple[str, ...]) -> bool:
    """Whether ``reply`` names a year, month, weekday, day of a month or zone id that none of ``dates`` and
    ``zones`` is (a small model's made-up date beside the right time)."""
    if dates:
        years = {d.year for d in dates}
        if any(int(y.group()) not in years for y in _YEAR_SAID.finditer(reply)):
            return True
        weekdays = {_WEEKDAYS[d.weekday()].lower() for d in dates}
        if any(w[1].lower() not in weekdays for w in _WEEKDAY_SAID.finditer(reply)):
            return True
        days = {(d.day, _MONTHS[d.month - 1]) for d in dates}
        for said in _MONTH_SAID.finditer(reply):
            month, number = said[2] or said[3], said[1] or said[4]
            if month not in {m for _, m in days} or (len(number) <= 2 and (int(number), month) not in days):
                return True
    return any(z.group() not in zones for z in _ZONE_SAID.finditer(reply))


def _same_instant(a: datetime, b: datetime) -> bool:
    try:
        return a == b and a.utcoffset() is not None and b.utcoffset() is not None
    except TypeError:
        return False


def _time_said(text: str, hour: int, minute: int) -> bool:
    """Whether ``text`` names the time ``hour:minute`` (06:10, 6:10, 6.10, 6h10, 6:10 AM; 18:10 as 6:10 PM)."""
    if not text:
        return False
    hours = {hour, hour % 12 or 12}
    pattern = rf"(?<![\d:])0?(?:{'|'.join(str(h) for h in sorted(hours))})\s?[:.hH]\s?{minute:02d}(?!\d)"
    return re.search(pattern, text) is not None


# --------------------------------------------------------------------------- lists, objects, texts


def _item(value: Any) -> str:
    if isinstance(value, dict):
        for key in _ITEM_KEYS:
            if isinstance(value.get(key), (str, int, float)) and str(value[key]).strip():
                return str(value[key])
        scalars = [str(v) for v in value.values() if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        return scalars[0] if scalars else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return ", ".join(_item(v) for v in value)
    return str(value)


def _list(name: str, value: list[Any]) -> Grounded:
    items = [_cut(_item(v), ITEM_CHARS) for v in value]
    if not items:
        return Grounded("list", f"{_list_label(name)}: none.")
    shown = ", ".join(items[:MAX_ITEMS]) + (f" and {len(items) - MAX_ITEMS} more" if len(items) > MAX_ITEMS else "")
    return Grounded("list", f"{_list_label(name)}: {_sentence(shown)}", items=tuple(items[:MAX_ITEMS]))


def _item_said(item: str, reply: str) -> bool:
    if item.lower() in reply.lower():
        return True
    words = content_words(item)
    return bool(words) and len(words & content_words(reply)) >= WORDS_SHARE * len(words)


def _scalars(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            pairs += _scalars(item, f"{name} ")
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip():
            pairs.append((name.replace("_", " "), str(item)))
        elif isinstance(item, list) and item:
            pairs.append((name.replace("_", " "), ", ".join(_item(v) for v in item[:MAX_ITEMS])))
    return pairs


def _object(name: str, value: dict[str, Any]) -> Grounded:
    pairs = [(k, _cut(v, ITEM_CHARS)) for k, v in _scalars(value)][:MAX_FIELDS]
    if not pairs:
        return Grounded("object", f"{_list_label(name)}: nothing.")
    shown = "; ".join(f"{k}: {v}" for k, v in pairs)
    return Grounded("object", f"{_list_label(name)}: {_sentence(shown)}",
                    words=frozenset(w for _, v in pairs for w in content_words(v)))


def _text(name: str, arguments: dict[str, Any], text: str) -> Grounded:
    shown = _cut(text, MAX_TEXT_CHARS)
    if not shown:
        return Grounded("text", f"{_list_label(name)}: (empty).")
    source = next((str(v) for k, v in arguments.items() if isinstance(v, str) and _names_a_source(k) and v.strip()),
                  _list_label(name))
    return Grounded("text", f'{source}: "{shown}"', words=frozenset(content_words(shown)), share=TEXT_SHARE)


def _names_a_source(argument: str) -> bool:
    return re.search(r"(?:^|_)(?:path|file|filename|url|uri|page|name)$", argument.lower()) is not None


# --------------------------------------------------------------------------- confirmations


def _once(text: str) -> str:
    """``text`` up to where it starts repeating itself (a value a model looped: "Good times, good times, ...")."""
    at = loop_at(text)
    return text if at is None else text[:at].rstrip(" ,;:-") or text


def _confirmation(spec: ToolSpec, name: str, arguments: dict[str, Any], body: str, value: Any) -> Grounded:
    """A tool that changes things worked: what it kept or did, from the call's own words."""
    written = [str(arguments[a]) for a in spec.from_user if isinstance(arguments.get(a), str) and arguments[a].strip()]
    if not written:
        written = [str(v) for v in arguments.values() if isinstance(v, str) and v.strip()]
    what = _cut(_once(" ".join(written)), MAX_TEXT_CHARS)
    plain = body if value is None or isinstance(value, str) else ""
    plain = plain if isinstance(plain, str) else ""
    if spec.done:
        head = spec.done
    elif plain and len(plain) <= 60 and "\n" not in plain.strip():
        head = plain.strip().rstrip(".")
        head = head[:1].upper() + head[1:]
    else:
        head = f"Done ({label(name)})"
    if what and what.lower() not in head.lower():
        line = f'{head}: "{what}"' + ("" if what.endswith((".", "!", "?", "…")) else ".")
    else:
        line = _sentence(head)
    words = content_words(what) if what else content_words(head)
    return Grounded("confirmation", line, words=frozenset(words))
