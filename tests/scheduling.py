"""How ``pytest -n N --dist loadscope`` (``make test``) shares the tests out among its workers:
by module, as xdist's loadscope does, except that the tests sharing one session-wide process run
on one worker: every browser test (``tests/ui`` and ``tests/security``: one web app, built in
``.web``) and every test of the demo model (``tests/real_llm``: one model server).

(xdist's own ``--dist loadgroup`` cannot do it with pytest 9: it renames the tests through an
attribute pytest no longer reads.)
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

SHARED = {"tests/ui/": "the web app", "tests/security/": "the web app", "tests/real_llm/": "the demo model"}


class SharedProcessScheduling(LoadScopeScheduling):
    """xdist's loadscope, with the tests of :data:`SHARED` as one unit each (handed out first, the
    biggest units being first)."""

    def _split_scope(self, nodeid: str) -> str:
        for prefix, shared in SHARED.items():
            if nodeid.startswith(prefix):
                return shared
        return nodeid.split("::", 1)[0]
