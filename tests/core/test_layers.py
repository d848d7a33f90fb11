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


# The packages of GroBot, lowest first: a package imports only from its own layer or those below it,
# and no two packages import each other (see docs/DESIGN.md). A top-level module of grobot.core is a
# package of its own, in the lowest layer unless listed here.
LAYERS: list[tuple[str, set[str]]] = [
    ("models", set()),  # grobot.core's own modules: the tables, the database, settings, errors, words
    ("llm, documents, memory, tools", {"grobot.core.llm", "grobot.core.documents", "grobot.core.memory",
                                       "grobot.core.tools"}),
    ("agents", {"grobot.core.agents"}),
    ("services", {"grobot.core.services"}),
    ("store, admission", {"grobot.core.store", "grobot.core.answering"}),
    ("hosts", {"bot_worker", "grobot.state", "grobot.components", "grobot.web_session", "grobot.run_images",
               "grobot.security_headers"}),
    ("pages, cli", {"grobot.pages", "grobot.cli"}),
    ("app", {"grobot.grobot", "grobot.__main__", "grobot"}),
]


def _package(module: str) -> str:
    """The package a module belongs to: ``grobot.core.<sub>`` for a subpackage of the core, a top-level
    module of the core itself, ``grobot.<name>`` elsewhere in grobot, ``bot_worker``."""
    parts = module.split(".")
    if parts[0] != "grobot" or len(parts) == 1:
        return parts[0]
    if parts[1] != "core" or len(parts) == 2:
        return ".".join(parts[:2])
    return ".".join(parts[:3])


def _package_imports() -> dict[str, dict[str, set[str]]]:
    """Package -> the packages it imports -> the module imports that make the edge (``a -> b``), over
    grobot and bot_worker, at any level of the code (a function-level import is a dependency too)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for tree in ("grobot", "bot_worker") for p in (root / tree).rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(_package(name), {})
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{alias.name}" if owner(f"{node.module}.{alias.name}") != owner(node.module)
                           else node.module for alias in node.names]
            else:
                continue
            for target in targets:
                found = owner(target)
                if found and found not in {"grobot", "grobot.core"} and _package(found) != _package(name):
                    edges.setdefault(_package(found), set()).add(f"{name} -> {found}")
    return graph


def _layer(package: str) -> int:
    for rank, (_, members) in enumerate(LAYERS):
        if package in members:
            return rank
    assert package.startswith("grobot.core."), f"{package} is in no layer of LAYERS"
    return 0


def test_packages_import_each_other_in_one_direction() -> None:
    import graphlib

    graph = _package_imports()
    assert {"grobot.core.agents", "grobot.core.services", "bot_worker", "grobot.pages"} <= set(graph)
    assert "grobot.core.llm" in graph["grobot.core.agents"]  # the scan sees imports
    try:
        graphlib.TopologicalSorter({p: set(e) for p, e in graph.items()}).prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        why = [next(iter(sorted(graph[a][b]))) for a, b in zip(cycle, cycle[1:], strict=False)]
        raise AssertionError("packages that import each other: " + "; ".join(why)) from None


def test_packages_import_only_from_their_layer_and_below() -> None:
    upward = [f"{sorted(why)[0]} ({LAYERS[_layer(package)][0]} imports {LAYERS[_layer(target)][0]})"
              for package, edges in sorted(_package_imports().items())
              for target, why in sorted(edges.items()) if _layer(target) > _layer(package)]
    assert upward == []


def test_the_documents_the_code_cites_exist() -> None:
    """``see docs/DESIGN.md``, ``README.md``: each document of the repository a module names is there."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cited = {(path.relative_to(root), name) for tree in ("grobot", "bot_worker")
             for path in (root / tree).rglob("*.py") for name in re.findall(r"\b(?:docs/[\w./-]+|[A-Z][A-Z_]+)\.md\b", path.read_text())}
    assert any(name.endswith("DESIGN.md") for _, name in cited)  # the scan sees citations
    assert [f"{path}: {name}" for path, name in sorted(cited) if not (root / name).is_file()] == []


def test_no_benchmark_is_named_like_a_package_it_imports() -> None:
    """A benchmark runs with ``bench/`` first on its import path: a ``bench/mcp.py`` made every
    ``import mcp`` of GroBot load the benchmark instead of the SDK (``bench/read_cost.py`` read no
    MCP server and warned "ImportError" on each message it read)."""
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench"
    names = sorted(path.stem for path in bench.glob("*.py"))
    assert "fleet" in names  # the scan sees the benchmarks
    shadowing = [name for name in names if (spec := importlib.util.find_spec(name)) is not None
                 and spec.origin is not None and Path(spec.origin).resolve().parent != bench]
    assert shadowing == []


def test_no_two_pages_import_each_other() -> None:
    """A page's view imports its state, never the other way round, and no page imports one that imports
    it back (at any level of its code)."""
    import ast
    import graphlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pages = {f"grobot.pages.{p.stem}": p for p in (root / "grobot" / "pages").glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name, path in pages.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        graph[name] = {m for m in found if m in pages and m != name}
    assert graph["grobot.pages.bot_settings"]  # the scan sees imports
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        raise AssertionError(f"pages that import each other: {' -> '.join(exc.args[1])}") from None
    assert [f"{name} imports {view}" for name, imports in sorted(graph.items()) if name.endswith("_state")
            for view in sorted(imports) if view + "_state" in pages] == []


# Test Chat's page modules are reworked on their own branch (one local API to the supervisor): until that
# lands, these two read the database themselves.
NOT_YET_IN_SHAPE = {"tester_chat_model", "tester_chat_runs"}
DATABASE_MODULES = ("sqlmodel", "sqlalchemy", "grobot.core.db")
SESSION_RUNNERS = {"run_for_bot", "run_authorized", "_admin", "_act"}  # hand their callback a database session


def _page_shape_problems(pages_dir) -> list[str]:
    import ast

    pages = {p.stem: p for p in pages_dir.glob("*.py") if p.stem != "__init__"}
    problems = []
    for name, path in sorted(pages.items()):
        if name in NOT_YET_IN_SHAPE:
            continue
        tree = ast.parse(path.read_text())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        database = sorted(m for m in imported if m.startswith(DATABASE_MODULES)
                          and m not in {"sqlmodel", "sqlmodel.Session"})
        if database:  # a session of its own or a query: the services read and write, with their checks
            problems.append(f"{name} reads the database itself: {', '.join(database)}")
        if name.endswith("_state"):
            if name.removesuffix("_state") not in pages:
                problems.append(f"{name} has no view {name.removesuffix('_state')}.py")
            continue
        if "sqlmodel" in imported or "sqlmodel.Session" in imported:
            problems.append(f"{name} is a view and takes a database session")
        calls = {n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                 for n in ast.walk(tree) if isinstance(n, ast.Call)}
        if calls & SESSION_RUNNERS:
            problems.append(f"{name} is a view and reads data: {', '.join(sorted(calls & SESSION_RUNNERS))}")
        states = [n.name for n in tree.body if isinstance(n, ast.ClassDef)
                  and (any(ast.unparse(b).endswith(("State", "Mixin", "Checks")) for b in n.bases)
                       or any(k.arg == "mixin" for k in n.keywords))]
        if states:
            problems.append(f"{name} is a view and holds a state: {', '.join(states)}")
    return problems


def test_every_page_is_a_state_and_its_view() -> None:
    """A page is ``<page>_state.py`` (its Reflex state: the events, their server-side checks, and what it
    reads and writes through the services) and ``<page>.py`` (the view, which may have parts named for
    what they show, e.g. ``bot_settings_cards.py``). Only a state module takes a database session, and
    only to hand it to the services; none opens one or queries itself; every state has its view."""
    from pathlib import Path

    pages_dir = Path(__file__).resolve().parents[2] / "grobot" / "pages"
    assert (pages_dir / "bot_settings_state.py").is_file()  # the scan sees the pages
    assert _page_shape_problems(pages_dir) == []


# The other names a concept once had (see docs/DESIGN.md, "One name per concept"): Test Chat is
# ``tester_chat``, the embedded model ``embedded_*``, the context window ``context_window`` ("budget" is
# the cost and monthly budgets' word, ``budgets``).
OLD_NAMES = ("bot_chat", "llama_", "local_model", "embedded_llm")


def test_one_name_per_concept_in_every_layer() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    stems = {p.relative_to(root).as_posix(): p.stem.removesuffix("_state")
             for tree in ("grobot", "bot_worker") for p in (root / tree).rglob("*.py")}
    assert "grobot/core/services/budgets.py" in stems  # the scan sees the modules
    assert sorted(path for path, stem in stems.items() if stem.startswith(OLD_NAMES) or stem == "budget") == []
