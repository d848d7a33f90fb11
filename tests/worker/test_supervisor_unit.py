"""Supervisor rules that need no processes: backoff, exit descriptions, timings, the CLI entry."""

from __future__ import annotations

import signal

import pytest

from bot_worker.supervisor_config import SupervisorConfig, describe_exit, next_backoff


def test_backoff_doubles_to_five_minutes_and_resets_after_a_healthy_run():
    config = SupervisorConfig()
    delays, current = [], None
    for _ in range(12):
        current = next_backoff(current, ran_for=3.0, config=config)
        delays.append(current)
    assert delays[:5] == [1, 2, 4, 8, 16]
    assert delays[-1] == 300 and max(delays) == 300
    assert next_backoff(300, ran_for=601, config=config) == 1


def test_exit_descriptions():
    assert describe_exit(-signal.SIGKILL) == "the bot process was killed (SIGKILL)"
    assert describe_exit(1) == "the bot process exited with code 1"


def test_config_from_env_and_fencing_margin(grobot_env, monkeypatch):
    monkeypatch.setenv("GROBOT_HEARTBEAT_SECONDS", "5")
    monkeypatch.delenv("GROBOT_LEASE_SECONDS", raising=False)
    config = SupervisorConfig.from_env()
    assert (config.heartbeat_seconds, config.lease_seconds, config.poll_seconds) == (5, 15, 2)
    # A holder that cannot renew stops its bots (grace included) before the lease can expire.
    assert config.fence_after + config.stop_grace_seconds + config.poll_seconds < config.lease_seconds
    monkeypatch.setenv("GROBOT_STOP_GRACE_SECONDS", "0")
    with pytest.raises(ValueError):
        SupervisorConfig.from_env()


def test_cli_has_the_worker_command():
    from grobot.cli.main import build_parser

    args = build_parser().parse_args(["worker"])
    assert args.func.__module__ == "grobot.cli.worker"
