"""The time zones a message names, for a tool argument that takes an IANA time zone.

Small models map places to zones badly: for "What time is it in Sydney?" SmolLM2-135M writes
"Etc/UTC", for Tokyo "UTC+08:30". The Parameter Extractor therefore offers a time-zone argument
only the zones the user's message names (:func:`zone_choices`: "Sydney" -> Australia/Sydney,
"New York" -> America/New_York, "Europe/Paris" as written, "UTC"), and the executor reads a
place written for a zone as its zone in every call, in both agent modes (:func:`read_zones`:
"Tokyo" -> Asia/Tokyo). A message that writes a zone that does not exist ("Mars/Olympus") gets
no choices: the tool says the zone is unknown.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import zoneinfo
from typing import Any

# The areas of the IANA database whose zones are named after a place ("Asia/Tokyo"); the
# others (Etc, US, Canada, Brazil ...) are aliases, and Antarctica's are research stations.
PLACE_AREAS = frozenset({"Africa", "America", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"})
# Zone names that are also common words or given names: never read as a place in a message.
NOT_PLACES = frozenset({
    "act", "christmas", "easter", "factory", "greenwich", "jersey", "midway", "navajo", "north", "oral",
    "regina", "resolute", "reunion", "south", "stanley", "universal", "victoria", "virgin", "wake", "west", "zulu",
})
ABBREVIATIONS = {"utc": "UTC", "gmt": "GMT"}
MAX_PLACE_WORDS = 4  # "Port of Spain", "Isle of Man"

_ZONE_ARGUMENT = re.compile(r"(?:^|_)(?:time_?zone|tz)$", re.IGNORECASE)
_WRITTEN_ZONE = re.compile(r"(?<![\w/])[A-Za-z][\w+-]*(?:/[A-Za-z][\w+-]*)+")
_WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


def is_zone_argument(name: str, schema: Any) -> bool:
    """Whether a tool's argument ``name`` (its JSON schema ``schema``) takes a time zone."""
    if not isinstance(schema, dict) or schema.get("type", "string") != "string" or "enum" in schema:
        return False
    description = str(schema.get("description") or "").lower()
    return bool(_ZONE_ARGUMENT.search(name)) or ("iana" in description and "zone" in description)


def zone_arguments(schema: Any) -> list[str]:
    """The arguments of a tool's input ``schema`` that take a time zone."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return [name for name, prop in (properties or {}).items() if is_zone_argument(name, prop)]


def read_zones(arguments: dict[str, Any], schema: Any) -> list[tuple[str, str, str]]:
    """Replace, in ``arguments``, a place written for a time zone by its zone ("Tokyo" -> "Asia/Tokyo");
    returns ``(argument, as written, zone)`` for each."""
    read = []
    for name in zone_arguments(schema):
        value = arguments.get(name)
        zone = resolve(value) if isinstance(value, str) else None
        if zone is not None and zone != value:
            arguments[name] = zone
            read.append((name, str(value), zone))
    return read


def _fold(text: str) -> str:
    """Lower case without accents ("São Paulo" -> "sao paulo"), underscores as spaces; one
    character for each of ``text`` (positions stay those of ``text``)."""
    def one(char: str) -> str:
        plain = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
        return plain[:1].lower() if plain[:1].isalnum() or plain[:1] in "'-" else " "

    return "".join(one(char) for char in text)


def _normal(text: str) -> str:
    """:func:`_fold` with single spaces: how a place is looked up."""
    return " ".join(_fold(text).split())


@functools.lru_cache(maxsize=1)
def _index() -> tuple[dict[str, str], dict[str, str]]:
    """``(lower-case zone name -> zone, place -> zone)`` from the IANA database Python has."""
    names = sorted(zoneinfo.available_timezones())
    exact = {name.lower(): name for name in names}
    places: dict[str, str] = {}
    for name in names:  # sorted: "Asia/Singapore" before the alias "Singapore"
        parts = name.split("/")
        if len(parts) == 2 and parts[0] in PLACE_AREAS:
            place = parts[1]
        elif len(parts) == 1 and name.isalpha() and not name.isupper() and len(name) >= 4:
            place = name  # a country's own zone: Japan, Poland, Singapore
        else:
            continue
        key = _normal(place)
        if key not in NOT_PLACES:
            places.setdefault(key, name)
    return exact, places


def resolve(value: str) -> str | None:
    """The zone ``value`` names: a zone's own name in any case, "UTC", or a place ("Tokyo"); None: none."""
    exact, places = _index()
    text = value.strip()
    return exact.get(text.lower()) or ABBREVIATIONS.get(text.lower()) or places.get(_normal(text))


def zone_choices(text: str) -> list[str]:
    """The zones ``text`` names, in the order it names them (empty: none, or a zone that does not exist)."""
    exact, places = _index()
    found: list[tuple[int, str]] = []
    for match in _WRITTEN_ZONE.finditer(text):
        zone = exact.get(match.group(0).lower())
        if zone is not None:
            found.append((match.start(), zone))
        elif all(part[:1].isupper() for part in match.group(0).split("/")):
            return []  # "Mars/Olympus": the user means a zone that does not exist; the tool says so
    blanked = _WRITTEN_ZONE.sub(lambda m: " " * len(m.group(0)), text)
    words = [(m.start(), m.group(0)) for m in _WORD.finditer(_fold(blanked))]
    index = 0
    while index < len(words):
        for size in range(min(MAX_PLACE_WORDS, len(words) - index), 0, -1):  # the longest place first
            key = " ".join(word for _, word in words[index:index + size])
            zone = ABBREVIATIONS.get(key) or places.get(key)
            if zone is not None:
                found.append((words[index][0], zone))
                index += size
                break
        else:
            index += 1
    return list(dict.fromkeys(zone for _, zone in sorted(found)))
