"""Shared Reflex states of the web app (pages derive their substates from these)."""

from grobot.state.app_state import AppState

__all__ = ["AppState"]
