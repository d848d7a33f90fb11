"""The strict judge of bench/tool_use.py: a reply passes only when it states, in prose, what the tool
returned in that run (no model: the judge is a pure function of the task and the run)."""

from __future__ import annotations

import json

import pytest

from bench.tool_use_suite.judge import ToolRun, Turn, lenient, reply_form, strict
from bench.tool_use_suite.tasks import (
    CONVERT,
    FILES_LIST,
    FILES_READ,
    NOTES_ADD,
    NOTES_READ,
    REMEMBER,
    SEARCH,
    SPLITS,
    SUM,
    TASKS,
    TIME_TOOLS,
    WRITES,
    adds,
    clarify,
    fails,
    followup,
    has,
    mcp,
    plain,
    sample,
    tool,
    two,
)

TOKYO = json.dumps({"timezone": "Asia/Tokyo", "datetime": "2026-03-14T13:55:07+09:00", "day_of_week": "Saturday",
                    "is_dst": False})
UTC = json.dumps({"timezone": "UTC", "datetime": "2026-03-14T04:55:07+00:00", "date": "2026-03-14", "time": "04:55:07",
                  "day_of_week": "Saturday", "utc_offset": "+0000"})
TIME_IN_TOKYO = tool("What time is it now in Tokyo?", TIME_TOOLS, has("Tokyo"))


def tokyo_turn(reply: str, content: str = TOKYO) -> list[Turn]:
    return [Turn(reply, (ToolRun("time__get_current_time", {"timezone": "Asia/Tokyo"}, content),))]


@pytest.mark.parametrize("reply", [
    "It is 13:55 in Tokyo right now.",
    "In Tokyo it's 1:55 pm on Saturday.",
    "It's 13h55 in Tokyo.",
])
def test_a_reply_that_states_the_time_the_tool_returned_passes(reply):
    verdict = strict(TIME_IN_TOKYO, tokyo_turn(reply))
    assert verdict.ok, verdict.why


def test_the_time_is_read_from_the_result_of_that_run_not_a_fixed_string():
    later = TOKYO.replace("13:55:07", "02:10:00")
    assert strict(TIME_IN_TOKYO, tokyo_turn("It is 02:10 in Tokyo.", later)).ok
    verdict = strict(TIME_IN_TOKYO, tokyo_turn("It is 13:55 in Tokyo.", later))
    assert not verdict.ok and "02:10" in verdict.why


def test_a_reply_that_ignores_the_result_fails_though_the_right_tool_ran():
    turns = tokyo_turn("I'm glad to have you. How about you? Is there anything else I can help with?")
    assert lenient(TIME_IN_TOKYO, turns)[0]  # today's judge: the right tool, an answer
    verdict = strict(TIME_IN_TOKYO, turns)
    assert not verdict.ok and "does not state the time 13:55" in verdict.why


def test_the_time_of_another_zone_fails():
    turns = [Turn("It is 04:55.", (ToolRun("datetime_now", {}, UTC),))]
    assert not strict(TIME_IN_TOKYO, turns).ok


def test_the_right_time_beside_a_made_up_year_fails():
    """The demo model wrote "The time of day for Madrid is 2025-04-28T07:37:38": the time the clock gave,
    on a date it made up."""
    verdict = strict(TIME_IN_TOKYO, tokyo_turn("The time in Tokyo is 2025-04-28T13:55:07."))
    assert not verdict.ok and "another year (2025)" in verdict.why
    assert strict(TIME_IN_TOKYO, tokyo_turn("It is 13:55 in Tokyo on 14 March 2026.")).ok


@pytest.mark.parametrize(("reply", "form"), [
    ('<tool_call>\n{"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}\n</tool_call>', "markup"),
    ('{"name": "datetime_now", "arguments": {}}', "markup"),
    ('{"time": "13:55", "zone": "Asia/Tokyo"}', "json"),
    ("```python\nfrom datetime import datetime\nprint(datetime.now())\n```", "code"),
    ("import datetime\nnow = datetime.datetime.now()\nIt is 13:55.", "code"),
    ("It is 13:55 in Tokyo. I hope you're well. I hope you're well. I hope you're well. I hope you're well.", "loop"),
    ("Remembered: Remembered: Remembered: Remembered: Remembered: 13:55", "loop"),
    ("Good times, good times, good times, good times.", "loop"),
])
def test_markup_json_code_and_loops_fail_even_when_they_hold_the_fact(reply, form):
    assert reply_form(reply) == form
    verdict = strict(TIME_IN_TOKYO, tokyo_turn(reply))
    assert not verdict.ok and verdict.forms == (form,)


@pytest.mark.parametrize("reply", [
    "Paris is the capital of France.",
    "Sure! Here are three tips: sleep at the same time, avoid screens, keep the room cool.",
    "1. Say the name back. 2. Link it to a picture. 3. Use it again soon.",
    "Why did the chicken cross the road? To get to the other side!",
])
def test_prose_is_prose(reply):
    assert reply_form(reply) == ""


def test_a_plain_task_passes_only_with_an_answer_and_no_tool():
    task = plain("Any tips for remembering people's names?")
    assert strict(task, [Turn("Repeat the name when you hear it, and link it to something you know.")]).ok
    assert not strict(task, [Turn("")]).ok
    wrote = [Turn("Remembered.", (ToolRun("memory_remember", {"text": "names"}, "remembered"),))]
    verdict = strict(task, wrote)
    assert not verdict.ok and "memory_remember" in verdict.why
    assert not strict(task, [Turn("", error="the AI service is not available right now")]).ok


def test_a_file_read_passes_when_the_reply_states_its_items():
    task = tool("Read the file notes.txt.", FILES_READ, has("notes.txt"))
    run = ToolRun("files_read", {"path": "notes.txt"}, "Shopping list: milk, eggs, bread.\n")
    assert strict(task, [Turn("notes.txt says: milk, eggs, bread.", (run,))]).ok
    verdict = strict(task, [Turn("Here is the file notes.txt for you.", (run,))])
    assert not verdict.ok and verdict.why == "the reply does not state what the tool returned"


def test_one_line_of_a_file_is_enough_when_the_question_is_about_it():
    task = tool("When is Leo's birthday? It's in birthdays.txt.", FILES_READ, has("birthdays.txt"), line_with="Leo")
    run = ToolRun("files_read", {"path": "birthdays.txt"}, "Mum: 12 May\nLeo: 3 September\nGrandpa: 30 November\n")
    assert strict(task, [Turn("Leo's birthday is on 3 September.", (run,))]).ok
    assert not strict(task, [Turn("Mum's birthday is on 12 May.", (run,))]).ok


def test_a_file_list_passes_when_every_file_is_named():
    task = tool("Which files do you have?", FILES_LIST)
    listing = json.dumps([{"path": "notes.txt", "size": 34, "content_type": "text/plain"},
                          {"path": "packing_list.md", "size": 60, "content_type": "text/markdown"}])
    run = ToolRun("files_list", {}, listing)
    assert strict(task, [Turn("I have notes.txt and packing_list.md.", (run,))]).ok
    assert strict(task, [Turn("I have two: notes.txt and your packing list.", (run,))]).ok
    verdict = strict(task, [Turn("I have notes.txt.", (run,))])
    assert not verdict.ok and "packing_list.md" in verdict.why


def test_notes_read_must_be_stated_and_nothing_found_said_so():
    task = tool("What do you know about me?", NOTES_READ)
    notes = ToolRun("user_notes_read", {}, json.dumps([{"id": 1, "note": "Ada likes hiking in the Alps.", "reliability": 0.9},
                                                       {"id": 2, "note": "Ada has a cat called Pixel.", "reliability": 0.9}]))
    assert strict(task, [Turn("You like hiking in the Alps and you have a cat called Pixel.", (notes,))]).ok
    assert not strict(task, [Turn("You like hiking in the Alps.", (notes,))]).ok
    empty = ToolRun("user_notes_read", {}, "[]")
    assert strict(task, [Turn("I don't know anything about you yet.", (empty,))]).ok
    assert not strict(task, [Turn("You are a great person.", (empty,))]).ok


def test_a_note_or_memory_passes_when_the_reply_confirms_it():
    task = tool("Please note that my favourite colour is blue.", NOTES_ADD, has("blue"))
    run = ToolRun("user_notes_add", {"note": "Favourite colour is blue", "reliability": 0.9},
                  json.dumps({"id": 3, "note": "Favourite colour is blue", "reliability": 0.9}))
    assert strict(task, [Turn("Noted: your favourite colour is blue.", (run,))]).ok
    assert not strict(task, [Turn("Blue is a lovely colour!", (run,))]).ok
    memory = tool("Remember that the team meeting is on Friday.", REMEMBER, has("Friday"))
    kept = ToolRun("memory_remember", {"text": "The team meeting is on Friday"}, "remembered")
    assert strict(memory, [Turn("Got it, I'll remember that the team meeting is on Friday.", (kept,))]).ok
    assert strict(tool("Note que je suis infirmière.", WRITES, has("infirm"), lang="fr"), [Turn(
        "C'est noté : tu es infirmière.", (ToolRun("user_notes_add", {"note": "Infirmière"},
                                              json.dumps({"id": 4, "note": "Infirmière", "reliability": 0.9})),))]).ok


def test_a_memory_search_passes_when_a_memory_found_is_stated():
    task = tool("When is the team meeting? Check your memory.", SEARCH, has("meeting"))
    run = ToolRun("memory_search", {"query": "team meeting"},
                  json.dumps(["The team meeting is on Friday at 10:00 in the Orion room."]))
    assert strict(task, [Turn("The team meeting is on Friday at 10:00, in the Orion room.", (run,))]).ok
    assert not strict(task, [Turn("I have a meeting soon.", (run,))]).ok


def test_a_failure_passes_when_the_reply_says_it_plainly():
    task = fails("Read the file missing.txt.", FILES_READ, has("missing.txt"))
    run = ToolRun("files_read", {"path": "missing.txt"}, "files_read: no file missing.txt", is_error=True)
    assert strict(task, [Turn("Sorry, I couldn't find a file called missing.txt.", (run,))]).ok
    assert strict(fails("Zeig mir die Datei x.txt.", FILES_READ, lang="de"),
                  [Turn("Die Datei x.txt gibt es nicht.", (run,))]).ok
    verdict = strict(task, [Turn("Here is missing.txt: it has your shopping list.", (run,))])
    assert not verdict.ok and "does not say that files_read failed" in verdict.why


def test_dates_and_days_in_the_language_asked():
    date = tool("Welches Datum haben wir heute?", TIME_TOOLS, asks="date", lang="de")
    run = ToolRun("datetime_now", {}, UTC)
    assert strict(date, [Turn("Heute ist der 14. März 2026.", (run,))]).ok
    assert strict(date, [Turn("Heute ist der 14.03.2026.", (run,))]).ok
    assert not strict(date, [Turn("Heute ist ein schöner Tag.", (run,))]).ok
    day = tool("¿Qué día de la semana es hoy?", TIME_TOOLS, asks="weekday", lang="es")
    assert strict(day, [Turn("Hoy es sábado.", (run,))]).ok
    assert not strict(day, [Turn("Hoy es lunes.", (run,))]).ok


def test_mcp_tools_with_their_own_argument_names():
    convert = mcp("If it's 18:00 in Paris, what time is it in Tokyo?", CONVERT, has("18:00"))
    result = {"source": {"timezone": "Europe/Paris", "datetime": "2026-03-14T18:00:00+01:00", "day_of_week": "Saturday",
                         "is_dst": False},
              "target": {"timezone": "Asia/Tokyo", "datetime": "2026-03-15T02:00:00+09:00", "day_of_week": "Sunday",
                         "is_dst": False}, "time_difference": "+8.0h"}
    run = ToolRun("time__convert_time", {"source_timezone": "Europe/Paris", "time": "18:00",
                                         "target_timezone": "Asia/Tokyo"}, json.dumps(result))
    assert strict(convert, [Turn("When it is 18:00 in Paris, it is 02:00 the next day in Tokyo.", (run,))]).ok
    assert not strict(convert, [Turn("It is 18:00 in Paris.", (run,))]).ok
    total = mcp("What do you get if you add 17.5 and 24.25?", SUM, adds(17.5, 24.25))
    summed = ToolRun("everything__get-sum", {"a": 17.5, "b": 24.25}, "The sum of 17.5 and 24.25 is 41.75.")
    assert strict(total, [Turn("17.5 + 24.25 = 41.75", (summed,))]).ok
    assert strict(total, [Turn("La suma es 41,75.", (summed,))]).ok
    assert not strict(total, [Turn("That is about 42.", (summed,))]).ok


def test_two_tools_need_both_facts():
    task = two("What time is it in Tokyo, and which files do you have?", TIME_TOOLS, FILES_LIST, has("Tokyo"))
    runs = (ToolRun("time__get_current_time", {"timezone": "Asia/Tokyo"}, TOKYO),
            ToolRun("files_list", {}, json.dumps([{"path": "notes.txt", "size": 3, "content_type": "text/plain"}])))
    assert strict(task, [Turn("It is 13:55 in Tokyo, and I have notes.txt.", runs)]).ok
    verdict = strict(task, [Turn("It is 13:55 in Tokyo.", runs)])
    assert not verdict.ok and "notes.txt" in verdict.why


def test_clarification_then_the_value_in_the_next_turn():
    task = followup("Can you read a file for me?", "recipes.md", FILES_READ, has("recipes.md"))
    read = ToolRun("files_read", {"path": "recipes.md"}, "# Pancakes\nFlour, milk, eggs; fry in butter.\n")
    good = [Turn("Sure, which file?"), Turn("Pancakes: flour, milk, eggs; fry them in butter.", (read,))]
    assert strict(task, good).ok
    guessed = [Turn("Here it is.", (ToolRun("files_read", {"path": "file.txt"}, "no file", True),)), good[1]]
    verdict = strict(task, guessed)
    assert not verdict.ok and verdict.why.startswith("first turn")
    assert not strict(task, [good[0], Turn("Which file do you mean?")]).ok
    assert not strict(task, good[:1]).ok  # the second turn is due
    single = clarify("Read a file for me.", FILES_READ)
    assert strict(single, [Turn("Which file should I read?")]).ok
    assert not strict(single, [Turn("OK.")]).ok


def test_the_suite_has_both_splits_and_every_kind_in_each():
    assert len(TASKS) >= 120
    for split in ("dev", "heldout"):
        mine = [t for t in TASKS if t.split == split]
        assert {t.kind for t in mine} == {"plain", "tool", "mcp", "two", "clarify", "followup", "fails"}
        assert {t.lang for t in mine} >= {"en", "fr", "es", "de"}
    fresh = [t for t in TASKS if t.split == "fresh"]  # the lead's check of the Router's cues
    assert len(fresh) >= 20 and {"plain", "tool", "fails"} <= {t.kind for t in fresh}
    assert {t.lang for t in fresh} >= {"en", "fr", "es", "de"}
    dev = sum(t.split == "dev" for t in TASKS) / sum(t.split in ("dev", "heldout") for t in TASKS)
    assert 0.55 <= dev <= 0.65
    texts = [m for t in TASKS for m in t.messages[:1]]
    assert len(texts) == len(set(texts)), "a message is in the suite twice"


def test_a_sample_is_fixed_per_seed_and_keeps_each_split_s_mix_of_kinds():
    drawn = sample(TASKS, 20, seed=3)
    assert drawn == sample(TASKS, 20, seed=3) and drawn != sample(TASKS, 20, seed=4)
    for split in SPLITS:
        mine = [t for t in drawn if t.split == split]
        assert len(mine) == 20
        assert {"plain", "tool"} <= {t.kind for t in mine}
        share = sum(t.kind == "plain" for t in mine) / 20
        whole = sum(t.kind == "plain" for t in TASKS if t.split == split) / sum(t.split == split for t in TASKS)
        assert abs(share - whole) <= 0.1
