"""How ``pytest -n N --dist loadscope`` (``make test``) shares the tests out among its workers:
by module, as xdist's loadscope does, except that the tests sharing one session-wide process run
on one worker: every browser test (``tests/ui`` and ``tests/security``: one web app, built in
``.web``) and every test of the demo model (``tests/real_llm``: one model server).

The units are handed out longest first (the shared ones, then the end-to-end and other heavy
modules, then the rest by their number of tests), so that no worker starts a long unit when the
other is nearly done. At the end the run says when each worker ended and its longest units.

(xdist's own ``--dist loadgroup`` cannot do it with pytest 9: it renames the tests through an
attribute pytest no longer reads.)
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

SHARED = {"tests/ui/": "the web app", "tests/security/": "the web app", "tests/real_llm/": "the demo model"}
# Modules of a minute or more on a loaded machine though they hold few tests (besides the *_e2e.py ones).
HEAVY = ("tests/core/test_db_concurrency.py", "tests/core/test_cli.py", "tests/core/test_chain_basic.py",
         "tests/core/test_mcp_presets.py", "tests/worker/test_tester_chat_runner.py")


def unit_of(nodeid: str) -> str:
    """The unit a test is scheduled in: the shared process it needs, or its module."""
    for prefix, shared in SHARED.items():
        if nodeid.startswith(prefix):
            return shared
    return nodeid.split("::", 1)[0]


def _longest_first(unit: str, tests: int) -> tuple[int, int]:
    if unit in SHARED.values():
        return (0, -tests)
    if unit.endswith("_e2e.py") or unit in HEAVY:
        return (1, -tests)
    return (2, -tests)


class SharedProcessScheduling(LoadScopeScheduling):
    """xdist's loadscope, with the tests of :data:`SHARED` as one unit each, the longest units first."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def schedule(self) -> None:
        """loadscope's first distribution, with the work queue in :func:`_longest_first` order."""
        assert self.collection_is_completed
        if self.collection is not None or not self._check_nodes_have_same_collection():
            super().schedule()  # a later call, or collections that differ: loadscope's own handling
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        if not self.collection:
            return
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        for unit in sorted(units, key=lambda name: _longest_first(name, len(units[name]))):
            self.workqueue[unit] = units[unit]
        for _ in range(len(self.nodes) - len(self.workqueue)):  # more workers than units
            unused, _assigned = self.assigned_work.popitem()
            unused.shutdown()
        for node in self.nodes:
            self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)
        if not self.workqueue:
            for node in self.nodes:
                node.shutdown()


class WorkerTimes:
    """The controller's record of each worker: when it ended, and the time its units took."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ended: dict[str, float] = {}
        self.units: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node: Any = getattr(report, "node", None)
        if node is not None:
            self.units[node.gateway.id][unit_of(report.nodeid)] += report.duration

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        self.ended[node.gateway.id] = time.monotonic() - self.started

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.units:
            return
        terminalreporter.section("workers")
        for worker in sorted(self.units):
            units = sorted(self.units[worker].items(), key=lambda item: -item[1])
            longest = ", ".join(f"{unit} {seconds:.0f} s" for unit, seconds in units[:4])
            ended = f"ended at {self.ended[worker]:.0f} s" if worker in self.ended else "did not end"
            count = f"{len(units)} unit" + ("" if len(units) == 1 else "s")
            total = sum(self.units[worker].values())
            terminalreporter.write_line(f"{worker} {ended}: {count}, {total:.0f} s of tests (longest: {longest})")
