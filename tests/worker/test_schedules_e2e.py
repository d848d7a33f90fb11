"""Scheduled posts end to end: a real supervisor posts on the fake Discord with its bots' tokens, a
fixed text and a prompt's answer, once per run (also with two supervisors), after a restart a missed
run is caught up once or skipped past its grace time, and a supervisor killed while it posts a run
leaves the run posted once, a run of a bot disabled (or a schedule paused) since its claim is skipped,
and a supervisor frozen past its claim leaves the run to the one that took it."""

from __future__ import annotations

import re
import signal
import threading
from datetime import timedelta

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Bot, BotSchedule, utcnow
from grobot.core.services import bots, schedules
from tests.fakes import discord as fake_discord
from tests.fakes.llm import Reply
from tests.helpers import wait_for
from tests.worker.harness import asks, bot_log, fleet

pytestmark = pytest.mark.slow

PG_ENV = {"GROBOT_LEASE_SECONDS": "5"}


def _posts(world, bot_id: int, text: str) -> list[dict]:
    return [m for m in world.discord.channel_messages(world.discord.channel_id, bot_id=world.discord_ids[bot_id])
            if m["content"] == text or text in m["content"]]


def _add(bot_id: int, content: str, **fields) -> int:
    with session_scope() as session:
        return schedules.create_schedule(bot_id, channel_id=str(fields.pop("channel")), content=content,
                                         session=session, **fields).id


def _act(fn, bot_id: int, schedule_id: int, *args) -> None:
    with session_scope() as session:
        fn(bot_id, schedule_id, *args, session=session)


def test_a_schedule_posts_its_text_and_its_prompts_answer_and_survives_a_restart(grobot_env, tmp_path):
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("herald")
        channel = world.discord.channel_id
        world.llm.script_for(asks("Summarise the open questions"), "Two questions are open: the venue and the date.",
                             persistent=True)
        supervisor = world.start_supervisor()
        world.wait_online(bot)

        # Every second: posted as an ordinary message (not a reply), again and again.
        tick = _add(bot, "tick", channel=channel, interval_seconds=1)
        wait_for(lambda: len(_posts(world, bot, "tick")) >= 3, 60, message="three ticks")
        assert all(not m.get("message_reference") for m in _posts(world, bot, "tick"))
        _act(schedules.set_enabled, bot, tick, False)

        # A prompt, run now: the bot's chain answers it and the answer is posted in the channel.
        weekly = _add(bot, "Summarise the open questions of this week.", channel=channel, kind="prompt",
                      cron="0 9 * * mon", timezone="Europe/Paris", name="weekly")
        _act(schedules.request_run, bot, weekly)
        wait_for(lambda: _posts(world, bot, "Two questions are open"), 60, message="the prompt's answer")
        ticks = len(_posts(world, bot, "tick"))  # paused: no more (the answer came after any tick in flight)
        wait_for(lambda: any("Scheduled post" in m and "(weekly): posted" in m for _, m in bot_log(bot)), 30)
        wait_for(lambda: _status(weekly) == "posted", 30)

        # The worker stops; meanwhile one run is missed within its grace time, one far beyond it.
        supervisor.terminate()
        supervisor.wait(30)
        caught = _add(bot, "caught up", channel=channel, interval_seconds=3600, grace_seconds=300)
        late = _add(bot, "too late", channel=channel, interval_seconds=3600, grace_seconds=60)
        with session_scope() as session:
            session.get(BotSchedule, caught).next_run_at = utcnow() - timedelta(seconds=30)
            session.get(BotSchedule, late).next_run_at = utcnow() - timedelta(minutes=10)
        world.start_supervisor()
        world.wait_online(bot)
        wait_for(lambda: _posts(world, bot, "caught up"), 60, message="the missed run caught up")
        wait_for(lambda: _status(late).startswith("missed"), 30)
        _act(schedules.request_run, bot, weekly)  # a barrier: posted after anything still in flight
        wait_for(lambda: len(_posts(world, bot, "Two questions are open")) == 2, 60)
        assert len(_posts(world, bot, "caught up")) == 1 and _posts(world, bot, "too late") == []
        assert len(_posts(world, bot, "tick")) == ticks
        assert any(level == "WARNING" and "was missed by 10 minutes, more than its grace time: skipped" in m
                   for level, m in bot_log(bot))

        # A text over Discord's 2,000 characters is posted as any long answer: in parts, in order, whole.
        long_text = " ".join(f"long{i}" for i in range(500))
        _act(schedules.request_run, bot, _add(bot, long_text, channel=channel, cron="0 0 1 1 *"))
        wait_for(lambda: "long499" in " ".join(m["content"] for m in _posts(world, bot, "long")), 60)
        parts = [m["content"] for m in _posts(world, bot, "long")]
        assert len(parts) == 2 and all(len(p) <= 2000 for p in parts) and " ".join(parts).split() == long_text.split()


def _status(schedule_id: int) -> str:
    with session_scope(readonly=True) as session:
        row = session.get(BotSchedule, schedule_id)
        return row.last_status if row is not None else ""


def test_two_supervisors_post_each_run_once(pg_env, tmp_path):
    with fleet(pg_env, tmp_path) as world:
        bot = world.add_bot("metronome")
        channel = world.discord.channel_id
        world.start_supervisor(**PG_ENV)
        world.start_supervisor(**PG_ENV)
        world.wait_online(bot)
        beat = _add(bot, "beat", channel=channel, interval_seconds=1)
        wait_for(lambda: len(_posts(world, bot, "beat")) >= 5, 60, message="five beats")
        _act(schedules.set_enabled, bot, beat, False)
        final = _add(bot, "final", channel=channel, cron="0 0 1 1 *")
        _act(schedules.request_run, bot, final)
        wait_for(lambda: _posts(world, bot, "final"), 60, message="the final post")
        handed = [m for _, m in bot_log(bot) if re.match(rf"Scheduled post {beat}: due .*claimed", m)]
        dues = [re.search(r"due (\S+)", m).group(1) for m in handed]
        assert len(dues) == len(set(dues)), "a run was claimed twice"
        assert len(_posts(world, bot, "beat")) == len(handed)


@pytest.mark.parametrize("made", [False, True], ids=["lost-on-the-way", "made-answer-lost"])
def test_a_supervisor_killed_while_it_posts_a_run_leaves_it_posted_once(grobot_env, tmp_path, made):
    """The supervisor is killed (SIGKILL) while Discord holds its post: lost on the way (never made) or
    made with its answer lost. The next supervisor takes the run again at once (the claim's holder was
    of this host and its process ended: no wait for its ten-minute claim to expire; the expiry itself:
    tests/core/test_schedules.py), and the channel shows the post once (Discord returns the message of
    a nonce it already saw)."""
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("crier")
        supervisor = world.start_supervisor(GROBOT_SCHEDULE_CLAIM_SECONDS="600")
        world.wait_online(bot)
        hold = world.discord.hold(after=made)
        try:
            crier = _add(bot, "Hear ye, hear ye", channel=world.discord.channel_id, cron="0 0 1 1 *")
            _act(schedules.request_run, bot, crier)
            assert hold.reached.wait(60), "the scheduled post never reached Discord"
            assert len(_posts(world, bot, "Hear ye")) == (1 if made else 0)
            supervisor.kill()
            supervisor.wait(30)
        finally:
            hold.release()
        world.start_supervisor()
        world.wait_started()
        wait_for(lambda: _status(crier) == "posted", 60, message="the run taken again and posted")
        assert [m["content"] for m in _posts(world, bot, "Hear ye")] == ["Hear ye, hear ye"]


def test_a_run_is_posted_while_the_bots_process_is_not_online(grobot_env, tmp_path):
    """The supervisor posts with the bot's token: a bot whose process cannot connect to the gateway
    (its intent denied) still posts its scheduled runs; a bot whose token Discord refuses says so."""
    with fleet(grobot_env, tmp_path) as world:
        quiet = world.add_bot("quiet")
        gone = world.add_bot("gone")
        world.discord.deny_intent(world.discord_ids[quiet], "message_content")
        with session_scope(readonly=True) as session:
            world.discord.revoke(bots.get_token(session.get(Bot, gone)))
        world.start_supervisor()
        world.wait_state(quiet, "error", 60)
        channel = world.discord.channel_id
        notice = _add(quiet, "The market opens at nine.", channel=channel, cron="0 0 1 1 *")
        refused = _add(gone, "Never seen.", channel=channel, cron="0 0 1 1 *")
        _act(schedules.request_run, quiet, notice)
        _act(schedules.request_run, gone, refused)
        wait_for(lambda: _status(notice) == "posted", 60, message="the post of a bot that is not online")
        wait_for(lambda: _status(refused).startswith("not posted"), 60)
        assert [m["content"] for m in _posts(world, quiet, "market")] == ["The market opens at nine."]
        assert _status(refused) == "not posted: Discord refused the bot's token"
        assert any(level == "ERROR" and "could not post in channel" in m and "refused the bot's token" in m
                   for level, m in bot_log(gone))


def _asked(world, text: str) -> bool:
    return any(text in str(body.get("messages", [])[-1:]) for body in world.llm.chat_requests())


def test_a_run_of_a_bot_disabled_since_it_was_claimed_is_not_posted(grobot_env, tmp_path):
    """The admin pauses the schedule, or disables the bot, while the bot answers a run's prompt: the
    answer is not posted, and the bot's Logs and the schedule say why."""
    with fleet(grobot_env, tmp_path) as world:
        bot = world.add_bot("gazette")
        channel = world.discord.channel_id
        paused_hold, disabled_hold = threading.Event(), threading.Event()
        world.llm.script_for(asks("Announce the weather"), Reply(text="Weather: sunny all week.", hold=paused_hold),
                             persistent=True)
        world.llm.script_for(asks("Announce the market"), Reply(text="Market: prices up.", hold=disabled_hold),
                             persistent=True)
        world.start_supervisor()
        world.wait_online(bot)
        try:
            # A due run of a schedule paused while the bot answers.
            weather = _add(bot, "Announce the weather.", channel=channel, kind="prompt", cron="0 0 1 1 *",
                           name="weather")
            with session_scope() as session:
                session.get(BotSchedule, weather).next_run_at = utcnow()
            wait_for(lambda: _asked(world, "Announce the weather"), 60, message="the weather prompt asked")
            _act(schedules.set_enabled, bot, weather, False)
            paused_hold.set()
            wait_for(lambda: _status(weather) == "skipped: the schedule is paused", 60, message="the paused run skipped")
            # "Run now" of a schedule, the bot disabled while it answers.
            market = _add(bot, "Announce the market.", channel=channel, kind="prompt", cron="0 0 1 1 *", name="market")
            _act(schedules.request_run, bot, market)
            wait_for(lambda: _asked(world, "Announce the market"), 60, message="the market prompt asked")
            with session_scope() as session:
                bots.set_enabled(session.get(Bot, bot), False, session=session)
            disabled_hold.set()
            wait_for(lambda: _status(market) == "skipped: the bot is disabled", 60, message="the run skipped")
        finally:
            paused_hold.set()
            disabled_hold.set()
        assert _posts(world, bot, "Weather") == [] and _posts(world, bot, "Market") == []
        log = [m for level, m in bot_log(bot) if level == "WARNING"]
        assert any("Scheduled post" in m and "(weather): not posted: the schedule is paused" in m for m in log)
        assert any("(market): not posted: the bot is disabled" in m for m in log)


def test_a_supervisor_frozen_past_its_claim_leaves_the_run_to_the_one_that_took_it(pg_env, tmp_path, monkeypatch):
    """A supervisor is frozen (SIGSTOP) while the bot answers a run's prompt; its claim expires and the other
    supervisor takes the run, answers and posts it. Woken (SIGCONT) long after Discord forgot the post's
    nonce, the first supervisor posts nothing: the channel shows the run once."""
    monkeypatch.setattr(fake_discord, "NONCE_WINDOW_SECONDS", 0.0)  # Discord no longer recognises the nonce
    claim = {"GROBOT_SCHEDULE_CLAIM_SECONDS": "2", **PG_ENV}
    with fleet(pg_env, tmp_path) as world:
        bot = world.add_bot("oracle")
        held = threading.Event()
        world.llm.script_for(asks("Forecast the week"), Reply(text="Forecast: sunny, says the first.", hold=held),
                             Reply(text="Forecast: rainy, says the second."), persistent=True)
        first = world.start_supervisor(**claim)
        world.wait_online(bot)
        forecast = _add(bot, "Forecast the week.", channel=world.discord.channel_id, kind="prompt",
                        cron="0 0 1 1 *", name="forecast")
        _act(schedules.request_run, bot, forecast)
        wait_for(lambda: _asked(world, "Forecast the week"), 60, message="the first supervisor asking the model")
        first.send_signal(signal.SIGSTOP)
        try:
            world.start_supervisor(**claim)
            wait_for(lambda: _posts(world, bot, "Forecast:"), 60, message="the run taken again and posted")
        finally:
            held.set()
            first.send_signal(signal.SIGCONT)
        wait_for(lambda: len(_posts(world, bot, "Forecast:")) > 1 or any(
            "stalled past its claim and another one took the run" in m for _, m in bot_log(bot)), 60,
            message="the woken supervisor finishing its answer")
        assert [m["content"] for m in _posts(world, bot, "Forecast:")] == ["Forecast: rainy, says the second."]
        wait_for(lambda: _status(forecast) == "posted", 30)
