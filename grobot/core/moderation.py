"""Moderation: what a message to a bot or its answer must not contain, and what happens when one does.

Per bot (:class:`Moderation`, read with the rest of a message's settings):

- **words**: whole words or phrases in any case ("bad word" is in "a BAD  word!", not in "badwords");
- **patterns**: regular expressions (any case), run by RE2 (``google-re2``): linear in the text's
  length, with no backtracking, so no pattern can hang a bot. A pattern is checked when it is saved
  (:func:`check_patterns`): one that RE2 cannot compile (a backreference, a lookaround, an unclosed
  parenthesis), that is too large, that matches an empty text (so every message), or that takes too
  long to check an answer (a huge automaton) is refused with why, in plain words;
- **the decision model**, when the admin turned it on: one constrained yes/no call asks whether a
  message is abusive (:data:`ABUSE_SCHEMA`, asked by the chain before it answers).

What happens is the admin's choice (:data:`ACTIONS`): ``ignore`` (no answer), ``refuse`` (a short
refusal instead of an answer) or ``log`` (answered as usual). Every event is one WARNING in the bot's
Logs (:func:`log_event`): where, from whom and which rule, never the message or the answer.

Messages are checked where a message is admitted (:func:`grobot.core.answering.admit`); answers
before they are sent, also while they stream (:class:`AnswerGuard`, in the run's recorder). This
module is light to import (a bot process loads it with the answering path); RE2 only when a bot has
patterns.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

ACTIONS = {"ignore": "ignore it", "refuse": "a short refusal", "log": "log it only"}
DEFAULT_ACTION = "refuse"
REFUSAL = "Sorry, I can't help with that."
MAX_WORDS = 500
MAX_WORD_CHARS = 100
MAX_PATTERNS = 100
MAX_PATTERN_CHARS = 500
# A pattern must check a text of PROBE_CHARS within SLOW_MS of CPU time (an answer is at most a few
# thousand characters; a typical pattern takes well under a millisecond).
PROBE_CHARS = 10_000
SLOW_MS = 20.0
# A pattern that matches most of these matches almost any message.
ORDINARY_MESSAGES = ("Hello, how are you?", "Thanks!", "ok", "What time is it in Paris?", "Can you summarise this file",
                     "I'll be there at 5.", "Bonjour à tous", "yes please", "Did the build pass", "good night 🌙")
MIN_RELEASE_CHARS = 20  # while streaming, text is checked and sent on in steps of at least this many characters
RE2_MAX_MEM = 1 << 20  # the automaton's memory per pattern: more is a pattern too large to check quickly
# While an answer streams: the text checked again before each release, for a match that spans words.
OVERLAP_CHARS = 200
HOLD_MAX_CHARS = 64  # the longest unfinished word held back before it is sent

_WORD = re.compile(r"\w+")
_PROBE_WORDS = ("Hello there, the quick brown fox jumps over 13 lazy dogs! Réponse: naïve café, "
                "Ünïcödé ŝtüff; ошибка 12:30 - https://example.com/a?b=c \"quoted\" (aside) [x] {y} "
                "aaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbbbb 0123456789 _under_score_ *stars* ~tilde~ `code`\n"
                + "x" * 400 + " " * 60 + "ab" * 150 + "\n")


@dataclass(frozen=True)
class Moderation:
    """A bot's moderation, as plain data (it crosses the bot link with a message's settings)."""

    words: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    action: str = DEFAULT_ACTION
    ask_model: bool = False

    @property
    def checks_text(self) -> bool:
        """Words or patterns to look for."""
        return bool(self.words or self.patterns)

    @classmethod
    def of(cls, bot: Any) -> Moderation:
        """The moderation of a ``Bot`` row (or a row of its columns)."""
        return cls(words=list(bot.moderation_words or []), patterns=list(bot.moderation_patterns or []),
                   action=str(bot.moderation_action or DEFAULT_ACTION), ask_model=bool(bot.moderation_ask_model))

    def as_dict(self) -> dict[str, Any]:
        return {"words": list(self.words), "patterns": list(self.patterns), "action": self.action,
                "ask_model": self.ask_model}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Moderation:
        return cls(words=[str(w) for w in data.get("words") or []], patterns=[str(p) for p in data.get("patterns") or []],
                   action=str(data.get("action") or DEFAULT_ACTION), ask_model=bool(data.get("ask_model")))

    def find(self, text: str, start: int = 0, end: int | None = None) -> str | None:
        """The rule ``text[start:end]`` breaks, as an admin reads it (``the word "x"``, ``pattern 2``),
        or None. ``start`` should be at a word's start (a word cut in two is not a word)."""
        if not self.checks_text or not text:
            return None
        return _matcher(tuple(self.words), tuple(self.patterns)).find(text, start, len(text) if end is None else end)


# --------------------------------------------------------------------------- matching


class _Matcher:
    """The words as token sequences (looked up by their first token) and the patterns compiled by RE2."""

    def __init__(self, words: tuple[str, ...], patterns: tuple[str, ...]) -> None:
        self.phrases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for word in words:
            tokens = tuple(t.casefold() for t in _WORD.findall(word))
            if tokens:
                self.phrases.setdefault(tokens[0], []).append((tokens, word))
        self.patterns: list[tuple[int, Any]] = []
        for index, pattern in enumerate(patterns, 1):
            try:
                self.patterns.append((index, _compile(pattern)))
            except Exception as exc:  # stored before a check that refuses it now: skipped, said once
                logger.warning("Moderation pattern %d cannot be used and is skipped: %s", index, _re2_reason(exc))

    def find(self, text: str, start: int, end: int) -> str | None:
        if self.phrases:
            tokens = [m.group().casefold() for m in _WORD.finditer(text, start, end)]
            for i, token in enumerate(tokens):
                for phrase, word in self.phrases.get(token, ()):
                    if tuple(tokens[i:i + len(phrase)]) == phrase:
                        return f'the word "{word}"'
        for index, compiled in self.patterns:
            if compiled.search(text, start, end) is not None:
                return f"pattern {index}"
        return None


@lru_cache(maxsize=128)
def _matcher(words: tuple[str, ...], patterns: tuple[str, ...]) -> _Matcher:
    return _Matcher(words, patterns)


def _compile(pattern: str) -> Any:
    import re2  # only a bot with patterns loads RE2

    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    return re2.compile(pattern, options)


_REASONS = (
    (re.compile(r"invalid escape sequence: \\[1-9]"), "backreferences such as \\1 are not supported"),
    (re.compile(r"invalid perl operator: \(\?<?[=!]"), "lookahead and lookbehind ((?=, (?!, (?<=, (?<!) are not supported"),
    (re.compile(r"invalid repetition size"), "a repetition count is too large (at most 1000)"),
    (re.compile(r"pattern too large"), "it is too large to check quickly"),
    (re.compile(r"missing \)"), "a parenthesis is not closed"),
    (re.compile(r"unexpected \)"), "a closing parenthesis has no opening one"),
    (re.compile(r"missing \]"), "a bracket [ is not closed"),
    (re.compile(r"missing argument to repetition operator"), "a *, + or ? has nothing to repeat"),
    (re.compile(r"trailing \\"), "it ends with a lone backslash"),
    (re.compile(r"bad repetition operator"), "two repetition operators follow each other (such as ** or +*)"),
)


def _re2_reason(exc: Exception) -> str:
    """RE2's complaint about a pattern, in plain words."""
    raw = exc.args[0] if exc.args else str(exc)
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    if text.startswith(("b'", 'b"')) and text[-1:] in "'\"":
        text = text[2:-1].replace("\\\\", "\\")
    for found, reason in _REASONS:
        if found.search(text):
            return reason
    return f"it is not a regular expression RE2 can run ({text})"


# --------------------------------------------------------------------------- checks when saved


def check_words(words: list[str]) -> list[str]:
    """The words as stored (trimmed, without repeats); ValueError in plain words."""
    result: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for word in words:
        word = " ".join(str(word).split())
        if not word:
            continue
        if len(word) > MAX_WORD_CHARS:
            raise ValueError(f'"{word[:30]}…" is longer than {MAX_WORD_CHARS} characters')
        tokens = tuple(t.casefold() for t in _WORD.findall(word))
        if not tokens:
            raise ValueError(f'"{word}" has no letters or digits to look for (use a pattern for symbols)')
        if tokens not in seen:
            seen.add(tokens)
            result.append(word)
    if len(result) > MAX_WORDS:
        raise ValueError(f"at most {MAX_WORDS} words or phrases")
    return result


def check_patterns(patterns: list[str]) -> list[str]:
    """The patterns as stored (trimmed, without repeats), each compiled and timed; ValueError naming the
    first one that cannot be used and why."""
    result: list[str] = []
    for pattern in patterns:
        pattern = str(pattern).strip()
        if pattern and pattern not in result:
            result.append(pattern)
    if len(result) > MAX_PATTERNS:
        raise ValueError(f"at most {MAX_PATTERNS} patterns")
    for index, pattern in enumerate(result, 1):
        problem = pattern_problem(pattern)
        if problem:
            shown = pattern if len(pattern) <= 60 else pattern[:60] + "…"
            raise ValueError(f"pattern {index} ({shown}) cannot be used: {problem}")
    return result


def pattern_problem(pattern: str) -> str:
    """Why ``pattern`` cannot be used ("" when it can)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"it is longer than {MAX_PATTERN_CHARS} characters"
    try:
        compiled = _compile(pattern)
    except Exception as exc:
        return _re2_reason(exc)
    if compiled.search("") is not None:
        return "it matches an empty text, so every message would match it"
    ordinary = [text for text in ORDINARY_MESSAGES if compiled.search(text) is not None]
    if len(ordinary) * 2 > len(ORDINARY_MESSAGES):
        return (f'it matches ordinary messages (such as "{ordinary[0]}" and "{ordinary[1]}"), so almost every '
                "message would match it")
    probe = (_PROBE_WORDS * (PROBE_CHARS // len(_PROBE_WORDS) + 1))[:PROBE_CHARS]
    started = time.thread_time()
    for _ in compiled.finditer(probe):  # every match: the whole text is read, as for an answer without one
        pass
    took = (time.thread_time() - started) * 1000
    if took > SLOW_MS:
        return (f"it takes too long to check ({took:.0f} ms for a text of {PROBE_CHARS:,} characters; at most "
                f"{SLOW_MS:.0f}): make it simpler, e.g. with smaller counted repetitions such as {{1,50}}")
    return ""


# --------------------------------------------------------------------------- events


def log_event(bot_id: int, what: str, rule: str, action: str, *, platform: str, channel_id: str | None,
              author_id: str | None, is_dm: bool = False) -> None:
    """One WARNING in the bot's Logs: which rule, where, from whom, and what was done (never the text)."""
    where = "Test Chat" if platform == "test_chat" else "CLI" if platform == "cli" else (
        "DM" if is_dm else f"channel {channel_id or '?'}")
    done = {"ignore": "ignored", "refuse": "refused", "log": "logged only", "withheld": "withheld",
            "replaced": "replaced by the refusal"}.get(action, action)
    logger.warning("Moderation: %s (%s, user %s) matched %s: %s", what, where, author_id or "?", rule, done,
                   extra={"bot_id": bot_id})


def moderation_note(rule: str) -> str:
    """What Test Chat and the CLI say of a message the moderation ignores (a Discord user hears nothing)."""
    return f"Not answered: the message matched {rule} of the bot's moderation, which ignores such messages."


# --------------------------------------------------------------------------- streamed answers


class AnswerGuard:
    """Checks an answer as it streams, before any of it is sent.

    :meth:`feed` takes the model's text and gives back what may be sent now: the words checked so
    far (a match may span words: the last ``OVERLAP_CHARS`` are checked again with each release;
    after the first words, in steps of ``MIN_RELEASE_CHARS``), holding back the word being written.
    :attr:`hit` is the rule the answer broke (then nothing more is sent); :meth:`rest` checks the
    whole final answer and gives the held-back end.
    """

    def __init__(self, moderation: Moderation) -> None:
        self.moderation = moderation
        self.text = ""
        self.released = 0  # characters sent on
        self.hit: str | None = None

    def feed(self, piece: str) -> str:
        if self.hit is not None:
            return ""
        self.text += piece
        cut = _last_boundary(self.text)
        if len(self.text) - cut > HOLD_MAX_CHARS:
            cut = len(self.text) - HOLD_MAX_CHARS
        if cut <= self.released or (self.released and cut - self.released < MIN_RELEASE_CHARS):
            return ""  # the first words go at once, the rest in steps
        self.hit = self.moderation.find(self.text, _word_start(self.text, self.released - OVERLAP_CHARS), cut)
        if self.hit is not None:
            return ""
        out, self.released = self.text[self.released:cut], cut
        return out

    def rest(self, final: str) -> str:
        """The whole answer checked (``final``: as it ends, which may differ from the streamed draft);
        what is left to send of the draft ("" after a hit)."""
        if self.hit is None:
            self.hit = self.moderation.find(final)
        if self.hit is not None:
            return ""
        out, self.released = self.text[self.released:], len(self.text)
        return out


def _last_boundary(text: str) -> int:
    """The position after the last character that is not part of a word (0: none)."""
    for index in range(len(text) - 1, -1, -1):
        if not (text[index].isalnum() or text[index] == "_"):
            return index + 1
    return 0


def _word_start(text: str, position: int) -> int:
    """``position`` moved forward to the start of a word (0 stays 0)."""
    if position <= 0:
        return 0
    while position < len(text) and (text[position - 1].isalnum() or text[position - 1] == "_"):
        position += 1
    return position
