"""Request cues of the built-in tools: how users ask for each, in English, French, Spanish and German.

The Tool Router's sentence embedder (MiniLM) reads English: "Quelle heure est-il à Lima ?" or
"Merk dir, dass ..." land nowhere near the clock or the memory, and an indirect question ("is it
the weekend yet?") lands no nearer to the clock than chat about weekends does. A cue is the shape
of a *request* for what a tool does, not a topic word: a question word with what is asked
("what time", "quelle heure", "qué día", "wie spät"), an imperative with its object ("list your
files", "merk dir"), a file name after a verb that reads it. Chat about the same topics ("what time
should I go to bed?", "who invented the calendar?", "how do I read a file in Python?") has the
topic words but not the shape, so it matches none.

A cue makes its tool a sure candidate of the Router (:data:`CUE_SCORE`); a tool that changes
things is still called only when the message asks for it (:mod:`write_requests`). Written per
tool, apart from the benchmark's tasks; only built-in tools have cues (an MCP tool is routed by its
description's meaning and its name's words).
"""

from __future__ import annotations

import re
import unicodedata

_DAYS = (r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|lundi|mardi|mercredi|jeudi|vendredi|"
         r"samedi|dimanche|lunes|martes|miercoles|jueves|viernes|sabado|domingo|montag|dienstag|mittwoch|donnerstag|"
         r"freitag|samstag|sonntag|wochenende)")
_FILE = r"[\w-]+\.[a-z][a-z0-9]{0,4}\b"  # a file name: notes.txt (as tool_router's)
_FILES = r"(?:files?|documents?|docs|fichiers?|archivos?|ficheros?|documentos?|dateien|datei|dokumente)"

_CUES: dict[str, tuple[str, ...]] = {
    # The current date, time or day (a zone may follow).
    "datetime_now": (
        r"(?<!forget\s)(?<!forgetting\s)(?<!forgot\s)(?<!track\sof\s)"
        r"\bwhat(?:'s|s| is)?\s+(?:the\s+)?(?:current\s+|local\s+|exact\s+)?(?:time|date|day|hour|year|month)\b"
        r"(?!\s+(?:to|should|would|do|does|did|was|were|will|zone|zones|of\s+(?:my|your|his|her|their|the\s+year)))",
        r"\b(?:time|date|day|year|month)\s+is\s+it\b",
        r"\bwhich\s+(?:day|date)\s+(?:is\s+(?:it|today)|today)\b",
        r"\b(?:today'?s|current|local)\s+(?:date|time|day|weekday)\b",
        r"\b(?:date|day)\s+today\b",
        r"\bis\s+it\s+(?:already\s+|still\s+|finally\s+)?(?:the\s+)?" + _DAYS + r"\b",
        r"\bis\s+it\s+(?:too\s+)?(?:late|early|morning|afternoon|evening|night|midnight|noon|dark)\s+"
        r"(?:yet|now|already|right\s+now|there|in\s+\w+)",
        r"\b(?:do\s+you\s+(?:know|have)|tell\s+me)\s+the\s+(?:time|date)\b",
        r"\bclock\s+says?\b",
        r"\bhow\s+late\s+is\s+it\b",
        # French
        r"\bquelle\s+heure\b", r"\bquel\s+jour\b", r"\bquelle\s+(?:est\s+la\s+)?date\b",
        r"\bon\s+est\s+(?:le\s+)?(?:quel|combien)\b", r"\bsommes-nous\b", r"\bdate\s+d'aujourd'hui\b",
        r"\bheure\s+(?:actuelle|qu'il\s+est)\b", r"\b(?:c'est|est-ce)\s+(?:deja\s+|enfin\s+)?(?:le\s+)?week-?end\b",
        # Spanish
        r"\bque\s+hora\b", r"\bque\s+dia\b", r"\bque\s+fecha\b", r"\ba\s+(?:como|cuanto)s?\s+estamos\b",
        r"\bfecha\s+de\s+hoy\b", r"\bhora\s+(?:es|actual)\b", r"\b(?:ya\s+)?es\s+fin\s+de\s+semana\b",
        # German
        r"\bwie\s+spat\b", r"\bwie\s*viel\s+uhr\b", r"\bwelche[rsnm]?\s+(?:tag|wochentag|datum|uhrzeit)\b",
        r"\bden\s+wievielten\b", r"\b(?:aktuelle|heutige)[sn]?\s+(?:datum|uhrzeit|zeit)\b",
        r"\bist\s+(?:(?:schon|endlich|heute|bald)\s+){1,2}(?:" + _DAYS + r")\b", r"\bwelcher\s+tag\s+ist\b",
    ),
    # Which files the bot has.
    "files_list": (
        r"\b(?:which|what)\s+(?:files|documents|docs)\b",
        r"\b(?:list|enumerate|show\s+me|show)\s+(?:all\s+)?(?:of\s+)?(?:your|the|my)\s+(?:files|documents|docs)\b",
        r"\b(?:files|documents)\s+(?:do\s+you\s+have|you\s+have|can\s+you\s+see|you\s+can\s+see|are\s+there)\b",
        r"\bdo\s+you\s+have\s+(?:any\s+)?(?:files|documents|docs)\b",
        r"\bquels\s+(?:fichiers|documents)\b",
        r"\b(?:liste|montre|affiche)[\w-]*\s+(?:moi\s+)?(?:la\s+liste\s+d[e']\s*)?(?:tes|vos|les|mes)\s+(?:fichiers|documents)\b",
        r"\b(?:as-tu|avez-vous|tu\s+as)\s+des\s+(?:fichiers|documents)\b",
        r"\bque\s+(?:archivos|ficheros|documentos)\b",
        r"\b(?:lista|muestra|ensena)(?:me)?\s+(?:tus|los|mis)\s+(?:archivos|ficheros|documentos)\b",
        r"\btienes\s+(?:algun\w*\s+)?(?:archivos|ficheros|documentos)\b",
        r"\bwelche\s+(?:dateien|dokumente)\b",
        r"\b(?:liste|zeig)\w*\s+(?:mir\s+)?(?:deine|die|meine|alle)\s+(?:dateien|dokumente)\b",
        r"\bhast\s+du\s+(?:irgendwelche\s+)?(?:dateien|dokumente)\b",
    ),
    # A file's text: a file name with a verb that reads it, or after the word "file".
    "files_read": (
        r"\b(?:read|open|show|display|print|cat|view|look\s+at|check|what'?s\s+in|whats\s+in|contents?\s+of|"
        r"lis|lire|ouvre|ouvrir|montre|affiche|contenu\s+de|lee|leer|abre|abrir|muestra|ensena|contenido\s+de|"
        r"lies|lese|offne|zeig|inhalt\s+von)\b.{0,40}?\b" + _FILE,
        r"\b" + _FILES + r"\s+" + _FILE,
        r"^\W*" + _FILE + r"\W*$",
    ),
    # The notes about the user.
    "user_notes_read": (
        r"\bwhat\s+do\s+you\s+(?:know|remember)\s+about\s+me\b",
        r"\b(?:your|the)\s+notes\s+(?:about|on)\s+me\b",
        r"\bwhat\s+(?:have\s+you|did\s+you)\s+(?:written|write|noted|note|jotted|kept|stored)\s+(?:down\s+)?about\s+me\b",
        r"\b(?:que|qu'est-ce\s+que)\s+(?:sais-tu|tu\s+sais|savez-vous|vous\s+savez)\s+(?:de|sur)\s+moi\b",
        r"\b(?:tes|vos)\s+notes\s+sur\s+moi\b",
        r"\bque\s+(?:sabes|recuerdas)\s+(?:de|sobre)\s+mi\b", r"\btus\s+notas\s+sobre\s+mi\b",
        r"\bwas\s+weisst\s+du\s+(?:uber|von)\s+mir?ch?\b", r"\bdeine\s+notizen\s+uber\s+mich\b",
    ),
    # A fact about the user, to note.
    "user_notes_add": (
        r"^\W*(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+)?(?:note|jot\s+down|write\s+down)\s+(?:down\s+)?(?:that|this|:)",
        r"^\W*(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+)?(?:jot|write|put)\s+(?:this|that|it)\s+down\b",
        r"\b(?:take|make|add)\s+a\s+note\b",
        r"^\W*(?:s'il\s+te\s+plait\s*,?\s*)?(?:note|notez|prends\s+note|prenez\s+note)\s+(?:que|qu'|de|:)",
        r"^\W*(?:por\s+favor\s*,?\s*)?(?:apunta|anota|toma\s+nota)\b",
        r"^\W*(?:bitte\s*,?\s*)?(?:notier\w*|schreib\w*\s+(?:dir\s+)?auf)\b",
    ),
    # A fact to keep in the bot's memory.
    "memory_remember": (
        r"^\W*(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+|would\s+you\s+)?(?:remember|memori[sz]e|keep\s+in\s+mind|"
        r"don't\s+forget|do\s+not\s+forget)\b(?!\s+(?:when|how|the\s+time))",
        r"\bremember\s+for\s+me\b",
        r"^\W*(?:s'il\s+te\s+plait\s*,?\s*)?(?:retiens|retenez|souviens-toi|souvenez-vous|memorise|n'oublie\s+pas)\b",
        r"\bgarde\s+(?:bien\s+)?en\s+(?:tete|memoire)\b",
        r"^\W*(?:por\s+favor\s*,?\s*)?(?:recuerda|acuerdate|memoriza|no\s+olvides|guarda\s+en\s+(?:tu\s+)?memoria)\b",
        r"^\W*(?:bitte\s*,?\s*)?(?:merk|merke)\s+dir\b", r"\bvergiss\s+nicht\b", r"\bbehalte?\s+im\s+kopf\b",
    ),
    # What the bot's memory holds about something.
    "memory_search": (
        r"\b(?:search|look\s+up|check|look\s+in|look\s+through|go\s+through)\s+(?:in\s+)?your\s+memory\b",
        r"\bwhat\s+do\s+you\s+remember\s+about\s+(?!me\b)",
        r"\b(?:cherche|recherche|regarde)\s+dans\s+(?:ta|votre)\s+memoire\b",
        r"\bbusca\s+en\s+tu\s+memoria\b", r"\bque\s+recuerdas\s+(?:de|sobre)\s+(?!mi\b)",
        r"\b(?:such|durchsuch)\w*\s+(?:in\s+)?(?:deinem|dein)\s+gedachtnis\b",
        r"\bwas\s+weisst\s+du\s+(?:noch\s+)?(?:uber|von)\s+(?!mich\b|mir\b)",
    ),
}
# One pattern per tool, its cues as alternatives: one scan of a message per tool (read for every message).
_COMPILED = {name: re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
             for name, patterns in _CUES.items()}


def fold(text: str) -> str:
    """``text`` lowercased, without accents, with plain apostrophes ("Qué día" -> "que dia", "weißt" -> "weisst")."""
    text = text.lower().replace("ß", "ss").replace("\u2019", "'").replace("\u00a0", " ")
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def cued(message: str, names: list[str]) -> list[str]:
    """The tools among ``names`` whose request cue ``message`` holds (in the order of ``names``)."""
    text = fold(message)
    return [name for name in names if (pattern := _COMPILED.get(name)) is not None and pattern.search(text)]


def has_cues(name: str) -> bool:
    """Whether the tool ``name`` has request cues (a built-in's)."""
    return name in _COMPILED
