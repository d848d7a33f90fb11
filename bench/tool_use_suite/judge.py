"""The judges of ``bench/tool_use.py``: pure functions of a task and what its run did.

:func:`lenient` is the bench's first judge: which tools were called, with what, and that an answer
came. :func:`strict` reads the reply as the user does: a task passes only when it passes the lenient
judge, every reply is prose (not tool-call markup, JSON, code or a repetition loop: :func:`reply_form`),
and, when a tool ran, the reply states the fact the tool returned in that very run (the time in the
zone asked, the file's items, the date, the note or memory confirmed, the error said plainly:
:func:`stated`). The facts are read from the tool results, never from fixed strings a clock or an
earlier task could change.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench.tool_use_suite.tasks import Task


@dataclass(frozen=True)
class ToolRun:
    """One tool call of a run and how it ended (its ``tool_call`` and ``tool_result`` events)."""

    name: str
    arguments: dict[str, Any]
    content: str = ""
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    """One message of the user and what the run did with it."""

    reply: str
    calls: tuple[ToolRun, ...] = ()
    error: str | None = None  # the run failed


@dataclass(frozen=True)
class Verdict:
    ok: bool
    why: str = ""
    forms: tuple[str, ...] = ()  # per turn: "" (prose), or markup, json, code, loop


FORM_WORDS = {"markup": "tool-call markup", "json": "JSON", "code": "code", "loop": "a repetition loop"}


# --------------------------------------------------------------------------- lenient


def _lenient_turn(task: Task, kind: str, turn: Turn) -> tuple[bool, str]:
    if turn.error:
        return False, f"the run failed: {turn.error}"
    if not turn.reply.strip():
        return False, "no answer"
    names = [c.name for c in turn.calls]
    if kind == "plain":
        return (not names, f"called {', '.join(names)}" if names else "")
    if kind == "clarify":
        called = [n for n in names if n in task.missing]
        if called:
            return False, f"called {called[0]} without its argument"
        return ("?" in turn.reply, "" if "?" in turn.reply else "did not ask")
    for group in task.tools:
        if not any(name in group for name in names):
            return False, f"expected one of {', '.join(group)}; called {', '.join(names) or 'nothing'}"
    first = next(c for c in turn.calls if c.name in task.tools[0])
    if task.check is not None and not task.check(first.arguments):
        return False, f"{first.name} got {json.dumps(first.arguments, ensure_ascii=False)}"
    failed = [c.name for c in turn.calls if c.is_error]
    if kind == "fails":
        return (bool(failed), "" if failed else "the tool did not fail")
    if failed:
        return False, f"{', '.join(failed)} failed"
    return True, ""


def lenient(task: Task, turns: list[Turn]) -> tuple[bool, str]:
    """The bench's first judge: the tools called (and their arguments), an answer, a question where one is due."""
    if len(turns) != len(task.messages):
        return False, f"{len(turns)} turn(s) for {len(task.messages)} message(s)"
    if task.kind == "followup":
        ok, why = _lenient_turn(task, "clarify", turns[0])
        if not ok:
            return False, f"first turn: {why}"
        ok, why = _lenient_turn(task, "tool", turns[1])
        return ok, f"second turn: {why}" if why else ""
    return _lenient_turn(task, task.kind, turns[0])


# --------------------------------------------------------------------------- words


def fold(text: str) -> str:
    """Lower case, accents and typographic quotes removed: what the word checks compare."""
    text = unicodedata.normalize("NFKD", text.lower().replace("ß", "ss"))
    text = "".join(c for c in text if not unicodedata.combining(c))
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


STOPWORDS = frozenset(
    "the and for with that this you your are was were has have had not but from into about what which who "
    "its it's her his she him they them their there here then than also just very some any all can will "
    "ada user users note notes is le la les des une est que qui pour dans avec sur pas mon mes ton tes "
    "los las del por con una que para como eso esta este der die das und ist mit ein eine den dem von "
    "sie ich mir".split()
)


def words(text: str) -> list[str]:
    """The words that carry a fact: numbers, and words of 3 letters or more that are not stop words."""
    return [w for w in re.findall(r"\w+", fold(text)) if w.isdigit() or (len(w) >= 3 and w not in STOPWORDS)]


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 4 and not short.isdigit() and long_.startswith(short)


def covered(fact: str, reply: str, share: float = 0.6, most: int = 8) -> bool:
    """The reply holds most of the fact's words (``share`` of them, at most ``most`` needed)."""
    wanted = list(dict.fromkeys(words(fact)))
    if not wanted:
        return True
    said = set(re.findall(r"\w+", fold(reply)))
    hits = sum(any(_same_word(w, s) for s in said) for w in wanted)
    return hits >= min(math.ceil(share * len(wanted)), most)


# --------------------------------------------------------------------------- the form of a reply

_MARKUP = re.compile(
    r"</?\s*(?:tool_call|tool_response|tool_calls|function_call|functions?|tools?)\s*>|<\|[a-z_]+\|>|\[TOOL_CALLS\]"
    r"|[\"'](?:name|arguments|tool|tool_name|function|parameters)[\"']\s*:",
    re.I,
)
_JSON = re.compile(r"[\{\[]\s*\"[^\"\n]{1,60}\"\s*:")
_CODE_LINE = re.compile(
    r"^\s*(?:import \w|from [\w.]+ import |def \w+\s*\(|class \w+\s*[:(]|print\(|console\.log|>>> |#include"
    r"|function \w+\s*\(|const \w+ =|let \w+ =|\w+ = \w+(?:\.\w+)*\()",
    re.M,
)
_DOTTED_CALL = re.compile(r"\b[a-z_]\w*(?:\.[a-z_]\w*)+\([^)\n]*\)", re.I)


def is_loop(text: str) -> bool:
    """The same words said again and again: a run of words repeated back to back (one word five times,
    more words three times), or a sentence said three times or more."""
    seq = re.findall(r"\w+", fold(text))
    for n in range(1, 16):
        need = 5 if n == 1 else 3
        for i in range(len(seq) - n * need + 1):
            chunk = seq[i:i + n]
            if all(seq[i + k * n:i + (k + 1) * n] == chunk for k in range(1, need)):
                return True
    sentences = [" ".join(re.findall(r"\w+", fold(s))) for s in re.split(r"[.!?\n]+", text)]
    counts = Counter(s for s in sentences if len(s.split()) >= 3)
    return any(n >= 3 for n in counts.values())


def reply_form(reply: str) -> str:
    """What a reply is when it is not prose: ``markup`` (tool-call markup), ``json``, ``code`` or ``loop``; else ""."""
    text = reply.strip()
    if _MARKUP.search(text):
        return "markup"
    if text[:1] in "{[":
        try:
            json.loads(text)
            return "json"
        except ValueError:
            pass
    if _JSON.search(text) or text.startswith("```json"):
        return "json"
    if "```" in text or _CODE_LINE.search(text) or _DOTTED_CALL.search(text):
        return "code"
    if is_loop(text):
        return "loop"
    return ""


# --------------------------------------------------------------------------- facts

MONTHS = {
    "en": "january february march april may june july august september october november december",
    "fr": "janvier fevrier mars avril mai juin juillet aout septembre octobre novembre decembre",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "de": "januar februar marz april mai juni juli august september oktober november dezember",
}
WEEKDAYS = {
    "en": "monday tuesday wednesday thursday friday saturday sunday",
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "es": "lunes martes miercoles jueves viernes sabado domingo",
    "de": "montag dienstag mittwoch donnerstag freitag samstag sonntag",
}
_FAILURE = re.compile(
    r"\bnot (?:be )?(?:found|find|exist|available|valid|recogni[sz]ed|allowed|possible|open|read|access)"
    r"|\b(?:can ?not|can't|couldn't|could not|unable to|wasn't able|was not able|failed|failure|error)\b"
    r"|\b(?:unknown|invalid|no such|doesn't exist|does not exist|don't have|do not have|doesn't have|does not have"
    r"|there is no|there's no|no file|isn't a (?:real|valid|known)|is not a (?:real|valid|known))\b"
    r"|\b(?:introuvable|n'existe pas|inexistant|impossible|erreur|inconnu|invalide|pas pu|pas trouve|ne trouve pas"
    r"|n'ai pas|aucun fichier|echec)"
    r"|\b(?:no existe|no encontr|no pude|no puedo|no se pudo|no hay|desconocid|invalid|imposible|no se encuentra"
    r"|no tengo)"
    r"|\b(?:nicht gefunden|existiert nicht|gibt es nicht|gibt es kein|konnte nicht|kann nicht|kann ich nicht|fehler"
    r"|unbekannt|ungultig|nicht moglich|keine datei|nicht vorhanden|nicht finden)"
)
_CONFIRMED = re.compile(
    r"\b(?:noted|remember|remembered|got it|saved|added|stored|made a note|take note|taken note|keep (?:that|it|this) in mind"
    r"|i'll keep|i will keep|recorded|won't forget|will not forget|jotted|written down|wrote down|note of|i've noted)"
    r"|\b(?:c'est note|j'ai note|bien note|enregistr|retenu|je retiens|souviendrai|memoris|ajoute|je garde|note que)"
    r"|\b(?:anotad|apuntad|guardad|guarde|recordare|entendido|registrad|tomo nota|tomado nota|anote|memorizad)"
    r"|\b(?:notiert|gespeichert|gemerkt|merke mir|merk mir|vermerkt|hinzugefugt|aufgeschrieben)"
)
_NONE = re.compile(
    r"\b(?:no |none|nothing|not any|don't (?:have|know)|do not (?:have|know)|haven't|empty|no notes|no files)"
    r"|\b(?:rien|aucun|pas de |ne sais pas)|\b(?:nada|ningun|no tengo|no hay|no se )"
    r"|\b(?:nichts|keine|kein )"
)


def _names(table: dict[str, str], lang: str) -> list[str]:
    return table["en"].split() + (table[lang].split() if lang in table and lang != "en" else [])


def says_failure(reply: str) -> bool:
    return bool(_FAILURE.search(fold(reply)))


def says_clock(reply: str, when: datetime) -> bool:
    """The reply states the hour and minute of ``when`` (24- or 12-hour, ``13:05``, ``1:05 pm``, ``13h05``, ``13.05 Uhr``)."""
    h12 = when.hour % 12 or 12
    hours = sorted({str(when.hour), f"{when.hour:02d}", str(h12), f"{h12:02d}"}, key=len, reverse=True)
    pattern = rf"(?<!\d)(?:{'|'.join(hours)})\s?(?::|h|\.|uhr)\s?{when.minute:02d}(?!\d)"
    return bool(re.search(pattern, fold(reply)))


def says_date(reply: str, when: datetime, lang: str = "en") -> bool:
    """The reply states the date of ``when``: ISO, day and month name (English or ``lang``), or day and month in figures."""
    text = fold(reply)
    d, m = when.day, when.month
    if when.date().isoformat() in text:
        return True
    months = [names.split()[m - 1] for key, names in MONTHS.items() if key in ("en", lang)]
    month = "|".join(sorted({n for name in months for n in (name, name[:3])}, key=len, reverse=True))
    day = rf"0?{d}(?:st|nd|rd|th|er|\.|º)?"
    patterns = [rf"(?<!\d){day}\s+(?:de\s+|of\s+)?(?:{month})\b", rf"\b(?:{month})\.?\s+{day}(?!\d)",
                rf"(?<![\d./-])0?{d}[./-]0?{m}(?![\d])", rf"(?<![\d./-])0?{m}[./-]0?{d}(?![\d])"]
    return any(re.search(p, text) for p in patterns)


def says_weekday(reply: str, when: datetime, lang: str = "en") -> bool:
    text = fold(reply)
    names = [WEEKDAYS[key].split()[when.weekday()] for key in ("en", lang) if key in WEEKDAYS]
    if lang == "de" and when.weekday() == 5:
        names.append("sonnabend")
    return any(re.search(rf"\b{name}\b", text) for name in names)


def _when(data: dict[str, Any]) -> datetime | None:
    """The moment of a clock's result: ``datetime`` (ISO), else ``date`` and ``time``."""
    value = data.get("datetime") or (f"{data['date']}T{data['time']}" if data.get("date") and data.get("time") else "")
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _clock_fact(data: dict[str, Any], reply: str, asks: str, lang: str) -> str:
    when = _when(data)
    if when is None:
        return "" if covered(json.dumps(data), reply) else "the reply does not state the result"
    zone = data.get("timezone", "")
    years = {int(y) for y in re.findall(r"(?<![\d:.])((?:19|20)\d\d)(?![\d:])", reply)} - {when.year}
    if years:  # a made-up date beside the right time ("07:37 ... 2025-04-28T07:37:38")
        return f"the reply states another year ({min(years)}) than the clock's ({when.year})"
    if asks == "date":
        return "" if says_date(reply, when, lang) else f"the reply does not state the date ({when.date()})"
    if asks == "weekday":
        return "" if says_weekday(reply, when, lang) else f"the reply does not state the day ({when:%A})"
    if asks == "day":
        ok = says_date(reply, when, lang) or says_weekday(reply, when, lang)
        return "" if ok else f"the reply states neither the day nor the date ({when:%A} {when.date()})"
    return "" if says_clock(reply, when) else f"the reply does not state the time {when:%H:%M} {zone}".rstrip()


def _says_numbers(reply: str, numbers: list[str]) -> bool:
    found = {n.replace(",", ".") for n in re.findall(r"\d+(?:[.,]\d+)?", reply.replace("\u202f", "").replace("\xa0", ""))}
    found |= {n.replace(",", "") for n in re.findall(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", reply)}
    return all(str(float(n)).removesuffix(".0") in {str(float(f)).removesuffix(".0") for f in found} for n in numbers)


def stated(run: ToolRun, reply: str, task: Task) -> str:
    """Why the reply does not state what ``run`` returned ("" when it does).

    A failure: said plainly (a word of failure). A clock: the time, date or day the task asks of it
    (a conversion: the target's time). A file list: every file's name. A file: most of its words (of
    the lines holding ``task.line_with``). Notes: all of them (half of more than three); an added note or memory: confirmed,
    with most of its words. A memory search: one of the memories found. An echo: the echoed words.
    A sum: the number. Nothing found: said so. Anything else: most of its words.
    """
    if run.is_error:
        return "" if says_failure(reply) else f"the reply does not say that {run.name} failed"
    content = run.content.strip()
    try:
        data: Any = json.loads(content)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("target"), dict):  # convert_time
        return _clock_fact(data["target"], reply, "time", task.lang)
    if isinstance(data, dict) and ("datetime" in data or "time" in data):
        return _clock_fact(data, reply, task.asks, task.lang)
    if isinstance(data, list) and not data:
        return "" if _NONE.search(fold(reply)) else "the reply does not say that nothing was found"
    if isinstance(data, list) and all(isinstance(d, dict) and "path" in d for d in data):
        missing = [d["path"] for d in data if not _names_file(str(d["path"]), reply)]
        return f"the reply does not name {', '.join(missing)}" if missing else ""
    if isinstance(data, list) and all(isinstance(d, dict) and "note" in d for d in data):
        told = sum(covered(str(d["note"]), reply) for d in data)
        need = len(data) if len(data) <= 3 else math.ceil(len(data) / 2)
        return "" if told >= need else f"the reply states {told} of the {len(data)} notes"
    if isinstance(data, list) and all(isinstance(d, str) for d in data):
        return "" if any(covered(d, reply) for d in data) else "the reply states none of the memories found"
    if isinstance(data, dict) and "note" in data:
        return _confirmed(str(data["note"]), reply)
    if content.lower() == "remembered":
        return _confirmed(str(run.arguments.get("text", "")), reply)
    if content.startswith("Echo:"):
        echoed = content.removeprefix("Echo:").strip()
        return "" if covered(echoed, reply, share=1.0) else f"the reply does not say {echoed!r}"
    total = re.fullmatch(r"The sum of (\S+) and (\S+) is (\S+?)\.?", content)
    if total:
        return "" if _says_numbers(reply, [total.group(3)]) else f"the reply does not state the sum {total.group(3)}"
    fact = content
    if task.line_with:
        lines = [line for line in content.splitlines() if task.line_with.lower() in line.lower()]
        fact = "\n".join(lines) or content
    return "" if covered(fact, reply) else "the reply does not state what the tool returned"


def _names_file(path: str, reply: str) -> bool:
    name = fold(path.rsplit("/", 1)[-1])
    text = fold(reply)
    if name in text:
        return True
    stem = name.rsplit(".", 1)[0].replace("_", " ").replace("-", " ")
    return len(stem) >= 4 and re.search(rf"\b{re.escape(stem)}\b", text.replace("_", " ").replace("-", " ")) is not None


def _confirmed(text: str, reply: str) -> str:
    if not _CONFIRMED.search(fold(reply)):
        return "the reply does not confirm it was kept"
    return "" if covered(text, reply, share=0.5) else f"the reply does not say what was kept ({text[:60]!r})"


# --------------------------------------------------------------------------- strict


def strict(task: Task, turns: list[Turn]) -> Verdict:
    """The strict judge: the lenient one, every reply in prose, and the tools' facts stated (see the module)."""
    forms = tuple(reply_form(t.reply) for t in turns)
    bad = next((f for f in forms if f), "")
    if bad:
        return Verdict(False, f"the reply is {FORM_WORDS[bad]}", forms)
    ok, why = lenient(task, turns)
    if not ok:
        return Verdict(False, why, forms)
    if task.kind in ("plain", "clarify"):
        return Verdict(True, "", forms)
    turn = turns[-1]
    for index, group in enumerate(task.tools):
        runs = [c for c in turn.calls if c.name in group]
        if index == 0 and task.check is not None:
            runs = [c for c in runs if task.check(c.arguments)]
        wanted = [c for c in runs if c.is_error == (task.kind == "fails")]
        if not wanted:
            return Verdict(False, f"no {'failed' if task.kind == 'fails' else 'good'} call of {'/'.join(group)}", forms)
        reasons = [stated(c, turn.reply, task) for c in wanted]
        if all(reasons):
            return Verdict(False, reasons[0], forms)
    return Verdict(True, "", forms)
