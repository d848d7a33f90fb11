"""Processes on this host, as a supervisor checks and stops them (Linux ``/proc``)."""

from __future__ import annotations

import os
import signal
import time


def pid_alive(pid: int) -> bool:
    """Does process ``pid`` exist (one of another user counts)?"""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_bot_process(pid: int, bot_id: int) -> bool:
    """Is ``pid`` a ``bot_worker.bot_process --bot-id <bot_id>`` process on this host?"""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            args = handle.read().split(b"\0")
    except OSError:
        return False
    return b"bot_worker.bot_process" in args and str(bot_id).encode() in args


def terminate(pid: int, *, grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds (blocks meanwhile)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid) or is_zombie(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def is_zombie(pid: int) -> bool:
    """Has process ``pid`` exited but not been reaped (or is it gone)?"""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True
