"""Whether a message asks for a change: a tool that changes things runs only when the user asked for it.

"I remember my first computer, it was a Commodore 64" is about remembering, and a Tool Router or a
small model readily picks ``memory_remember`` for it (and writes "Good times, good times" for the
fact); "Any tips for remembering people's names?" got a note about the user. A call of a tool that
changes things (the built-ins' notes and memories, a Discord action, any MCP tool marked as writing)
is therefore made only when the message asks for it, by one of two rules:

- **a request to the bot in its words** (:func:`request_for`): one of the message's requests is an
  imperative whose verb is one of the tool's own action words (its name's, the first of its
  description's: ``memory_remember`` "Store a fact ..." -> remember, store), after what only frames
  a request ("please", "can you", "I'd like you to", the bot's name): "Remember that the meeting is on
  Friday", "Can you note that I live in Berlin?". What follows the verb is what to keep, in the
  user's own words ("the meeting is on Friday");
- **a request to keep what the user says**, in English, French, Spanish or German (:func:`keep_request`),
  for a tool that records the user's words (its ``from_user`` arguments: a note, a memory): one of the
  message's requests starts with a verb that asks to keep something ("Please note that ...", "Jot this
  down: ...", "Retiens que ...", "Apunta que ...", "Merk dir, dass ..."), whichever of the two the
  tools chose;
- else **the tools model's word**: one constrained yes/no ("Does the message ask you to ...?"),
  asked only when a tool that changes things was chosen, the first rule did not find the request
  and the message may hold one in other words (another verb, another language: "Save this: ...",
  "Merke dir, dass ...", :func:`may_be_request`).

A statement ("I remember ...", "I note that you are slow") or a question about the topic ("tips for
remembering names?") is no request: its words start with a subject, an article or a question word
(the closed classes of English, French, Spanish and German), not with a verb addressed to the bot,
and it is not even put to the model (the demo model says "yes" to "I like tea.").
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from grobot.core.agents import prompts
from grobot.core.agents.structured import BadJSON, parse_object
from grobot.core.tools.base import ToolSpec

logger = logging.getLogger(__name__)

# What only frames a request before its verb: courtesy, a call for attention, a modal question
# ("can you"), a wish addressed to the bot ("I'd like you to").
_FRAME = re.compile(
    r"^(?:(?:please|pls|plz|kindly|ok(?:ay)?|hey|hi|hello|so|and|also|now|then|just|oh|yes|sure|alright|right|"
    r"quick(?:ly)?|bot)\b[\s,!:-]*"
    r"|(?:can|could|would|will|won't|wouldn't|couldn't)\s+you\b[\s,]*"
    r"|(?:i\s+)?(?:want|need|would\s+like|'d\s+like|wish)\s+you\s+to\b\s*"
    r"|i'd\s+like\s+you\s+to\b\s*"
    r"|(?:go\s+ahead\s+and|make\s+sure\s+(?:to|you)|be\s+sure\s+to|don't\s+forget\s+to|do\s+not\s+forget\s+to|"
    r"remember\s+to|try\s+to|let's)\b\s*)",
    re.IGNORECASE)
_LEADING_CONTENT = re.compile(r"^(?:(?:that|this|down|it|in\s+mind|for\s+me|for\s+later)\b[\s,:;-]*|[\s,:;.-]+)+",
                              re.IGNORECASE)
_FIRST_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# Where a request may start: the message's start, a sentence's, or after a comma, "and", "then", "also".
_STARTS = re.compile(r"(?:^|[.!?;\n]+\s*|,\s*|\s(?:and|then|also)\s+)", re.IGNORECASE)
# Where what a request asks to keep ends: its sentence, or the next request ("..., and list your files").
_CONTENT_END = re.compile(r"[.!?;\n]|,\s*(?:and|then)\s|\sand\s+then\s", re.IGNORECASE)


# Words a statement or a question starts with, never an imperative: pronouns, articles, determiners,
# question words and auxiliaries (English, French, Spanish, German).
_NOT_A_VERB = frozenset("""
i i'm i've i'd i'll me my mine we we're we've our us you you're your he he's his she she's her it it's its
they they're their them this that these those there here the a an some any no every each all what what's which
who whom whose how when where why whether if is are was were am be been do does did have has had doesn't
didn't isn't aren't wasn't weren't haven't hasn't shall should may might must ought anyone anybody someone
somebody everyone nobody nothing something everything one my
je j' tu il elle on nous vous ils elles le la les l' un une des du mon ma mes ton ta tes son sa ses notre nos
votre vos leur leurs ce cet cette ces c' qui que qu' quoi quel quelle quels quelles comment pourquoi où quand
est-ce y a il
yo tú el ella nosotros vosotros ellos ellas usted ustedes lo los las una unos unas mi mis tu tus su sus nuestro
nuestra este esta estos estas ese esa qué quién cómo por cuándo dónde cuál hay es soy estoy
ich du er sie es wir ihr der die das den dem des ein eine einen einem mein meine dein deine sein seine unser
euer was wer wie warum wann wo welche welcher welches ist bin sind war gibt
""".split())
_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")

# Courtesy before a request in French, Spanish and German (English: _FRAME).
_FRAME_OTHER = re.compile(r"^(?:s'il\s+(?:te|vous)\s+pla[iî]t|stp|svp|por\s+favor|bitte|peux-tu|pourrais-tu|"
                          r"puedes|podrias|kannst\s+du|ok|bon|alors|oye|hola|salut|hallo)\b[\s,!:-]*", re.IGNORECASE)
# A request to keep what follows (folded: no accents), as its first words.
_KEEP = re.compile(
    r"^(?:note|notez|jot\s+(?:(?:this|that|it)\s+)?down|write\s+(?:(?:this|that|it)\s+)?down|remember(?!\s+(?:when|how|what|the\s+(?:time|day)))|memori[sz]e|"
    r"keep\s+in\s+mind|don't\s+forget|do\s+not\s+forget|"
    r"prends\s+note|prenez\s+note|retiens|retenez|souviens-toi|souvenez-vous|memorise|n'oublie\s+pas|garde\s+en\s+(?:tete|memoire)|"
    r"apunta|anota|toma\s+nota|recuerda|acuerdate|memoriza|no\s+olvides|guarda\s+en\s+(?:tu\s+)?memoria|"
    r"merk\s+dir|merke\s+dir|notier\w*|schreib\w*\s+(?:dir\s+)?auf|vergiss\s+nicht|behalte?\s+im\s+kopf)"
    r"(?=\s*(?:that|this|:|que|qu'|de\s+que|dass|,|\s)\s*\S)",
    re.IGNORECASE)


# Before what a request to keep asks to keep: "that", "que", "dass" ... (folded).
_KEPT_LEAD = re.compile(r"^(?:(?:that|this|it|down|que|qu'|de\s+que|dass|bitte)\b[\s,:;-]*|[\s,:;.-]+)+")


def keep_request(message: str, *, bot_name: str = "") -> bool:
    """Whether one of the message's requests asks the bot to keep what follows (note it, remember it), in
    English, French, Spanish or German: its first words, after courtesy, are such a verb."""
    return kept_words(message, bot_name=bot_name) is not None


def kept_words(message: str, *, bot_name: str = "") -> str | None:
    """What a request to keep (:func:`keep_request`) asks to keep, in the user's words, up to the end of its
    sentence ("Jot down that I'm allergic to peanuts." -> "I'm allergic to peanuts"); None: no such request."""
    from grobot.core.agents.tool_cues import fold

    folded = fold(message)
    same = len(folded) == len(message)  # folding kept each character in its place (no "ß" -> "ss")
    for start in _STARTS.finditer(folded):
        text = folded[start.end():]
        offset = start.end() + len(text) - len(text.lstrip())
        text = text.strip()
        if bot_name:
            named = re.sub(rf"^@?{re.escape(fold(bot_name))}\b[\s,:!-]*", "", text)
            offset, text = offset + len(text) - len(named), named
        while True:
            framed = _FRAME_OTHER.sub("", _FRAME.sub("", text, count=1), count=1)
            if framed == text:
                break
            offset, text = offset + len(text) - len(framed), framed
        match = _KEEP.match(text)
        if match:
            rest = (message if same else folded)[offset + match.end():]
            lead = _KEPT_LEAD.match(fold(rest))
            rest = rest[lead.end():] if lead else rest
            end = _CONTENT_END.search(rest)
            return (rest[: end.start()] if end else rest).strip().rstrip("?!.").strip()
    return None


def may_be_request(message: str) -> bool:
    """Whether ``message`` may ask the bot to do something, in words :func:`request_for` does not know: one of its
    sentences is framed as a request ("please", "can you") or starts with a word that may be a verb (not a
    pronoun, an article or a question word), and is not a question that does not address the bot."""
    for sentence in re.findall(r"[^.!?\n]+[.!?]*", message):
        text = sentence.strip()
        framed = _FRAME.sub("", text, count=1)
        if framed != text and re.match(r"(?:can|could|would|will|won't|wouldn't|couldn't)\s+you|please|kindly|pls|plz",
                                       text, re.IGNORECASE):
            return True  # "Can you keep this for me?", "Please save ..."
        while framed != text:
            text, framed = framed, _FRAME.sub("", framed, count=1)
        first = _WORDS.match(text.lower())
        # An English word in -ing starts a statement ("Remembering names is hard"), not an imperative.
        if first and first.group() not in _NOT_A_VERB and not (first.group().endswith("ing") and len(first.group()) >= 6) \
                and not text.endswith("?"):
            return True
    return False


_RECALLS = re.compile(r"\s+(?:when|how|what|where|why|who|whether|the\s+(?:time|day))\b", re.IGNORECASE)


@dataclass(frozen=True)
class Request:
    """A request of the message for a tool: its verb, and what follows it (what to keep, in the user's words)."""

    verb: str
    content: str


def _stem(word: str) -> str:
    """A verb's base form, roughly ("notes" -> "note", "saves" -> "save"); enough to match a tool's words."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def action_words(spec: ToolSpec) -> set[str]:
    """The words a request for ``spec`` starts with: its name's and the first of its description's."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", spec.name).lower()
    words = {_stem(w) for w in re.findall(r"[a-z]+", spaced) if len(w) > 1}
    first = _FIRST_WORD.match((spec.description or "").strip().lower())
    if first:
        words.add(_stem(first.group()))
    return words


def request_for(message: str, spec: ToolSpec, *, bot_name: str = "") -> Request | None:
    """The request of ``message`` for ``spec`` (None: the message does not ask for it in these words)."""
    verbs = action_words(spec)
    for start in _STARTS.finditer(message):
        text = message[start.end():].strip()
        if bot_name:
            text = re.sub(rf"^@?{re.escape(bot_name)}\b[\s,:!-]*", "", text, flags=re.IGNORECASE)
        while True:
            framed = _FRAME.sub("", text, count=1)
            if framed == text:
                break
            text = framed
        first = _FIRST_WORD.match(text.lower())
        if first and first.group() in verbs:  # as written: a verb addressed to the bot ("notes on ..." is none)
            rest = text[first.end():]
            if _RECALLS.match(rest):  # "Remember when we talked about cats?": a memory shared, nothing to keep
                continue
            end = _CONTENT_END.search(rest)
            colon = rest.find(":")
            if 0 <= colon and len(rest[:colon].split()) <= 3:  # "Add a note: I prefer email"
                rest = rest[colon + 1:]
                end = _CONTENT_END.search(rest)
            rest = rest[: end.start()] if end else rest
            content = _LEADING_CONTENT.sub("", rest).strip().rstrip("?!.").strip()
            return Request(verb=first.group(), content=content)
    return None


ASKED_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"asked": {"type": "string", "enum": ["yes", "no"]}},
                                "required": ["asked"], "additionalProperties": False}


async def asked_by_model(run: Any, spec: ToolSpec) -> bool:
    """The tools model's yes/no: does the user's message ask for what ``spec`` does? (no when in doubt)."""
    description = " ".join((spec.description or spec.name).split())[:300]
    system = prompts.WRITE_REQUEST.format(name=spec.name, description=description)
    result = await run.llm("tools", "write_check", [{"role": "system", "content": system}, run.user_msg],
                           schema=ASKED_SCHEMA, temperature=0.0, max_tokens=prompts.GATEKEEPER_MAX_TOKENS)
    try:
        answer, _ = parse_object(result.text)
    except BadJSON:
        return False
    return str(answer.get("asked", "")).strip().lower() == "yes"


async def asks_for(run: Any, spec: ToolSpec) -> bool:
    """Whether the run's message asks for a call of ``spec`` (True for a tool that changes nothing; see the
    module's rules for the others); decided once per run and tool, and the step says how."""
    if not spec.writes:
        return True
    if spec.name in run.write_asked:
        return bool(run.write_asked[spec.name])
    if request_for(run.msg.content, spec, bot_name=run.bot.name) is not None or \
            (spec.from_user and keep_request(run.msg.content, bot_name=run.bot.name)):
        asked = True
    else:
        asked = may_be_request(run.msg.content) and await asked_by_model(run, spec)
        await run.think("write_check", f"{spec.name} changes things: "
                        + ("the tools model says the message asks for it" if asked
                           else "the message does not ask for it, so it is not called"), tool=spec.name, asked=asked)
    run.write_asked[spec.name] = asked
    return asked
