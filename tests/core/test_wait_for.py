"""The tests' wait helper: a failed wait names the state at its deadline, not the state when it began."""

from __future__ import annotations

import pytest

from tests.helpers import async_wait_for, wait_for


def test_a_failed_wait_names_what_its_message_says_at_the_deadline():
    polls: list[int] = []
    with pytest.raises(AssertionError, match=r"within 0.2 s: polled [1-9]\d* times; last=False"):
        wait_for(lambda: polls.append(1) or False, 0.2, interval=0.01, message=lambda: f"polled {len(polls)} times")
    with pytest.raises(AssertionError, match=r"within 0.05 s: the plain text; last=None"):
        wait_for(lambda: None, 0.05, interval=0.01, message="the plain text")


async def test_an_async_wait_names_it_too():
    polls: list[int] = []
    with pytest.raises(AssertionError, match=r"within 0.2 s: polled [1-9]\d* times"):
        await async_wait_for(lambda: polls.append(1) or False, 0.2, interval=0.01,
                             message=lambda: f"polled {len(polls)} times")
