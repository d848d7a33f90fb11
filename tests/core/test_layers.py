"""The domain layer imports neither reflex nor discord."""

from __future__ import annotations

import subprocess
import sys

CHECK = r"""
import importlib, pkgutil, sys
import grobot.core
for mod in pkgutil.walk_packages(grobot.core.__path__, "grobot.core."):
    importlib.import_module(mod.name)
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"reflex", "discord"})
print(",".join(bad))
"""


def test_grobot_core_imports_neither_reflex_nor_discord(grobot_env):
    result = subprocess.run([sys.executable, "-c", CHECK], env=grobot_env.environ(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"grobot.core pulled in: {result.stdout.strip()}"


def _core_imports() -> dict[str, set[str]]:
    """Module -> the ``grobot.core`` modules it imports (at any level of its code, type-checking
    imports included: a function-level import is a dependency too)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in (root / "grobot" / "core").rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            else:
                continue
            found |= {m for t in targets if t.startswith("grobot.core") and (m := owner(t)) and m != name}
        graph[name] = found
    return graph


def test_grobot_core_has_no_import_cycle() -> None:
    import graphlib

    graph = _core_imports()
    assert "grobot.core.agents.chain" in graph and graph["grobot.core.agents.chain"]  # the scan sees imports
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle in grobot.core: {' -> '.join(exc.args[1])}") from None


def test_grobot_core_imports_nothing_of_the_worker_or_the_web_app() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bad = []
    for path in (root / "grobot" / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            bad += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[0] == "bot_worker"
                    or n.startswith(("grobot.pages", "grobot.components", "grobot.web", "grobot.cli"))]
    assert bad == []
