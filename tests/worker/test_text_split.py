"""Splitting answers into Discord messages."""

from __future__ import annotations

import re

import pytest

from bot_worker.text import split_message, with_note


def _fences_balanced(part: str) -> bool:
    return len(re.findall(r"^\s*```", part, flags=re.M)) % 2 == 0


def test_short_text_is_one_part():
    assert split_message("hello") == ["hello"]
    assert split_message("") == []


def test_every_part_fits_and_text_is_kept():
    text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(40))
    parts = split_message(text)
    assert len(parts) > 1
    assert all(len(p) <= 2000 for p in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())


def test_prefers_paragraph_boundaries():
    first = "a" * 1200
    second = "b" * 1200
    parts = split_message(first + "\n\n" + second)
    assert parts == [first, second]


def test_never_cuts_inside_a_code_block_that_fits():
    prose = "intro " * 200  # ~1200 chars
    code = "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(100)) + "\n```"
    assert len(code) < 2000
    parts = split_message(prose.strip() + "\n" + code + "\nafter")
    assert any(code in p for p in parts)  # the whole block in one message
    assert all(_fences_balanced(p) for p in parts)
    assert all(len(p) <= 2000 for p in parts)


def test_code_block_longer_than_a_message_is_closed_and_reopened():
    code = "```js\n" + "\n".join(f"console.log({i});" for i in range(300)) + "\n```"
    parts = split_message(code)
    assert len(parts) >= 2
    for part in parts:
        assert len(part) <= 2000
        assert _fences_balanced(part)
        assert part.startswith("```js")
    lines = [line for p in parts for line in p.splitlines() if line.startswith("console")]
    assert lines == [f"console.log({i});" for i in range(300)]


def test_one_huge_word_is_hard_cut():
    parts = split_message("x" * 4500)
    assert [len(p) for p in parts] == [2000, 2000, 500]


@pytest.mark.parametrize("limit", [50, 100, 333])
def test_small_limits(limit):
    text = "Some text here.\n\n```\n" + "line\n" * 80 + "```\nThe end, with more words after it."
    parts = split_message(text, limit)
    assert all(len(p) <= limit for p in parts)
    assert all(_fences_balanced(p) for p in parts)


def test_a_note_after_a_cut_answer_is_never_inside_its_code_block():
    assert with_note("Here:\n```py\nx = 1\n", "(stopped)") == "Here:\n```py\nx = 1\n```\n\n(stopped)"
    assert with_note("Done.\n```\nx\n```\nThen", "(stopped)") == "Done.\n```\nx\n```\nThen\n\n(stopped)"
    assert with_note("Plain text", "(the AI service is busy)") == "Plain text\n\n(the AI service is busy)"
