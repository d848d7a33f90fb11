"""Whether a model's answer is fit to send: no tool-call markup, no JSON or code nobody asked for, no loop.

A small model answers a chat message with a raw ``<tool_call>{...}`` block, a JSON object, a
Python snippet about ``datetime`` or "I hope you're well." repeated to its cap. :func:`check`
takes out what must not be sent (the markup, the unasked JSON and code, the repetitions) and says
what is left, and whether that is still an answer; :class:`StreamGuard` passes a streaming answer
on to the user only as far as it is fit to send, and asks the model to stop once it loops or
writes markup (the rest would be thrown away).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

MARKUP = "markup"
JSON = "json"
CODE = "code"
LOOP = "loop"
EMPTY = "empty"
PROBLEMS = {MARKUP: "tool-call markup", JSON: "JSON", CODE: "code nobody asked for", LOOP: "a repetition loop",
            EMPTY: "no answer"}

# Chat-template and tool-call markup: <tool_call>…</tool_call>, <|im_start|>, [TOOL_CALLS], <function=x>.
_MARKUP_BLOCK = re.compile(r"<(tool_call|tool_response|tools|function_call|function(?:=[^>]*)?)>.*?(?:</\1?[a-z_]*>|$)",
                           re.IGNORECASE | re.DOTALL)
_MARKUP_TOKEN = re.compile(r"<\|[^|>]{1,40}\|>|</?(?:tool_call|tool_response|tools|function_call|function|im_start|im_end|"
                           r"start_of_turn|end_of_turn|s)>|\[/?(?:TOOL_CALLS|TOOL_RESULTS|INST)\]|<function=[^>]*>",
                           re.IGNORECASE)
_FENCED = re.compile(r"^[ \t]*(```+|~~~+)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
# A line of code: a statement of a common language, or a line ending the way only code does.
_CODE_LINE = re.compile(
    r"^\s*(?:(?:import|from)\s+[\w.]+(?:\s+import\b.*)?$|def\s+\w+\s*\(|class\s+\w+\s*[:(]|print\s*\(|return\b|"
    r"console\.\w+\(|#include\b|(?:function|func|fn)\s+\w+\s*\(|(?:var|let|const)\s+\w+\s*=|\w+(?:\.\w+)*\s*=\s*\S|"
    r"\w+(?:\.\w+)+\(.*\)\s*$|.*[;{}]\s*$|(?:if|for|while)\b.*:\s*$)")
# The user asks for code, JSON or markup: its words (a few languages) or code of its own.
_ASKS_FOR_CODE = re.compile(
    r"\b(?:code|coding|program(?:me|ming|mieren)?|programa(?:r|ción)?|script|function|fonction|función|funktion|"
    r"python|javascript|typescript|java|rust|golang|c\+\+|c#|sql|regex|regexp|bash|shell|html|css|json|yaml|xml|"
    r"snippet|syntax|compile|debug|algorithm|algorithme|algoritmo|api|class|método|method)\b|`|[(){}\[\];=<>]{2,}",
    re.IGNORECASE)

_WORD = re.compile(r"\S+")
_LETTERS = re.compile(r"[^\W\d_]{2,}")
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|\n|$)")
MAX_PERIOD = 60  # the longest repeated span (in words) looked for
LONG_SPAN = 8  # a span of this many words said twice in a row is a loop (a shorter one: three times)
MIN_WORDS = 3  # what is left of an answer after its problems are taken out must have this many words


def asks_for_code(message: str) -> bool:
    """Whether the user's message asks for code, JSON or markup (or holds some): then they are no problem."""
    return _ASKS_FOR_CODE.search(message or "") is not None


@dataclass(frozen=True)
class Verdict:
    """What may be sent of an answer (``text``; empty when nothing), and the problem that remains (if any)."""

    text: str
    problem: str = ""  # "" (fit to send), MARKUP, JSON, CODE, LOOP or EMPTY
    removed: tuple[str, ...] = ()  # what was taken out of it (MARKUP, JSON, CODE, LOOP)

    @property
    def ok(self) -> bool:
        return not self.problem


def check(text: str, asked: str = "") -> Verdict:
    """``text`` without what must not be sent; a problem when what is left is no answer."""
    code_asked = asks_for_code(asked)
    body = text.strip()
    removed: list[str] = []
    worst = ""

    without = _strip_markup(body)
    if without != body:
        removed.append(MARKUP)
        worst = MARKUP
        body = without
    if not code_asked:
        if _whole_json(body):
            return Verdict("", JSON if not worst else worst, tuple(removed + [JSON]))
        without = _strip_json(body)
        if without != body:
            removed.append(JSON)
            worst = worst or JSON
            body = without
        without = _strip_code(body)
        if without != body:
            removed.append(CODE)
            worst = worst or CODE
            body = without
    at = loop_at(body)
    if at is not None:
        removed.append(LOOP)
        worst = worst or LOOP
        body = body[:at]
    body = _tidy(body)
    if not _LETTERS.search(body):
        return Verdict("", worst or EMPTY, tuple(removed))
    if removed and len(_WORD.findall(body)) < MIN_WORDS:
        return Verdict("", worst, tuple(removed))
    return Verdict(body, "", tuple(removed))


def _tidy(text: str) -> str:
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text.rstrip(",;:-–— ") if text and text[-1] in ",;:-–—" else text


def _strip_markup(text: str) -> str:
    text = _MARKUP_BLOCK.sub(" ", text)
    text = _MARKUP_TOKEN.sub(" ", text)
    return _remove_objects(text, lambda value: isinstance(value, dict) and "name" in value
                           and ("arguments" in value or "parameters" in value)) if "{" in text else text


def _strip_json(text: str) -> str:
    return _remove_objects(text, lambda value: isinstance(value, (dict, list)) and bool(value)) if "{" in text else text


def _whole_json(text: str) -> bool:
    inner = _FENCED.sub(lambda m: m.group(0).split("\n", 1)[-1].rsplit("\n", 1)[0] if "\n" in m.group(0) else "", text)
    inner = inner.strip().strip("`").strip()
    if not inner or inner[0] not in "[{":
        return False
    try:
        json.loads(inner)
    except ValueError:
        return inner[0] == "{" and inner.rstrip()[-1:] == "}" and '":' in inner  # broken JSON is JSON too
    return True


def _remove_objects(text: str, unwanted: Callable[[object], bool]) -> str:
    """``text`` without its balanced ``{...}`` spans that parse as JSON values ``unwanted`` says are."""
    out: list[str] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            out.append(text[index:])
            return "".join(out)
        end = _balanced_end(text, start)
        if end is None:
            out.append(text[index:])
            return "".join(out)
        try:
            value = json.loads(text[start:end])
        except ValueError:
            value = None
        if value is not None and unwanted(value):
            out.append(text[index:start])
            out.append(" ")
        else:
            out.append(text[index:end])
        index = end


def _balanced_end(text: str, start: int) -> int | None:
    depth, in_string, escaped = 0, False, False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def _strip_code(text: str) -> str:
    """``text`` without fenced code blocks and runs of two or more lines of code."""
    text = _FENCED.sub("\n", text)
    lines = text.split("\n")
    keep = [True] * len(lines)
    run: list[int] = []
    for index, line in enumerate([*lines, ""]):
        if index < len(lines) and line.strip() and _CODE_LINE.match(line):
            run.append(index)
            continue
        if len(run) >= 2:
            for i in run:
                keep[i] = False
        run = []
    return "\n".join(line for line, kept in zip(lines, keep) if kept)


# --------------------------------------------------------------------------- loops


def _norm(word: str) -> str:
    return word.strip(".,;:!?\"'()[]*_-…").lower()


def _copies_needed(period: int) -> int:
    return 4 if period == 1 else 3 if period < LONG_SPAN else 2


class LoopScan:
    """Reads words one by one and finds where they start repeating themselves (see :func:`loop_at`).

    For each period (1 to ``MAX_PERIOD`` words) it counts the words in a row equal to the word that
    many before: a run of ``period * (copies - 1)`` such words is a span said ``copies`` times.
    """

    def __init__(self) -> None:
        self.words: list[str] = []
        self._runs = [0] * (MAX_PERIOD + 1)
        self.found: int | None = None  # the index of the first word of the first repeated copy

    def add(self, word: str) -> int | None:
        if self.found is not None:
            return self.found
        words, runs = self.words, self._runs
        index = len(words)
        words.append(word)
        for period in range(1, min(MAX_PERIOD, index) + 1):
            if words[index - period] != word:
                runs[period] = 0
                continue
            runs[period] += 1
            needed = period * (_copies_needed(period) - 1)
            if runs[period] >= needed:
                self.found = index + 1 - needed
                return self.found
        return None


def loop_at(text: str) -> int | None:
    """Where ``text`` starts repeating itself (a character index: its first repeated copy), None when it does not.

    A loop: a span of words repeated back to back (a word four times, a short span three times, a span
    of ``LONG_SPAN`` words or more twice), or a sentence of four words or more said again later.
    """
    matches = list(_WORD.finditer(text))
    scan = LoopScan()
    for match in matches:
        found = scan.add(_norm(match.group()))
        if found is not None:
            return matches[found].start()
    seen: set[str] = set()
    for match in _SENTENCE.finditer(text):
        said = " ".join(_norm(w) for w in match.group().split())
        if len(said.split()) >= 4:
            if said in seen:
                return match.start() + (len(match.group()) - len(match.group().lstrip()))
            seen.add(said)
    return None


# --------------------------------------------------------------------------- streaming


def _opens_like_prose(text: str) -> bool | None:
    """Whether an answer starting with ``text`` starts as prose (None: too early to say)."""
    start = text.lstrip()
    if not start:
        return None
    if start[0] in "<{[`~" or start.startswith(("```", "~~~")):
        return False
    return True


class StreamGuard:
    """Passes a streaming answer on (``send``) only as far as it is fit to send.

    With ``grounded`` lines (a tool ran), the answer is held until it states every result (a model
    that grounds itself streams; one that does not is replaced by the lines at the end). An answer
    that starts with markup, JSON or code is held; one that loops or writes markup later stops being
    passed on there, and :attr:`stop` asks the model to stop writing.
    """

    def __init__(self, send: Callable[[str], Awaitable[None]] | None, *, asked: str = "",
                 stated: Callable[[str], bool] | None = None) -> None:
        self.send = send
        self.asked = asked
        self.stated = stated  # whether a text states every tool result (None: no tool ran)
        self.code_asked = asks_for_code(asked)
        self.text = ""  # everything the model wrote
        self.sent = 0  # characters of it passed on
        self.open = False
        self.stopped = ""  # the problem that ended the passing on ("": none)
        self._scan = LoopScan()
        self._scanned = 0  # characters whose words the scan has read (a last word may still grow)

    @property
    def stop(self) -> bool:
        """Whether the model may stop writing: it loops or writes markup (nothing more would be sent)."""
        return self.stopped in (LOOP, MARKUP)

    async def feed(self, piece: str) -> None:
        self.text += piece
        if self.stopped:
            return
        self.stopped = self._problem()
        if self.stopped or self.send is None:
            return
        if not self.open:
            if self.stated is not None:
                self.open = self.stated(self.text) and check(self.text, self.asked).ok
            else:
                self.open = bool(_opens_like_prose(self.text))
            if not self.open:
                return
        end = self._safe_end()
        if end > self.sent:
            piece, self.sent = self.text[self.sent:end], end
            await self.send(piece)

    def _problem(self) -> str:
        if _MARKUP_TOKEN.search(self.text) or _MARKUP_BLOCK.search(self.text):
            return MARKUP
        if not self.code_asked and ("```" in self.text or "~~~" in self.text):
            return CODE
        for match in _WORD.finditer(self.text, self._scanned):
            if match.end() == len(self.text):
                break
            self._scanned = match.end()
            if self._scan.add(_norm(match.group())) is not None:
                return LOOP
        return ""

    def _safe_end(self) -> int:
        """How far the text may go out now: not into what may be the start of markup or code."""
        end = len(self.text)
        for mark in ("<", "{", "[", "`"):
            at = self.text.rfind(mark, self.sent)
            if at >= 0 and (mark not in "<[" or not re.search(r"[>\]]", self.text[at:])):
                end = min(end, at)
        return end
