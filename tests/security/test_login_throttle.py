"""A login throttle that cannot be turned against the user (issue 28, hole 2).

An attacker hammers the login event of an admin's name over the websocket, from an address of its
own (127.0.0.2: another loopback address than the browser's 127.0.0.1), with the name typed every
which way (" BOSS ", "Boss"). The attacker is slowed down, never let in; meanwhile the real admin
signs in through the login form in a real browser, at once.
"""

from __future__ import annotations

import json
import logging
import re
import threading

import pytest

from grobot.core.db import session_scope
from grobot.core.models import Role
from grobot.core.services import users
from grobot.pages.login_state import LoginState
from tests.helpers import wait_for
from tests.security.replay import Sent, replay
from tests.ui.auth import create_ui_user, sign_in
from tests.ui.chat import unique

logger = logging.getLogger(__name__)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ATTACKER_ADDRESS = "127.0.0.2"
SLOWED = "Too many failed attempts"


def test_the_real_user_signs_in_while_an_attacker_hammers_the_same_name(web_app, page) -> None:
    victim = create_ui_user(unique("boss"), Role.ADMIN)
    names = [victim.username, f" {victim.username.upper()} ", victim.username.capitalize()]
    answers: list[str] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def hammer() -> None:
        guess = 0
        try:
            while not stop.is_set():
                attempts = [Sent(LoginState.submit, {"form_data": {"username": names[(guess + i) % len(names)],
                                                                   "password": f"guess-{guess + i}"}}, "/login")
                            for i in range(5)]
                guess += len(attempts)
                answers.append(json.dumps(replay(web_app.url, *attempts, source=ATTACKER_ADDRESS)))
        except BaseException as exc:  # the test says so instead of hanging
            failures.append(exc)

    attacker = threading.Thread(target=hammer, name="attacker", daemon=True)
    attacker.start()
    try:
        # The throttle is on: the attacker's guesses are now refused before its password is checked.
        wait_for(lambda: failures or any(SLOWED in answer for answer in answers), timeout=120,
                 message="the attacker is slowed down")
        assert not failures, failures
        hammered = len(answers)
        sign_in(page, victim)  # the real admin, from the browser's own address, while the attacker goes on
        wait_for(lambda: failures or len(answers) > hammered, timeout=60, message="the attacker still hammers")
    finally:
        stop.set()
        attacker.join(timeout=120)
    assert not failures, failures
    text = "".join(answers)
    assert "/_grobot/session" not in text  # the attacker never got a session
    waits = [int(seconds) for seconds in re.findall(r"wait (\d+) s", text)]
    assert waits and max(waits) <= 30, waits  # slowed down, never locked out
    with session_scope(readonly=True) as session:
        assert users.get_user(victim.id, session=session).last_login_at is not None  # the real admin's sign-in
