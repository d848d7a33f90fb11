"""Health checks of a GroBot installation: database, schema, secrets, supervisor, LLM server."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import httpx
from sqlalchemy import text
from sqlmodel import select

from grobot.core import migrations, security
from grobot.core.db import get_engine, session_scope
from grobot.core.errors import GroBotError
from grobot.core.llm import embedded
from grobot.core.models import Bot, Supervisor, utcnow
from grobot.core.services import llm_settings
from grobot.core.settings import get_settings

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


def _secrets() -> Check:
    with session_scope(readonly=True) as session:
        token = session.exec(select(Bot.discord_token_enc).where(Bot.discord_token_enc.is_not(None)).limit(1)).first()  # type: ignore[union-attr]
    if token is None:
        return Check("secrets", True, "no secrets stored yet")
    try:
        security.decrypt(token)
    except GroBotError as exc:
        return Check("secrets", False, str(exc))
    return Check("secrets", True, "stored secrets decrypt with the current key")


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


def _llm() -> Check:
    with session_scope(readonly=True) as session:
        output = llm_settings.effective_llm(session=session, category="output")
    if output.provider == embedded.PROVIDER:
        return _embedded(output.model, output.unavailable)
    url = output.base_url.rstrip("/")
    probe = f"{url}/api/tags" if output.provider == "ollama" else f"{url}/models"
    headers = {"Authorization": f"Bearer {output.api_key}"} if output.api_key else {}
    try:
        response = httpx.get(probe, headers=headers, timeout=3.0)
    except httpx.HTTPError as exc:
        return Check("llm", False, f"{output.provider} at {url} unreachable ({type(exc).__name__})")
    if response.status_code >= 400:
        return Check("llm", False, f"{output.provider} at {url} answered HTTP {response.status_code}")
    return Check("llm", True, f"{output.provider} at {url} answers")


def _embedded(model: str, unavailable: str | None) -> Check:
    """The output model runs in the worker's embedded llama.cpp server."""
    name = embedded.display_name(model)
    if unavailable:
        return Check("llm", False, unavailable)
    demo = " (a tiny demo model: set a real one with python -m grobot llm set)" if model == embedded.DEMO_MODEL else ""
    return Check("llm", True, f"embedded llama.cpp server runs {name}{demo}")


def _memory() -> Check:
    from grobot.core.memory.registry import find_url
    from grobot.core.memory.remote import MemoryServiceClient

    with session_scope(readonly=True) as session:
        url = find_url(session=session)
    if url is None:
        return Check("memory", False, "memory service unavailable: is the bot worker running?")
    try:
        health = MemoryServiceClient(url, read_timeout=3.0).health()
    except GroBotError as exc:
        return Check("memory", False, str(exc))
    loaded = "embedder loaded" if health.get("embedder_loaded") else "embedder loads on first use"
    return Check("memory", True, f"memory service at {url} answers ({loaded})")


def run_checks() -> list[Check]:
    """Every check; the first failing database check skips the ones that need it."""
    checks = [_database()]
    if not checks[0].ok:
        return checks
    checks.append(_schema())
    if not checks[-1].ok:
        return checks
    for check in (_secrets, _supervisor, _memory, _llm):
        try:
            checks.append(check())
        except Exception as exc:  # a check must report, not crash
            checks.append(Check(check.__name__.strip("_"), False, f"{type(exc).__name__}: {exc}"))
    return checks
