"""Health checks of a GroBot installation: database, schema, secrets, supervisor, memory, each LLM server in use."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sqlalchemy import text
from sqlmodel import Session, col, select

from grobot.core import migrations, security
from grobot.core.db import get_engine, session_scope
from grobot.core.errors import GroBotError, SecretKeyError, first_line
from grobot.core.llm import embedded
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.models import Bot, Council, LLMSetting, Supervisor, utcnow
from grobot.core.services import council, llm_checks, llm_settings, secrets_rotation
from grobot.core.settings import get_settings
from grobot.core.wording import counted

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _database() -> Check:
    try:
        with get_engine().connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        return Check("database", False, f"unreachable: {str(exc).splitlines()[0][:200]}")
    return Check("database", True, get_engine().dialect.name)


def _schema() -> Check:
    current, head = migrations.current_revision(), migrations.head_revision()
    if current != head:
        return Check("schema", False, f"at {current or 'empty'}, newest is {head}: run python -m grobot db upgrade")
    return Check("schema", True, f"revision {current}")


def _kinds(counts: Counter[str]) -> str:
    """``2 API keys, 1 MCP secret``."""
    return ", ".join(counted(count, noun) for noun, count in counts.items())


def _first_few(items: list[str], noun: str) -> str:
    """The first SHOWN_OWNERS items, then how many more: ``a; b; c; d; and 2 more bots``."""
    more = len(items) - SHOWN_OWNERS
    return "; ".join(items[:SHOWN_OWNERS]) + (f"; and {counted(more, f'more {noun}')}" if more > 0 else "")


def _secrets() -> Check:
    """Every stored secret (bot tokens, API keys, MCP servers' secrets) decrypts with the current key."""
    readable: Counter[str] = Counter()
    unreadable: Counter[str] = Counter()
    owners: list[str] = []
    with session_scope(readonly=True) as session:
        for secret in secrets_rotation.stored_secrets(session=session):
            try:
                security.decrypt(secret.value)
            except SecretKeyError:
                unreadable[secret.kind.noun] += 1
                owners.append(secret.owner(session))
            else:
                readable[secret.kind.noun] += 1
    if unreadable:
        return Check("secrets", False, f"{_kinds(unreadable)} cannot be decrypted with the current key "
                                       f"({_first_few(owners, 'secret')}): {security.wrong_key_hint()}")
    if not readable:
        return Check("secrets", True, "no secrets stored yet")
    verb = "decrypts" if readable.total() == 1 else "decrypt"
    return Check("secrets", True, f"{_kinds(readable)} {verb} with the current key")


def _supervisor() -> Check:
    settings = get_settings()
    with session_scope(readonly=True) as session:
        newest = session.exec(select(Supervisor).order_by(Supervisor.heartbeat_at.desc()).limit(1)).first()  # type: ignore[attr-defined]
    if newest is None:
        return Check("worker", False, "no bot worker is running: start it with python -m grobot worker")
    age = (utcnow() - newest.heartbeat_at).total_seconds()
    if age > max(30.0, settings.poll_seconds * 5):
        return Check("worker", False, f"last bot_worker heartbeat {int(age)} s ago: is it running?")
    return Check("worker", True, f"{newest.id} alive ({age:.0f} s ago)")


HEALTH_TIMEOUT_SECONDS = 5.0
SHOWN_OWNERS = 4  # "used by" names this many owners (global, bot x, ...), then "and N more"


@dataclass
class _Server:
    """One server the settings in use talk to (an embedded model: one file), with who uses it."""

    llm: EffectiveLLM
    uses: dict[str, list[str]]  # owner ("global", "bot helper") -> what of it ("output", "council advisor X")


def _server_key(llm: EffectiveLLM) -> tuple[str, ...]:
    """Settings that talk to the same server (same provider, URL and key) are checked once."""
    if llm.provider == embedded.PROVIDER:
        return (llm.provider, llm.model)
    return (llm.provider, llm.base_url.rstrip("/"), llm.api_key or "")


def _servers_in_use(session: Session) -> list[_Server]:
    """The servers of the global settings, then of each enabled bot's overrides and council."""
    servers: dict[tuple[str, ...], _Server] = {}

    def use(llm: EffectiveLLM, owner: str, what: str) -> None:
        server = servers.setdefault(_server_key(llm), _Server(llm, {}))
        server.uses.setdefault(owner, []).append(what)

    for category, llm in llm_settings.effective_llms(session=session).items():
        use(llm, "global", category)
    overriding = select(LLMSetting.bot_id)
    councils = select(Council.bot_id).where(Council.enabled)
    enabled = session.exec(select(Bot).where(Bot.enabled, col(Bot.id).in_(overriding.union(councils)))
                           .order_by(col(Bot.id))).all()
    for bot in enabled:
        llms = llm_settings.effective_llms(session=session, bot_id=bot.id)
        for category, llm in llms.items():
            if llm.source == "bot":
                use(llm, f"bot {bot.name}", category)
        for what, llm in _council_llms(bot.id or 0, llms, session):
            use(llm, f"bot {bot.name}", what)
    return list(servers.values())


def _council_llms(bot_id: int, llms: dict[str, EffectiveLLM], session: Session) -> list[tuple[str, EffectiveLLM]]:
    """The LLMs of a bot's council that differ from its categories' (none while the council is off)."""
    row = session.get(Council, bot_id)
    if row is None or not row.enabled:
        return []
    found = [(f"council advisor {a.name}", council.advisor_llm(a, llms, bot_id, session=session))
             for a in council.advisors(bot_id, session=session) if a.enabled]
    found.append(("council synthesis", council.advisor_llm(row, llms, bot_id, session=session)))
    return [(what, llm) for what, llm in found if llm.source == "council"]


def _used_by(uses: dict[str, list[str]]) -> str:
    """``global output, tools; bot helper decision`` (the first owners, then how many more)."""
    owners = [f"{owner} {', '.join(what)}" for owner, what in uses.items()]
    return f"used by {_first_few(owners, 'bot')}"


async def _check_server(server: _Server) -> Check:
    """Ask the server the way its provider is asked (the connection check of the web app's forms)."""
    llm = server.llm
    if llm.provider == embedded.PROVIDER:
        check = _embedded(llm.model, llm.unavailable)
        return Check("llm", check.ok, f"{check.detail}; {_used_by(server.uses)}")
    result = await llm_checks.check_connection(provider=llm.provider, base_url=llm.base_url, api_key=llm.api_key,
                                               model=llm.model, timeout=HEALTH_TIMEOUT_SECONDS)
    name, url = llm_checks.provider_name(llm.provider), llm_checks.resolved_url(llm.provider, llm.base_url)
    if result.status == llm_checks.UNREACHABLE:
        detail = f"{name}: cannot connect to {url}" + (f": {result.reason}" if result.reason else "")
    elif result.status == llm_checks.REJECTED:
        detail = f"{name} at {url}: {result.reason}"
    else:
        detail = result.message
    return Check("llm", result.ok, f"{detail}; {_used_by(server.uses)}")


async def _check_servers(servers: list[_Server]) -> list[Check]:
    return list(await asyncio.gather(*(_check_server(s) for s in servers)))


def _llms() -> list[Check]:
    """One check per distinct LLM server in use, all asked at once."""
    with session_scope(readonly=True) as session:
        servers = _servers_in_use(session)
    return asyncio.run(_check_servers(servers))


def _embedded(model: str, unavailable: str | None) -> Check:
    """An embedded model: run by the worker's llama.cpp server for its file."""
    name = embedded.display_name(model)
    if unavailable:
        return Check("llm", False, unavailable)
    demo = " (a tiny demo model: set a real one with python -m grobot llm set)" if model == embedded.DEMO_MODEL else ""
    return Check("llm", True, f"embedded llama.cpp server runs {name}{demo}")


def _memory() -> Check:
    from grobot.core.link_client import AdminLink, find_url
    from grobot.core.memory.remote import MemoryAdmin

    with session_scope(readonly=True) as session:
        url = find_url(session=session)
    if url is None:
        return Check("memory", False, "memory service unavailable: is the bot worker running?")
    try:
        health = MemoryAdmin(AdminLink(url, timeout=3.0)).health()
    except GroBotError as exc:
        return Check("memory", False, str(exc))
    loaded = "embedder loaded" if health.get("embedder_loaded") else "embedder loads on first use"
    return Check("memory", True, f"memory at the worker's link {url} answers ({loaded})")


def run_checks() -> list[Check]:
    """Every check; the first failing database check skips the ones that need it."""
    checks = [_database()]
    if not checks[0].ok:
        return checks
    checks.append(_schema())
    if not checks[-1].ok:
        return checks
    named: tuple[tuple[str, Callable[[], Check | list[Check]]], ...] = (
        ("secrets", _secrets), ("worker", _supervisor), ("memory", _memory), ("llm", _llms))
    for name, check in named:
        try:
            found = check()
        except Exception as exc:  # a check must report, not crash: a sentence here, the traceback with -v
            logger.debug("The %s check crashed", name, exc_info=True)
            found = Check(name, False, f"could not be checked: {first_line(exc)}")
        checks.extend(found if isinstance(found, list) else [found])
    return checks
