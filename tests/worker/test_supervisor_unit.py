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


async def test_a_poll_renews_the_leases_while_bot_processes_start_and_the_sweep_runs(grobot_env, monkeypatch):
    """Starting bots and the fleet sweep take seconds on a loaded machine: the polls renew the leases
    meanwhile, so the supervisor does not fence (stop) the bots it has just started."""
    import asyncio
    import threading

    from bot_worker.supervisor import Supervisor
    from grobot.core.db import session_scope
    from grobot.core.models import BotStatus
    from grobot.core.services import bots
    from grobot.core.settings import get_settings
    from tests.helpers import async_wait_for, make_token

    for name in ("GROBOT_SUPERVISOR_ID", "GROBOT_HEARTBEAT_SECONDS"):
        monkeypatch.setenv(name, "")  # the supervisor sets them for its bots: restored after the test
    monkeypatch.setenv("GROBOT_SPAWN", "exec")
    get_settings.cache_clear()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="busy", token=make_token(222222222222222222)).id
    supervisor = Supervisor(config=SupervisorConfig(lease_seconds=5, stop_grace_seconds=2, poll_seconds=0.5))
    supervisor.is_postgres = True  # leases that another supervisor may take: the fence applies
    starting, sweeping = asyncio.Event(), threading.Event()
    started: list[int] = []

    async def slow_start(row):  # a bot start still under way (the fork server busy)
        await starting.wait()
        started.append(row.bot_id)

    monkeypatch.setattr(supervisor, "_start", slow_start)
    monkeypatch.setattr(supervisor, "_sweep", lambda: sweeping.wait(30))

    def lease() -> object:
        with session_scope(readonly=True) as session:
            return session.get(BotStatus, bot_id).lease_expires_at

    try:
        await asyncio.wait_for(supervisor.reconcile(), 10)  # takes the lease, begins the start
        sweep = asyncio.get_running_loop().create_task(supervisor.sweep())
        first, renewed_at = lease(), supervisor.last_renewal
        await asyncio.wait_for(supervisor.reconcile(), 10)  # the next poll, the start and the sweep still running
        assert lease() > first and supervisor.last_renewal > renewed_at and supervisor.held == {bot_id}
        assert started == [] and not sweep.done()
    finally:
        starting.set()
        sweeping.set()
    await async_wait_for(lambda: started == [bot_id], 10)
    await asyncio.wait_for(sweep, 10)


async def test_a_job_still_running_when_the_worker_stops_is_one_info_line_not_an_error(caplog):
    """Housekeeping opening the memory store can outlast the stop's grace: the scheduler's shutdown ends it, and
    the log says so in one line, not as an error with a traceback (APScheduler's own report of it)."""
    import asyncio
    import logging
    from datetime import UTC, datetime

    from apscheduler.triggers.interval import IntervalTrigger

    from bot_worker.supervisor_jobs import end_scheduler, new_scheduler

    started = asyncio.Event()

    async def housekeeping() -> None:
        started.set()
        await asyncio.sleep(3600)  # a job that does not end by itself within the stop's grace

    scheduler = new_scheduler()
    scheduler.add_job(housekeeping, IntervalTrigger(seconds=3600), id="housekeeping", name="housekeeping",
                      next_run_time=datetime.now(UTC))
    scheduler.start()
    await asyncio.wait_for(started.wait(), 10)
    with caplog.at_level(logging.INFO):
        await end_scheduler(scheduler, grace=0.1)
    said = [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records if r.name.startswith("apscheduler")]
    assert ("INFO", "Job housekeeping was still running when the worker stopped: ended", None) in said
    assert not [s for s in said if s[0] in ("WARNING", "ERROR", "CRITICAL")], said
