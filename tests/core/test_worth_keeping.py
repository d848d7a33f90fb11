"""The rule in front of the Archivist's LLM call: what may hold something worth keeping."""

from __future__ import annotations

import pytest

from grobot.core.agents.worth_keeping import worth_a_look


@pytest.mark.parametrize("text", [
    "I recently started working at a bakery in Porto",  # about the writer
    "my brother's name is Tomasz",
    "hey we moved the planning meeting to Monday mornings",  # a greeting, then a decision
    "the wiki lives on the internal server now",  # a fact about the team
    "Priya owns the release checklist this quarter",
    "please always reply to me in Portuguese",  # a lasting preference, with a request's opening
    "when I was a student I lived in Kyoto for a year",  # "when" that opens no question
    "nos réunions ont lieu le jeudi à 14h",  # another language: looked at, as before
    "I adopted a puppy this morning",  # an event: the time says when, not that it passes
    "I'm in Oslo for the whole summer",
    "ugh im exhausted. anyway our sprint review is on Thursdays now",  # a state of the moment, then a fact
    "Summarize this thread. Our team tracks bugs in Jira.",  # a request, then a fact in its own sentence
    "plan is to ship the beta in March",  # a command's verb as the subject of a statement
    "review meetings are every second Friday",
])
def test_what_may_hold_a_fact_a_decision_or_a_preference_is_looked_at(text):
    assert worth_a_look(text, with_memory=True)


@pytest.mark.parametrize("text", [
    "summarize this thread in two lines",  # requests
    "could you turn this list into a table",
    "pls generate a packing list for a weekend trip",
    "how many players can join one lobby",  # questions without their question mark
    "which branch should I rebase onto",
    "does this bot support slash commands",
    "is there a way to mute the notifications",
    "lmao that one got me",  # reactions to the conversation
    "ok that makes sense now",
    "wow you really know a lot about trains",
    "thanks so much for the quick help",  # thanks and greetings
    "good morning folks",
    "anything new here today?",  # a question mark
    "im so sleepy rn",  # states of the moment: not true tomorrow
    "I'm waiting for the bus right now",
    "ok I'm back",
    "i am at the gym atm so typing is hard",
])
def test_requests_questions_and_reactions_are_not(text):
    assert not worth_a_look(text, with_memory=True)


def test_without_a_memory_only_what_the_writer_says_of_themselves_or_asks_to_be_kept():
    assert worth_a_look("I'm a nurse on the night shift", with_memory=False)
    assert worth_a_look("from now on keep your answers short", with_memory=False)
    assert not worth_a_look("our standup moved to ten o'clock", with_memory=False)
    assert not worth_a_look("do you remember what I told you?", with_memory=False)
