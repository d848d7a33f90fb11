"""Every event handler of the compiled web app, read from the app itself (issue 28).

Reflex dispatches an event by its full name through the registry every state registers its handlers
in (``RegistrationContext.event_handlers``): that registry, once the app is imported and each of its
pages evaluated (as the backend does when it compiles the app; some states are only defined then),
is exactly what a client can call. Run as ``python -m tests.security.app_handlers``: it prints one JSON
object per handler (in a process of its own, so the test process keeps no compiled app).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Handler:
    name: str  # what a client sends (``reflex___state____state.grobot___….handler``)
    module: str
    background: bool
    declared: bool  # written with ``@rx.event`` (or Reflex's own): not a helper Reflex made public
    takes_uploads: bool  # reachable through ``/_upload``


def _declared(fn: object) -> bool:
    module = getattr(fn, "__module__", "") or ""
    if not module.startswith("grobot"):
        return True  # Reflex's own handlers
    source = inspect.getsource(fn)  # type: ignore[arg-type]
    head = source[: source.index("def ")]
    return "@rx.event" in head


def _takes_uploads(handler: object) -> bool:
    from reflex_base.event import resolve_upload_handler_param
    from reflex_base.utils.exceptions import UploadValueError

    try:
        resolve_upload_handler_param(handler)  # type: ignore[arg-type]
    except (UploadValueError, TypeError, ValueError):
        return False
    return True


def collect() -> list[Handler]:
    from reflex_base.registry import RegistrationContext

    from grobot.grobot import app

    for route in list(app._unevaluated_pages):  # as the backend compiles the app: states of the pages too
        app._compile_page(route, save_page=False)
    found = []
    for name, registered in sorted(RegistrationContext.get().event_handlers.items()):
        fn = registered.handler.fn
        found.append(Handler(name=name, module=getattr(fn, "__module__", "") or "",
                             background=bool(registered.handler.is_background), declared=_declared(fn),
                             takes_uploads=_takes_uploads(registered.handler)))
    return found


def app_handlers(env: dict[str, str]) -> list[Handler]:
    """The handlers of the app in this worktree, read by a child process with ``env``."""
    result = subprocess.run([sys.executable, "-m", "tests.security.app_handlers"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    if result.returncode != 0:
        raise AssertionError(f"reading the app's event handlers failed:\n{result.stderr[-4000:]}")
    return [Handler(**json.loads(line)) for line in result.stdout.splitlines() if line.startswith("{")]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    for handler in collect():
        print(json.dumps(asdict(handler)))
