"""Fixtures of the worker tests: one supervisor for the end-to-end tests of a module that can share it."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.conftest import GroBotEnv
from tests.helpers import wait_for
from tests.worker.harness import Fleet, fleet


@pytest.fixture(scope="module")
def module_fleet(module_env: GroBotEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """A supervisor, the fake Discord and the fake LLM for all the tests of a module that use ``world``
    (starting a supervisor is the slow part of an end-to-end test)."""
    with fleet(module_env, tmp_path_factory.mktemp("fleet")) as shared:
        shared.start_supervisor()
        # Started before the first test's deadlines begin (seconds on a loaded machine).
        wait_for(lambda: re.search(r"Supervisor \S+ started", shared.log()), 120,
                 message=lambda: f"the supervisor started; log:\n{shared._tail()}")
        yield shared


@pytest.fixture
def world(module_fleet: Fleet) -> Iterator[Fleet]:
    """The module's running fleet, for one test: the fakes have nothing scripted or recorded yet, and
    the bots the test adds are deleted after it (their names may come again)."""
    module_fleet.begin_test()
    try:
        yield module_fleet
    finally:
        module_fleet.remove_bots()
