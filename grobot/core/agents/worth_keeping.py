"""Whether a message may hold something worth keeping: the rule in front of the Archivist's LLM call.

The Archivist (:mod:`grobot.core.agents.archivist`) costs one more LLM call after the answer, on
the same model that answers the next message. Most of what people write to a bot is a request
("write me a haiku"), a question without its question mark ("how do I center a div"), or a
reaction ("lol that was funny"): nothing to remember. This rule, read in microseconds, keeps the
call for what may hold a fact, a decision, a preference or an event:

1. a first-person statement ("I live in Lisbon", "my name is Ada") or a lasting cue ("from now on",
   "always", "remember") is always looked at, but not a state of the moment ("im so tired today",
   "I'm eating lunch rn", "I'm back"): the clause it opens is set aside;
2. without a memory, nothing else (the notes are about the user only);
3. a message is looked at when one of its sentences states something: the greetings, interjections
   and people addressed it opens with ("haha", "ok cool", "hey bot", "please") set aside, it is not
   short, a question (a question mark, a question word, an auxiliary before its subject), a request
   (an imperative verb, "can you ...", unless the verb is the subject of a statement: "review is on
   Friday"), or a reaction to the conversation (its subject is "this", "that", "it" or "you").

English word lists: a message in another language is looked at as before (rule 3 keeps its length
and question-mark checks only). An input of any length is read in linear time (a few milliseconds
for 4,000 characters). ``bench/archivist_gate.py`` measures the rule on a tuning split, a held-out
split and two splits written by someone who never saw it.
"""

from __future__ import annotations

import re

# First-person statements worth a note-taking call (a rule instead of an LLM call on every message).
SELF_STATEMENT = re.compile(
    r"\b(i am|i'm|im|i live|i work|i study|i like|i love|i hate|i prefer|i have|i was born|my name|my [a-z]+ is|"
    r"call me|remember that|je suis|j'habite|ich bin|ich wohne|soy|me llamo)\b",
    re.IGNORECASE,
)
# Words that say something lasts: a preference or a rule for later.
LASTING = re.compile(r"\b(from now on|going forward|from today|in future|always|never(?! mind)|remember|don'?t forget|"
                     r"by default)\b", re.IGNORECASE)
MIN_STATEMENT_WORDS = 4
# A state of the moment, which will not be true tomorrow ("im so tired today", "I'm eating lunch rn", "I'm
# back"): a note kept of it would be shown with the writer's every later message. The clause it opens is set aside.
_NOW = r"(?:now|rn|right now|atm|at the moment|at the minute|today|tonight|this (?:morning|afternoon|evening))"
_MOMENT = re.compile(
    r"\b(?:i am|i'm|im)\s+(?:(?:so|really|very|kinda|pretty|super|just|still|a bit|a little|too)\s+)*"
    r"(?:(?:tired|hungry|thirsty|bored|sleepy|exhausted|sick|stressed|cold|hot|late|stuck|confused|annoyed|done|back|"
    rf"here|away|afk|home|off|out)\b|(?:\w+ing|at|in|on)\b(?=[^.!?;,\n]{{0,60}}?\b{_NOW}\b))[^.!?;,\n]*",
    re.IGNORECASE,
)

# What opens a message without saying anything: greetings, laughter, thanks, agreement, the people addressed.
_OPENERS = (
    r"<[@#][!&]?\d+>|@\S+|hi|hello|hey|heya|yo|sup|hiya|howdy|good (?:morning|afternoon|evening|night)|morning|"
    r"evening|night|gm|gn|bye|cya|see (?:you|ya)|lol|lmao|lmfao|rofl|(?:ha){2,}h?|(?:he){2,}h?|hah|xd|wow|whoa|"
    r"omg|oh|ah|aw+|oof|ugh|hmm+|welp|damn|dang|rip|nah|nope|no|yeah|yea|yep|yup|yes|ok|okay|kk|k|alright|"
    r"sure|cool|nice(?: one)?|great|awesome|sweet|perfect|true|fair|same|gg|"
    r"(?:thanks?(?: you)?(?: (?:a lot|so much|very much))?|thx|ty|tysm)(?: for\b[^.!\n]*[.!]?)?|np|please|pls|plz|kindly|"
    r"bot|everyone|everybody|all|guys|folks|y'?all|people|friends|team|so|um+|uh+|well|btw|also"
)
_OPENING = re.compile(rf"^(?:(?:{_OPENERS})\b[\s,.!:;~-]*)+", re.IGNORECASE)
# A question without its question mark: a question word, or an auxiliary before its subject.
_QUESTION = re.compile(
    r"^(?:what|what's|whats|which|who|who's|whos|whom|whose|"
    r"(?:how|why|when|where)(?:'s|s)?\s+(?:is|are|was|were|do|does|did|can|could|should|would|will|shall|may|"
    r"might|has|have|had|much|many|long|often|far|old|big|come)|"
    r"(?:is|are|was|were|am|do|does|did|can|could|would|should|will|shall|may|might|has|have|had|isn't|aren't|"
    r"doesn't|didn't|can't|won't|shouldn't)\s+(?:i|you|u|we|they|he|she|it|there|this|that|the|a|an|anyone|anybody|"
    r"someone|somebody|people)|any\s+(?:tips|ideas|idea|advice|suggestions|recommendations|way|chance|news)"
    r")\b",
    re.IGNORECASE,
)
# A request: a verb people open a command with ("write ...", "give me ..."), or "can you ...".
_REQUEST_VERBS = (
    "write|tell|explain|summarize|summarise|give|translate|help|list|make|draft|recommend|suggest|show|rewrite|"
    "roll|flip|pick|choose|describe|compare|generate|create|find|draw|calculate|compute|solve|check|search|look|"
    "fix|define|convert|count|name|sing|send|post|answer|continue|repeat|teach|quiz|guess|plan|design|build|code|"
    "review|proofread|correct|analyze|analyse|evaluate|rate|rank|sort|format|outline|brainstorm|imagine|pretend|"
    "roleplay|simulate|predict|estimate|paraphrase|expand|shorten|simplify|elaborate|clarify|recap|debug|refactor|"
    "optimize|optimise|implement|read|say|reply|respond|play|ask|get|fetch|open|tldr|eli5"
)
_REQUEST = re.compile(rf"^(?:(?:{_REQUEST_VERBS})\b|(?:can|could|would|will)\s+(?:you|u|ya|someone|anyone|somebody)\b)",
                      re.IGNORECASE)
# The same word as a noun, the subject of a verb ("code reviews need two approvals", "the plan is", "review is on Friday").
_SUBJECT = re.compile(r"^\w+\s+(?:\w+\s+)?(?:is|are|was|were|has|have|had|will|must|should|needs?|gets?|goes|happens?|"
                      r"starts?|ends?|moved|changed|stays?)\b", re.IGNORECASE)
# Where one sentence ends and the next begins.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
# A reaction to the conversation: its subject is the conversation itself or the bot.
_REACTION = re.compile(r"^(?:this|that|that's|thats|it|it's|its|you|you're|youre|ur|sounds|looks|seems|makes sense)\b",
                       re.IGNORECASE)


def worth_a_look(user_text: str, *, with_memory: bool) -> bool:
    """Whether the Archivist's LLM call is made for ``user_text`` (see the module's rule)."""
    if LASTING.search(user_text) and not user_text.rstrip().endswith("?"):
        return True
    said = _MOMENT.sub(" ", user_text)
    if SELF_STATEMENT.search(said):
        return True
    return with_memory and any(map(_statement, _SENTENCE_END.split(said)))


def _statement(sentence: str) -> bool:
    """Whether one sentence of a message states something: not short, a question, a request or a reaction."""
    text = _OPENING.sub("", sentence.strip()).strip()
    if len(text.split()) < MIN_STATEMENT_WORDS or text.endswith("?"):
        return False
    request = _REQUEST.match(text) and not _SUBJECT.match(text)
    return not (_QUESTION.match(text) or request or _REACTION.match(text))
