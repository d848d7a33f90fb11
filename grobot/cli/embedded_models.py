"""The embedded models a CLI command needs when no bot worker serves them: run in the command's process."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from grobot.core.llm import embedded
from grobot.core.llm.effective import EffectiveLLM
from grobot.core.llm.embedded_servers import EmbeddedServers


async def serve_embedded(llms: Iterable[EffectiveLLM]) -> EmbeddedServers | None:
    """Start in this process the embedded models of ``llms`` that no live bot worker serves (None: none needed)."""
    from grobot.core.db import session_scope
    from grobot.core.services import embedded_models
    from grobot.core.settings import get_settings

    with session_scope(readonly=True) as session:
        served = {info.model for info in embedded_models.advertised(session=session)}
    wanted = {llm.model: llm.context_window for llm in llms
              if llm.provider == embedded.PROVIDER and llm.model not in served}
    if not wanted:
        return None
    servers = EmbeddedServers(log_dir=get_settings().data_dir / "logs")
    embedded.set_local_directory(servers)
    for model, context in wanted.items():
        print(f"[embedded] loading {embedded.display_name(model)} (no bot worker serves it)", file=sys.stderr, flush=True)
        await servers.ensure(model, context)
    return servers


async def stop_embedded(servers: EmbeddedServers | None) -> None:
    """Stop what :func:`serve_embedded` started."""
    if servers is not None:
        await servers.stop_all()
        embedded.set_local_directory(None)
