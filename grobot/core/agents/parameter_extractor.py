"""Parameter Extractor (tools model): a tool's arguments, validated against its input schema.

Broken JSON is repaired (json-repair); an invalid answer gets one retry that shows the
model the validation error (a required value it left out without saying the user never gave it
is then required by the grammar, and used only if the conversation holds it); a required
value the user never gave goes to the Clarifier, as does a file name the conversation never wrote
or a fact to keep that the user never said (the model made it up). A fact to keep is in the user's
words: the model's when they are mostly the user's, else what the request says after its verb
("Remember that I don't eat meat" -> "I don't eat meat"). A time-zone argument may only take the zones the message names
(:mod:`grobot.core.time_zones`; the executor reads a place written for a zone as its zone).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from grobot.core import time_zones
from grobot.core.agents import prompts
from grobot.core.agents.run import Run
from grobot.core.agents.structured import BadJSON, missing_required, parse_object, relaxed, validation_errors
from grobot.core.agents.tool_router import name_words
from grobot.core.agents.write_requests import kept_words, request_for
from grobot.core.tools.base import ToolSpec
from grobot.core.words import content_words

logger = logging.getLogger(__name__)

RECENT_MESSAGES = 4


@dataclass
class Extraction:
    arguments: dict[str, Any] | None  # valid arguments, or None
    missing: list[str] = field(default_factory=list)
    question: str = ""
    error: str = ""


def check(arguments: Any, spec: ToolSpec) -> list[str]:
    """Validation errors of ``arguments`` for ``spec`` (empty: valid)."""
    if not isinstance(arguments, dict):
        return ["the arguments are not a JSON object"]
    return validation_errors(arguments, spec.input_schema or {"type": "object"})


def needs_arguments(spec: ToolSpec) -> bool:
    """Whether a tool takes any argument (one without, or one that reads the user's message itself:
    :attr:`ToolSpec.takes_message`, needs no Parameter Extractor call)."""
    schema = spec.input_schema or {}
    return not spec.takes_message and (bool(schema.get("properties")) or bool(schema.get("required")))


def _schema(spec: ToolSpec, forced: list[str] | None = None, choices: dict[str, list[Any]] | None = None
            ) -> dict[str, Any]:
    """The tool's own argument schema and which of its arguments the user did not give.

    Nothing is forced (a grammar must not make up a value) but ``forced``: required arguments
    the model left out although it did not say the user never gave them; what it then writes
    is used only if the conversation holds it (:func:`_grounded`). ``choices``: the only values
    an argument may take (the zones the message names, for a time-zone argument).
    """
    names = list((spec.input_schema or {}).get("properties") or {})
    missing: dict[str, Any] = {"type": "array", "items": {"type": "string", "enum": names} if names else {"type": "string"},
                               "maxItems": max(1, len(names))}
    arguments = relaxed(spec.input_schema or {"type": "object"})
    if forced:
        arguments["required"] = list(forced)
    properties = arguments.get("properties")
    for name, values in (choices or {}).items():
        if isinstance(properties, dict) and isinstance(properties.get(name), dict):
            properties[name] = {**properties[name], "enum": list(values)}
    return {
        "type": "object",
        "properties": {"arguments": arguments, "missing": missing},
        "required": ["arguments"],
        "additionalProperties": False,
    }


# A value written in a fixed form holds a digit or one of "/.:@": a time, a date, a number, a file
# name, a zone ("15:00", "notes.txt", "Europe/Paris").
_TOKEN = re.compile(r"\w(?:[\w/.:@+-]*\w)?")
_FORM_HINT = re.compile(r"\bformat\b|\b(?:hh|mm|yyyy|iso)\b", re.IGNORECASE)


def _literal_choices(spec: ToolSpec, names: list[str], text: str, given: dict[str, Any]) -> dict[str, list[Any]]:
    """For the forced retry: the values written in a fixed form in ``text`` (the user's message), as the
    only choices of those of ``names`` whose schema asks for such a form (a number, a format, a
    pattern), but those ``given`` to other arguments already. A free-text argument gets none: its
    value would be cut down to a literal."""
    properties = (spec.input_schema or {}).get("properties") or {}
    taken = {str(value).lower() for value in given.values()}
    literals = list(dict.fromkeys(token for token in _TOKEN.findall(text)
                                  if re.search(r"[\d/.:@]", token) and token.lower() not in taken))
    numbers = [float(v) if "." in v else int(v) for v in literals if re.fullmatch(r"\d+(?:\.\d+)?", v)]
    choices: dict[str, list[Any]] = {}
    for name in names:
        prop = properties.get(name)
        prop = prop if isinstance(prop, dict) else {}
        if prop.get("type") in ("integer", "number"):
            values: list[Any] = [v for v in numbers if prop["type"] == "number" or isinstance(v, int)]
        elif prop.get("type") == "string" and (prop.get("pattern") or prop.get("format")
                                               or _FORM_HINT.search(str(prop.get("description") or ""))):
            values = [v for v in literals if v.lower() != name.lower()]
        else:
            continue
        if values:
            choices[name] = values
    return choices


GROUNDED_TYPES = ("string", "integer", "number")


def _checkable(spec: ToolSpec, names: list[str]) -> list[str]:
    """Those of ``names`` whose value can be found in the conversation as written (a string or a number)."""
    properties = (spec.input_schema or {}).get("properties") or {}
    return [n for n in names if isinstance(properties.get(n), dict) and properties[n].get("type") in GROUNDED_TYPES]


def _grounded(name: str, value: Any, said: str) -> bool:
    """Whether ``value`` of argument ``name`` appears in ``said`` (the user's words, lower case) as
    words of its own: a forced answer that does not, or that only repeats the argument's name, was made up."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    text = value.strip().lower() if isinstance(value, str) else format(value, "g")
    if not text or text == name.lower():
        return False
    return re.search(rf"(?<!\w){re.escape(text)}(?!\w)", said) is not None


# An argument that names a file: "path", "file", "filename", "source_path", "output_file" ...
_FILE_ARGUMENT = re.compile(r"(?:^|_)(?:path|file|filename|filepath)s?$")


# A file name as a message writes it: a name, a dot and an extension that starts with a letter ("todo.txt").
_FILE_NAMED = re.compile(r"(?<![\w/.-])[\w-]+\.[a-z][a-z0-9]{0,4}\b(?![./]?\w|/)", re.IGNORECASE)


def _file_arguments(spec: ToolSpec) -> list[str]:
    """The string arguments of ``spec`` that name a file (by their names)."""
    properties = (spec.input_schema or {}).get("properties") or {}
    return [name for name, prop in properties.items()
            if isinstance(prop, dict) and prop.get("type") == "string" and _FILE_ARGUMENT.search(name.lower())]


def _names_a_file_said(name: str, value: Any, said: str) -> bool:
    """Whether a file name ``value`` comes from ``said`` (the user's words and the tool results, lower
    case): written out, or each word of its name without the extension ("my shopping list" names
    ``shopping_list.txt``; a plural or singular of a word counts). A model cannot know a file name the
    conversation never wrote (``path.txt`` for "read a file"). A value with no word (``/``) cannot be judged."""
    if not isinstance(value, str) or value.strip().lower() == name.lower():
        return False
    if _grounded(name, value, said):
        return True
    base = value.strip().lower().replace("\\", "/").rsplit("/", 1)[-1]
    words = re.findall(r"[^\W_]+", base.rsplit(".", 1)[0] if "." in base.strip(".") else base)
    return all(re.search(rf"(?<!\w){re.escape(word.rstrip('s') or word)}", said) for word in words)


# At least this share of a fact's words must have been said for it to count as the user's words.
TOLD_SHARE = 0.5
# Words that only ask for something to be kept, without saying what ("remember something for me").
_ASKING_WORDS = frozenset("""
something anything thing stuff info information detail later important okay ok fact note remember memorize
memorise keep save store write down jot record please
""".split())


def _told(value: Any, said: str) -> bool:
    """Whether ``value``, a fact to note or remember (:attr:`ToolSpec.from_user`), is the user's: at least
    half of its meaningful words were said ("The user likes tea" for "remember that I like tea"). A fact
    in other words ("User is vegetarian" for "remember I don't eat meat", a translation) is the model's:
    the user's own words are kept instead (:func:`_own_words`). A value with no meaningful word cannot
    be judged."""
    if not isinstance(value, str):
        return False
    words = content_words(value) - {"user"}
    return not words or len(words & content_words(said)) >= TOLD_SHARE * len(words)


def _own_words(message: str, spec: ToolSpec, bot_name: str) -> str:
    """What the message asks ``spec`` to keep, in the user's words ("Remember that I don't eat meat" ->
    "I don't eat meat"); empty when it only asks ("Please remember something for me")."""
    request = request_for(message, spec, bot_name=bot_name)
    content = request.content if request is not None else kept_words(message, bot_name=bot_name) or ""
    asking = _ASKING_WORDS | name_words(spec.name) | content_words(spec.description)
    return content if content_words(content) - asking else ""


def _said_part(value: str, said: str) -> str:
    """``value`` without the sentences the user did not say: a fact the model wrote on past the user's words
    ("Merk dir, dass mein Zug um 8 Uhr fährt. Diese Fortschlüfte würden ...") keeps only what was said."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", value.strip()) if s]
    kept = [s for s in sentences if _told(s, said)]
    return " ".join(kept) if kept and len(kept) < len(sentences) else value


def _user_words(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content")) for m in messages if m.get("role") == "user").lower()


def _max_tokens(spec: ToolSpec) -> int:
    count = len((spec.input_schema or {}).get("properties") or {})
    return min(prompts.EXTRACTOR_MAX_TOKENS, prompts.EXTRACTOR_BASE_TOKENS + prompts.EXTRACTOR_TOKENS_PER_ARGUMENT * count)


def _describe_arguments(spec: ToolSpec) -> str:
    schema = spec.input_schema or {}
    required = set(schema.get("required") or [])
    lines = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        kind = prop.get("type", "any")
        if prop.get("enum"):
            kind = " | ".join(json.dumps(v) for v in prop["enum"][:20])
        desc = " ".join(str(prop.get("description") or "").split())[:200]
        lines.append(f"- {name} ({kind}{', required' if name in required else ''})" + (f": {desc}" if desc else ""))
    return "\n".join(lines) or "(none)"


async def extract(run: Run, spec: ToolSpec, partial: dict[str, Any] | None, *, failed: str = "",
                  results: str = "", results_said: str = "") -> Extraction:
    """Ask the tools model for the arguments of ``spec`` (``partial``: what the Identifier gave).

    ``failed``: the error of the previous try of this call, shown to the model with a simpler task.
    ``results``: the tool results of the earlier rounds, which may hold a value (the file a listing
    names): shown to the model (:func:`~grobot.core.agents.tool_identifier.results_text`), and a forced
    value may come from what they say (``results_said``, unquoted) as from the user's words.
    """
    description = " ".join((spec.description or "-").split())[:300]
    system = prompts.PARAMETER_EXTRACTOR.format(name=spec.name, description=description,
                                                arguments=_describe_arguments(spec))
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages += [m for m in run.history[-RECENT_MESSAGES:] if m.get("role") in ("user", "assistant") and m.get("content")]
    messages.append(run.user_msg)
    if results:
        messages.append({"role": "user", "content": prompts.EXTRACTOR_RESULTS.format(results=results)})
    if partial:
        messages.append({"role": "user", "content": f"(A first guess at the arguments, possibly wrong: {json.dumps(partial)})"})
    if failed:
        messages.append({"role": "user", "content": prompts.MODEL_RETRY.format(error=failed,
                                                                               simpler=prompts.SIMPLER_EXTRACTOR)})
    zone_names = time_zones.zone_arguments(spec.input_schema)
    zones = time_zones.zone_choices(run.msg.content) if zone_names else []  # read only for a tool that takes one
    zone_choices: dict[str, list[Any]] = {name: zones for name in zone_names} if zones else {}
    schema = _schema(spec, choices=zone_choices)
    said = _user_words([*run.history[-RECENT_MESSAGES:], run.user_msg]) + "\n" + results_said.lower()
    file_names = _file_arguments(spec)

    forced: list[str] = []
    kept: dict[str, Any] = {}  # the valid arguments of a first answer that only left some out
    last_error = ""
    own = _own_words(str(run.msg.content or ""), spec, run.bot.name) if spec.from_user else ""
    named = list(dict.fromkeys(_FILE_NAMED.findall(str(run.msg.content or "")))) if len(file_names) == 1 else []

    def from_conversation(name: str, value: Any) -> bool:
        """A file name or a fact to keep the conversation must hold; a value the grammar forced, too (a
        zone: one it names)."""
        if name in spec.from_user:
            return _told(value, said)
        if name in file_names:
            return _names_a_file_said(name, value, said)
        if name not in forced:
            return True
        return time_zones.resolve(str(value)) in zones if name in zone_names else _grounded(name, value, said)

    for attempt in range(2):
        result = await run.llm("tools", "parameter_extractor", messages, schema=schema, temperature=0.0,
                               max_tokens=_max_tokens(spec))
        try:
            answer, repaired = parse_object(result.text)
        except BadJSON as exc:
            last_error = str(exc)
        else:
            if repaired:
                await run.think("parameter_extractor", f"repaired broken JSON from the tools model for {spec.name}")
            args = answer.get("arguments", answer if "missing" not in answer and "question" not in answer else None)
            if isinstance(args, str):
                try:
                    args, _ = parse_object(args)
                except BadJSON:
                    args = None
            guessed = False
            if isinstance(args, dict):
                args = {**kept, **{k: v for k, v in args.items() if v is not None}}
                made_up = [n for n in args if not from_conversation(n, args[n])]
                if made_up:
                    shown = ", ".join(f"{n} {json.dumps(args[n])[:60]}" for n in made_up)
                    await run.think("parameter_extractor", f"{spec.name}: {shown} is not in the conversation, "
                                                           "so not used")
                    args = {k: v for k, v in args.items() if k not in made_up}
                    if own and any(n in spec.from_user for n in made_up):  # the user's own words instead
                        args.update({n: own for n in made_up if n in spec.from_user})
                        made_up = [n for n in made_up if n not in spec.from_user]
                        await run.think("parameter_extractor", f"{spec.name}: keeps the user's own words "
                                                               f"{json.dumps(own)[:80]}")
                    # A file name or a fact made up, not left out: asking the model again would not give
                    # the user's file or words.
                    guessed = any(n in file_names or n in spec.from_user for n in made_up)
                for n in spec.from_user:
                    if isinstance(args.get(n), str):
                        args[n] = _said_part(args[n], said)
                left_out = [n for n in spec.from_user if own and not args.get(n)]
                if left_out:  # what to keep, left out: the message says it
                    args.update({n: own for n in left_out})
                unnamed = [n for n in file_names if not args.get(n)]
                if len(unnamed) == 1 and len(named) == 1:  # the one file the message names, as written
                    args[unnamed[0]] = named[0]
                    guessed = False
                    await run.think("parameter_extractor", f"{spec.name}: {unnamed[0]} is the file the message "
                                                           f"names, {json.dumps(named[0])}")
            errors = check(args, spec)
            if not errors:
                return Extraction(arguments=args)
            missing = missing_required(args, spec.input_schema or {})
            said_missing = [str(m) for m in answer.get("missing") or [] if str(m)] if isinstance(answer.get("missing"), list) else []
            question = str(answer.get("question") or "").strip()
            only_missing = bool(missing) and len(errors) == len(missing)
            if only_missing and (said_missing or question or guessed):
                # The model says plainly the user never gave it (or made a file name up): no point in asking it again.
                return Extraction(arguments=None, missing=missing, question=question, error="; ".join(errors))
            last_error = "; ".join(errors)
            if attempt == 1 and missing:
                return Extraction(arguments=None, missing=missing, question=question, error=last_error)
            if only_missing:
                # Left out, not said to be missing: asked again with the grammar requiring them (a small
                # model tends to leave out what the message plainly gives).
                forced = _checkable(spec, missing)
                kept = dict(args) if isinstance(args, dict) else {}
                if forced:
                    literals = _literal_choices(spec, [n for n in forced if n not in zone_names],
                                                f"{run.msg.content}\n{results_said}", kept)
                    schema = _schema(spec, forced, {**zone_choices, **literals})
        if attempt == 0:
            await run.think("parameter_extractor", f"the arguments for {spec.name} were not valid ({last_error}); asking again")
            messages = messages + [{"role": "assistant", "content": result.text},
                                   {"role": "user", "content": prompts.EXTRACTOR_RETRY.format(error=last_error)}]
    return Extraction(arguments=None, error=last_error)
