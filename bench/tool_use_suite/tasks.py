"""The tasks of ``bench/tool_use.py``: a ``dev`` split the chain may be tuned on, and a ``heldout``
split it must never be tuned on (see the banner above ``HELDOUT``).

A task is one message to a bot (or two, for a ``followup``: a clarifying question, then the value in
the next turn of the same conversation) with what a user expects of the run:

- ``plain``: chat that needs no tool (tool-ish words included): no tool is called and an answer comes;
- ``tool``: a built-in tool or ``mcp-server-time``'s clock (one of a group) is called, works, and its
  arguments pass the task's check (the file or zone asked for);
- ``mcp``: the same with an MCP tool whose argument names differ from the built-ins'
  (``convert_time``'s ``source_timezone``/``time``/``target_timezone``, server-everything's
  ``echo(message)`` and ``get-sum(a, b)``);
- ``two``: two tools in one message, both called;
- ``clarify``: a tool's required argument is missing: no call of it, and the answer asks;
- ``followup``: as ``clarify``, then the user gives the value and the tool is called with it;
- ``fails``: the tool fails (a missing file, an unknown zone): it is called, and the answer comes.

The bot has the files of :data:`FILES`, the notes of :data:`NOTES` about the user, the memories of
:data:`MEMORIES`; the strict judge (:mod:`bench.tool_use_suite.judge`) reads what the tools returned in
the run itself, so a clock or an earlier task's write never makes a right answer wrong.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

TIME_TOOLS = ("datetime_now", "time__get_current_time")
CONVERT = ("time__convert_time",)
ECHO = ("everything__echo",)
SUM = ("everything__get-sum",)
FILES_LIST = ("files_list",)
FILES_READ = ("files_read",)
NOTES_READ = ("user_notes_read",)
NOTES_ADD = ("user_notes_add",)
REMEMBER = ("memory_remember",)
SEARCH = ("memory_search",)
WRITES = ("user_notes_add", "memory_remember")  # "keep in mind that ...": a note or a memory

KINDS = ("plain", "tool", "mcp", "two", "clarify", "followup", "fails")
SPLITS = ("dev", "heldout", "fresh")

# What the bot has before the first task (the same for both modes).
FILES = {
    "notes.txt": "Shopping list: milk, eggs, bread.\n",
    "recipes.md": "# Pancakes\nFlour, milk, eggs; fry in butter.\n",
    "todo.txt": "Call the plumber\nBook the train to Lyon\nWater the plants\n",
    "birthdays.txt": "Mum: 12 May\nLeo: 3 September\nGrandpa: 30 November\n",
    "packing_list.md": "- passport\n- phone charger\n- sunscreen\n- hiking boots\n",
}
NOTES = ("Ada likes hiking in the Alps.", "Ada has a cat called Pixel.")
MEMORIES = ("The team meeting is on Friday at 10:00 in the Orion room.",
            "Ada's dentist appointment is on Tuesday afternoon.")


@dataclass(frozen=True)
class Task:
    kind: str  # one of KINDS
    text: str
    tools: tuple[tuple[str, ...], ...] = ()  # each group: one of these must be called
    check: Callable[[dict[str, Any]], bool] | None = None  # on the arguments of the first group's call
    missing: tuple[str, ...] = ()  # clarify, followup: the tools that must not be called in the first turn
    then: str = ""  # followup: the user's next message, with the value asked for
    asks: str = "time"  # of a clock's result, what the user asked: time, date, weekday, or day (date or weekday)
    lang: str = "en"  # en, fr, es, de: the words the strict judge accepts besides English
    line_with: str = ""  # of a file read, only the lines holding this are the answer ("Leo" of birthdays.txt)
    split: str = ""  # dev or heldout (set below)

    @property
    def messages(self) -> tuple[str, ...]:
        return (self.text, self.then) if self.then else (self.text,)


def has(*texts: str) -> Callable[[dict[str, Any]], bool]:
    """The call's arguments hold one of ``texts`` (case-insensitive; ``_`` and a space alike: "New York")."""

    def plain_text(text: str) -> str:
        return text.lower().replace("_", " ")

    return lambda args: any(plain_text(t) in plain_text(json.dumps(args, ensure_ascii=False)) for t in texts)


def adds(a: float, b: float) -> Callable[[dict[str, Any]], bool]:
    """get-sum was given these two numbers."""

    def check(args: dict[str, Any]) -> bool:
        try:
            return sorted([float(args.get("a")), float(args.get("b"))]) == sorted([a, b])  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False

    return check


def plain(text: str, lang: str = "en") -> Task:
    return Task("plain", text, lang=lang)


def tool(text: str, group: tuple[str, ...], check: Callable[[dict[str, Any]], bool] | None = None, **kw: Any) -> Task:
    return Task("tool", text, (group,), check, **kw)


def mcp(text: str, group: tuple[str, ...], check: Callable[[dict[str, Any]], bool] | None = None, **kw: Any) -> Task:
    return Task("mcp", text, (group,), check, **kw)


def two(text: str, first: tuple[str, ...], second: tuple[str, ...],
        check: Callable[[dict[str, Any]], bool] | None = None, **kw: Any) -> Task:
    return Task("two", text, (first, second), check, **kw)


def clarify(text: str, missing: tuple[str, ...], **kw: Any) -> Task:
    return Task("clarify", text, missing=missing, **kw)


def followup(text: str, then: str, group: tuple[str, ...], check: Callable[[dict[str, Any]], bool] | None = None,
             **kw: Any) -> Task:
    return Task("followup", text, (group,), check, missing=group, then=then, **kw)


def fails(text: str, group: tuple[str, ...], check: Callable[[dict[str, Any]], bool] | None = None, **kw: Any) -> Task:
    return Task("fails", text, (group,), check, **kw)


# =========================================================================== DEV: tune on these
# The first 40 are the suite the chain was tuned on before the strict judge existed.
DEV: list[Task] = [
    # -- plain chat: no tool
    plain("Hello!"),
    plain("What is the capital of France?"),
    plain("Tell me a joke."),
    plain("How are you today?"),
    plain("Write a haiku about autumn."),
    plain("Explain recursion in one sentence."),
    plain("Thanks, that's all for now."),
    plain("What's your name?"),
    plain("Translate 'good morning' into Spanish."),
    plain("Give me one tip for sleeping better."),
    plain("Who wrote Romeo and Juliet?"),
    plain("What is 12 times 12?"),
    # -- each built-in tool
    tool("What is the date today?", TIME_TOOLS, asks="date"),
    tool("What day of the week is it?", TIME_TOOLS, asks="weekday"),
    tool("What time is it in UTC?", TIME_TOOLS),
    tool("List your files.", FILES_LIST),
    tool("Which files do you have?", FILES_LIST),
    tool("Read the file notes.txt.", FILES_READ, has("notes.txt")),
    tool("Show me what is in recipes.md", FILES_READ, has("recipes.md")),
    tool("What do you know about me?", NOTES_READ),
    tool("Read your notes about me.", NOTES_READ),
    tool("Please note that my favourite colour is blue.", NOTES_ADD, has("blue")),
    tool("Note that I live in Berlin.", NOTES_ADD, has("Berlin")),
    tool("Remember that the team meeting is on Friday.", REMEMBER, has("Friday")),
    tool("Search your memory for the team meeting.", SEARCH, has("meeting")),
    # -- mcp-server-time
    tool("What time is it now in Tokyo?", TIME_TOOLS, has("Tokyo")),
    tool("What's the current time in New York?", TIME_TOOLS, has("New_York")),
    tool("Current time in Europe/Paris, please.", TIME_TOOLS, has("Paris")),
    tool("What time is it in Sydney right now?", TIME_TOOLS, has("Sydney")),
    mcp("Convert 15:00 from Europe/London to America/New_York.", CONVERT, has("15:00")),
    mcp("Convert 09:30 in Asia/Tokyo to Europe/Berlin time.", CONVERT, has("09:30")),
    # -- two tools in one message
    two("List your files and tell me the time in UTC.", FILES_LIST, TIME_TOOLS),
    two("What time is it in London, and what do you know about me?", TIME_TOOLS, NOTES_READ, has("London")),
    two("Read notes.txt and tell me today's date.", FILES_READ, TIME_TOOLS, has("notes.txt"), asks="date"),
    two("Remember that I like tea, and list your files.", REMEMBER, FILES_LIST, has("tea")),
    # -- a required argument is missing: ask
    clarify("Read a file for me.", FILES_READ),
    clarify("Convert a time for me.", CONVERT),
    clarify("Please remember something for me.", REMEMBER),
    # -- a tool that fails
    fails("Read the file missing.txt.", FILES_READ, has("missing.txt")),
    fails("What time is it in the time zone Mars/Olympus?", TIME_TOOLS, has("Mars")),
    fails("Show me the file ../../etc/passwd", FILES_READ, has("passwd")),

    # -- written with the held-out set, for the same variety
    plain("I remember my first computer, it was a Commodore 64."),
    plain("Any tips for remembering people's names?"),
    plain("I never know what time to go to bed, any advice?"),
    plain("Can you explain what a time zone is, in simple words?"),
    plain("Who invented the calendar we use today?"),
    plain("hey how's it going"),
    plain("lol that's hilarious, thanks"),
    plain("whats the captial of australia"),
    plain("Write me a short poem about the sea."),
    plain("How many minutes are there in a day?"),
    plain("Salut ! Tu vas bien ?", "fr"),
    plain("Hola, ¿qué tal?", "es"),
    plain("Was ist der Unterschied zwischen Wetter und Klima?", "de"),
    tool("I have a call with a client in New York, what time is it there right now?", TIME_TOOLS, has("New_York")),
    tool("what time is it in tokyo rn", TIME_TOOLS, has("Tokyo")),
    tool("Is it the weekend yet?", TIME_TOOLS, asks="weekday"),
    tool("What's today's date in Singapore?", TIME_TOOLS, has("Singapore"), asks="date"),
    tool("Quelle heure est-il à Paris en ce moment ?", TIME_TOOLS, has("Paris"), lang="fr"),
    tool("¿Qué día de la semana es hoy?", TIME_TOOLS, asks="weekday", lang="es"),
    tool("Welches Datum haben wir heute?", TIME_TOOLS, asks="date", lang="de"),
    tool("Can you open todo.txt and tell me what I still have to do?", FILES_READ, has("todo.txt")),
    tool("Do you have any documents from me?", FILES_LIST),
    tool("Please list the files you can see.", FILES_LIST),
    tool("reed the file recipes.md", FILES_READ, has("recipes.md")),
    tool("Quels fichiers as-tu ?", FILES_LIST, lang="fr"),
    tool("¿Puedes leer birthdays.txt?", FILES_READ, has("birthdays.txt"), lang="es"),
    tool("What have you written down about me so far?", NOTES_READ),
    tool("Can you remember for me that the plumber comes on Thursday?", WRITES, has("Thursday")),
    tool("Note que je travaille comme infirmière.", NOTES_ADD, has("infirmi", "nurse"), lang="fr"),
    tool("Busca en tu memoria la reunión del equipo.", SEARCH, has("reuni", "meeting", "equipo", "team"), lang="es"),
    mcp("Convert 8:30 from America/New_York to Europe/London.", CONVERT, has("8:30")),
    mcp("Use the echo tool to say: the cake is ready", ECHO, has("cake")),
    mcp("Add 1234 and 4321 using your sum tool.", SUM, adds(1234, 4321)),
    two("What time is it in Berlin, and which files do you have?", TIME_TOOLS, FILES_LIST, has("Berlin")),
    two("Add 5 and 7 with the sum tool, then tell me the time in UTC.", SUM, TIME_TOOLS, adds(5, 7)),
    clarify("Add a note about me.", NOTES_ADD),
    followup("Can you read a file for me?", "recipes.md", FILES_READ, has("recipes.md")),
    followup("Echo something back to me.", "hello from the other side", ECHO, has("other side")),
    followup("Could you take a note about me?", "I'm vegetarian.", NOTES_ADD, has("vegetarian")),
    fails("Open shopping.txt please", FILES_READ, has("shopping")),
    fails("What time is it in Europe/Gotham?", TIME_TOOLS, has("Gotham")),
    fails("¿Qué hora es en Narnia?", TIME_TOOLS, has("Narnia"), lang="es"),
    fails("Convert 10:00 from Mars/Base to Europe/Paris.", CONVERT, has("Mars")),
]

# =========================================================================== HELD-OUT
# HELD-OUT SET: DO NOT TUNE THE CHAIN ON THESE TASKS.
# Written apart from the chain, as users write, to judge it; it is only run to report. No prompt,
# router text, place-name table, file-name rule or special case may be written or adjusted to make
# one of these pass: change the chain on the dev split, then read this split's figure as it comes.
HELDOUT: list[Task] = [
    # -- plain chat, tool-ish words included: no tool
    plain("My grandmother used to keep all her recipes in a little notebook."),
    plain("What's a good way to take notes in a lecture?"),
    plain("Do you ever forget things?"),
    plain("time flies when you're having fun"),
    plain("How do I stop losing my keys all the time?"),
    plain("what's the difference between a file and a folder"),
    plain("I'm writing a diary, what could I write about today?"),
    plain("Is it rude to text someone late at night?"),
    plain("Remind me, what's the plural of 'mouse'?"),
    plain("What's the sum of the angles in a triangle?"),
    plain("Do you think people were happier before smartphones?"),
    plain("Peux-tu me donner une idée de dessert facile ?", "fr"),
    plain("Je me souviens encore de mon premier vélo, il était rouge.", "fr"),
    plain("¿Me recomiendas un libro para el verano?", "es"),
    plain("Kannst du mir einen Witz erzählen?", "de"),
    plain("Ich erinnere mich gern an meine Schulzeit.", "de"),
    plain("Why do we have leap years?"),
    # -- the clock, asked as people ask
    tool("My sister lives in Sydney, is it too late to call her now?", TIME_TOOLS, has("Sydney")),
    tool("Do you know what day it is today?", TIME_TOOLS, asks="day"),
    tool("whats the time in london pls", TIME_TOOLS, has("London")),
    tool("Is it already evening in Los Angeles?", TIME_TOOLS, has("Los_Angeles")),
    tool("Could you check the clock in Chicago for me?", TIME_TOOLS, has("Chicago")),
    tool("I'm flying to Lisbon tonight. What time is it there at the moment?", TIME_TOOLS, has("Lisbon")),
    tool("On est le combien aujourd'hui ?", TIME_TOOLS, asks="date", lang="fr"),
    tool("Il est quelle heure à Tokyo ?", TIME_TOOLS, has("Tokyo"), lang="fr"),
    tool("¿Qué hora es en Madrid ahora mismo?", TIME_TOOLS, has("Madrid"), lang="es"),
    tool("Wie spät ist es gerade in Berlin?", TIME_TOOLS, has("Berlin"), lang="de"),
    # -- files
    tool("What's on my packing list? It's in packing_list.md", FILES_READ, has("packing_list")),
    tool("whats in birthdays.txt", FILES_READ, has("birthdays.txt")),
    tool("I forgot which files I gave you, can you remind me?", FILES_LIST),
    tool("When is Leo's birthday? It's written in birthdays.txt.", FILES_READ, has("birthdays.txt"), line_with="Leo"),
    tool("Lis le fichier todo.txt s'il te plaît.", FILES_READ, has("todo.txt"), lang="fr"),
    tool("Zeig mir bitte die Datei notes.txt.", FILES_READ, has("notes.txt"), lang="de"),
    tool("¿Qué archivos tienes?", FILES_LIST, lang="es"),
    # -- notes and memory
    tool("Do you remember anything about me?", NOTES_READ),
    tool("Qu'est-ce que tu sais sur moi ?", NOTES_READ, lang="fr"),
    tool("By the way, I'm allergic to peanuts, please keep that in mind.", WRITES, has("peanut")),
    tool("Merk dir bitte, dass ich zwei Kinder habe.", WRITES, has("Kinder", "child", "zwei", "two"), lang="de"),
    tool("When is the team meeting? Check your memory.", SEARCH, has("meeting")),
    tool("Did I tell you anything about my dentist appointment? Look in your memory.", SEARCH, has("dentist")),
    # -- MCP tools with their own argument names
    mcp("If it's 18:00 in Paris, what time is it in Tokyo?", CONVERT, has("18:00")),
    mcp("My flight lands at 14:45 Sydney time. What time is that in Berlin?", CONVERT, has("14:45")),
    mcp("Quelle heure sera-t-il à New York quand il est 09:00 à Paris ?", CONVERT, has("09:00"), lang="fr"),
    mcp("Can you echo back 'testing one two three'?", ECHO, has("testing")),
    mcp("What do you get if you add 17.5 and 24.25? Use the sum tool.", SUM, adds(17.5, 24.25)),
    mcp("¿Cuánto es 250 más 175? Usa la herramienta de suma.", SUM, adds(250, 175), lang="es"),
    # -- two tools
    two("Read todo.txt, and also tell me what day it is.", FILES_READ, TIME_TOOLS, has("todo.txt"), asks="day"),
    two("Remember that my bike is blue and tell me the date.", WRITES, TIME_TOOLS, has("bike"), asks="date"),
    two("Liste tes fichiers et dis-moi l'heure à Paris.", TIME_TOOLS, FILES_LIST, has("Paris"), lang="fr"),
    two("What do you know about me, and what time is it in Tokyo?", TIME_TOOLS, NOTES_READ, has("Tokyo")),
    # -- a value is missing: ask, then use the answer
    clarify("Can you open a file for me?", FILES_READ),
    followup("I'd like you to convert a time for me.", "15:30 from Europe/Paris to America/Chicago", CONVERT,
             has("15:30")),
    followup("I need you to remember something.", "My locker code is 4512.", WRITES, has("4512")),
    followup("Peux-tu lire un fichier ?", "todo.txt", FILES_READ, has("todo.txt"), lang="fr"),
    followup("Add two numbers for me with your tool.", "19 and 23", SUM, adds(19, 23)),
    followup("Lee un archivo, por favor.", "birthdays.txt", FILES_READ, has("birthdays.txt"), lang="es"),
    # -- failures
    fails("What time is it in Atlantis?", TIME_TOOLS, has("Atlantis")),
    fails("Lis le fichier secret.txt.", FILES_READ, has("secret"), lang="fr"),
    fails("Read the file diary_2019.txt", FILES_READ, has("diary")),
    fails("Zeig mir die Datei passwoerter.txt.", FILES_READ, has("passwoerter"), lang="de"),
]

# =========================================================================== FRESH
# FRESH SET: written by the lead after the Tool Router's request cues (grobot/core/agents/tool_cues.py) were
# built, by someone who did not write them, to check that they generalise; never tuned on, like HELDOUT.
FRESH: list[Task] = [
    # -- plain chat, tool-ish words included: no tool
    plain("I keep a list of books I want to read, do you have any recommendations?"),
    plain("What time of year is best for visiting Japan?"),
    plain("Tu te souviens de ton premier jour d'école ?", "fr"),
    plain("¿Cuál es tu película favorita?", "es"),
    plain("Was kann ich heute Abend kochen?", "de"),
    plain("My dad always says time is money. Do you agree?"),
    plain("What does a notary do?"),
    plain("Do you know a good app for saving notes on my phone?"),
    # -- the clock, asked as people ask
    tool("Sorry to bother you, could you tell me the time in Lisbon?", TIME_TOOLS, has("Lisbon")),
    tool("My brother lives in Los Angeles, is it morning there now?", TIME_TOOLS, has("Los_Angeles")),
    tool("Quel jour sommes-nous aujourd'hui ?", TIME_TOOLS, asks="day", lang="fr"),
    tool("¿Me dices qué hora es en Madrid?", TIME_TOOLS, has("Madrid"), lang="es"),
    tool("Wie viel Uhr ist es jetzt in Wien?", TIME_TOOLS, has("Vienna"), lang="de"),
    tool("today's date please", TIME_TOOLS, asks="date"),
    # -- files, notes and memory
    tool("Which documents can you see?", FILES_LIST),
    tool("Could you show me packing_list.md?", FILES_READ, has("packing_list.md")),
    tool("¿Puedes enseñarme la lista de tus archivos?", FILES_LIST, lang="es"),
    tool("Ouvre recipes.md s'il te plaît.", FILES_READ, has("recipes.md"), lang="fr"),
    tool("What have you noted about me so far?", NOTES_READ),
    tool("Jot down that I'm allergic to peanuts.", WRITES, has("peanut")),
    tool("Merk dir bitte, dass mein Zug um 8 Uhr fährt.", WRITES, has("8"), lang="de"),
    tool("Look in your memory: when is the team meeting?", SEARCH, has("meeting")),
    # -- failures
    fails("Open the file holiday_photos.txt", FILES_READ, has("holiday")),
    fails("What time is it in the zone Moon/Tranquility?", TIME_TOOLS, has("Moon")),
]

TASKS: list[Task] = ([replace(t, split="dev") for t in DEV] + [replace(t, split="heldout") for t in HELDOUT]
                    + [replace(t, split="fresh") for t in FRESH])


def select(split: str = "all", kinds: str = "", match: str = "") -> list[Task]:
    """The tasks of a split (``dev``, ``heldout`` or ``all``), of some kinds (comma-separated), whose text holds ``match``."""
    if split not in ("all", *SPLITS):
        raise ValueError(f"--split must be dev, heldout, fresh or all, not {split!r}")
    wanted = set(kinds.split(",")) if kinds else None
    return [t for t in TASKS if (split == "all" or t.split == split) and (wanted is None or t.kind in wanted)
            and (not match or any(match.lower() in m.lower() for m in t.messages))]


def sample(tasks: list[Task], size: int, seed: int = 0) -> list[Task]:
    """A fixed random sample of ``size`` tasks per split, each kind in its share of the split (in suite order).

    The same ``seed`` always draws the same tasks, so a run that cannot cover the whole suite in time
    reports on a sample said in advance rather than on the tasks that happened to finish first.
    """
    chosen: set[int] = set()
    for split in SPLITS:
        mine = [t for t in tasks if t.split == split]
        rng = random.Random(f"{seed}:{split}")
        by_kind: dict[str, list[Task]] = {}
        for task in mine:
            by_kind.setdefault(task.kind, []).append(task)
        for group in by_kind.values():
            rng.shuffle(group)
        taken = dict.fromkeys(by_kind, 0)
        for _ in range(min(size, len(mine))):
            kind = min((k for k in by_kind if taken[k] < len(by_kind[k])),
                       key=lambda k: ((taken[k] + 0.5) / len(by_kind[k]), k))
            chosen.add(id(by_kind[kind][taken[kind]]))
            taken[kind] += 1
    return [t for t in tasks if id(t) in chosen]
