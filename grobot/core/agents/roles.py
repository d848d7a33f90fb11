"""The chain's agents and steps by the names people read (the Test Chat's steps, the Usage page's roles):
``tool_identifier`` is the "Tool Identifier"."""

from __future__ import annotations

ROLE_NAMES = {
    "gatekeeper": "Gatekeeper",
    "tool_router": "Tool Router",
    "tool_identifier": "Tool Identifier",
    "parameter_extractor": "Parameter Extractor",
    "clarifier": "Clarifier",
    "planner": "Planner",
    "executor": "Executor",
    "acknowledger": "Acknowledger",
    "synthesizer": "Synthesizer",
    "archivist": "Archivist",
    "native": "Native agent",
    "mode": "Agent mode",
    "tools": "Tools",
    "fallback": "Fallback",
    "council": "Council",
    "advisor": "Advisor",
    "council_advisor": "Council advisor",
    "council_synthesis": "Council synthesis",
}


def role_name(role: str) -> str:
    """``tool_identifier`` -> ``Tool Identifier``; an unknown role in words (``new_role`` -> ``New role``)."""
    role = (role or "").strip()
    if role in ROLE_NAMES:
        return ROLE_NAMES[role]
    words = role.replace("_", " ").strip()
    return words[:1].upper() + words[1:] if words else "Other"
