"""Web app sessions and logins, without Reflex: signed session tokens, the login throttle,
and the server-side role checks every web event handler goes through."""

from __future__ import annotations

import time

import pytest

from grobot.core import security
from grobot.core.db import session_scope
from grobot.core.errors import PermissionDenied
from grobot.core.models import AppUser, Role
from grobot.core.services import bots, users
from grobot.core.settings import get_settings

PASSWORD = "correct horse battery"


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_user(username: str, role: Role = Role.TESTER, password: str = PASSWORD) -> int:
    with session_scope() as session:
        return users.create_user(session=session, username=username, password=password, role=role.value).id


def login(username: str, password: str, throttle: security.LoginThrottle,
          client: str = "192.0.2.1") -> tuple[users.SignedInUser, str]:
    with session_scope() as session:
        return users.login(session=session, username=username, password=password, client=client, throttle=throttle)


def user_for(token: str) -> AppUser | None:
    with session_scope(readonly=True) as session:
        return users.user_for_session(token, session=session)


# --------------------------------------------------------------------------- signing


def test_a_session_token_carries_the_user_and_is_not_readable(grobot_env):
    token = security.sign_session(4242424242, stamp="stamp-abcdef")
    claims = security.verify_session(token)
    assert claims is not None
    assert (claims.user_id, claims.stamp) == (4242424242, "stamp-abcdef")
    assert abs(claims.issued_at - time.time()) < 5
    # Encrypted, not just signed (values long enough never to appear in the ciphertext by chance).
    assert "4242424242" not in token and "stamp-abcdef" not in token


def test_a_session_token_expires_after_its_ttl(grobot_env):
    issued = 1_700_000_000
    token = security.sign_session(7, now=issued)
    assert security.verify_session(token, now=issued + security.SESSION_TTL_SECONDS - 60) is not None
    assert security.verify_session(token, now=issued + security.SESSION_TTL_SECONDS + 60) is None
    assert security.SESSION_TTL_SECONDS == 7 * 24 * 3600


@pytest.mark.parametrize("bad", ["", "garbage", "gAAAAAB" + "A" * 100])
def test_garbage_is_not_a_session(grobot_env, bad):
    assert security.verify_session(bad) is None


def test_a_tampered_token_is_refused(grobot_env):
    token = security.sign_session(7)
    flipped = token[:20] + ("A" if token[20] != "A" else "B") + token[21:]
    assert security.verify_session(flipped) is None


def test_a_token_of_another_secret_key_is_refused(grobot_env, monkeypatch):
    token = security.sign_session(7)
    monkeypatch.setenv("GROBOT_SECRET_KEY", "a completely different key")
    get_settings.cache_clear()
    assert security.verify_session(token) is None


def test_a_session_token_survives_a_key_rotation(grobot_env, monkeypatch):
    old_key = get_settings().secret_key
    token = security.sign_session(7)
    monkeypatch.setenv("GROBOT_SECRET_KEY", f"{security.Fernet.generate_key().decode()},{old_key}")
    get_settings.cache_clear()
    claims = security.verify_session(token)
    assert claims is not None and claims.user_id == 7


def test_session_tokens_and_encrypted_secrets_use_different_keys(grobot_env):
    token = security.sign_session(7)
    with pytest.raises(security.SecretKeyError):
        security.decrypt(token)
    assert security.verify_session(security.encrypt('{"uid": 7, "stamp": ""}')) is None


# --------------------------------------------------------------------------- throttle


def test_throttle_slows_one_client_down_and_never_another():
    clock = FakeClock()
    throttle = security.LoginThrottle(free_failures=3, free_client_failures=100, first_delay_seconds=1,
                                      max_delay_seconds=8, clock=clock)
    assert throttle.record_failure("10.0.0.1", "alice") == 0
    assert throttle.record_failure("10.0.0.1", "Alice ") == 0  # same account, however typed
    assert throttle.record_failure("10.0.0.1", "\uff41lice") == pytest.approx(0)  # full-width a: the same name
    assert throttle.record_failure("10.0.0.1", " ALICE") == pytest.approx(1)
    assert throttle.retry_after("10.0.0.1", "alice") == pytest.approx(1)
    assert throttle.retry_after("10.0.0.2", "alice") == 0  # another client: not slowed at all
    assert throttle.retry_after("10.0.0.1", "bob") == 0  # this client's other accounts: not yet
    delays = []
    for _ in range(5):
        clock.now += throttle.retry_after("10.0.0.1", "alice")
        delays.append(throttle.record_failure("10.0.0.1", "alice"))
    assert delays == [2, 4, 8, 8, 8]  # doubling, capped: slowed down, never locked
    clock.now += 8
    assert throttle.retry_after("10.0.0.1", "alice") == 0


def test_throttle_counts_every_account_a_client_tries():
    clock = FakeClock()
    throttle = security.LoginThrottle(free_failures=100, free_client_failures=4, first_delay_seconds=2, clock=clock)
    for name in ("a1", "a2", "a3", "a4"):
        assert throttle.record_failure("10.0.0.1", name) == 0
    assert throttle.record_failure("10.0.0.1", "a5") == pytest.approx(2)
    assert throttle.retry_after("10.0.0.1", "someone-else") == pytest.approx(2)
    assert throttle.retry_after("10.0.0.9", "a5") == 0


def test_throttle_forgets_old_failures_and_a_success_clears_only_that_account():
    clock = FakeClock()
    throttle = security.LoginThrottle(free_failures=2, free_client_failures=2, window_seconds=300, clock=clock)
    throttle.record_failure("c", "alice")
    throttle.record_failure("c", "alice")
    clock.now += 301  # the streak is old: counting starts again
    assert throttle.record_failure("c", "alice") == 0
    throttle.record_failure("c", "alice")
    throttle.record_success("c", "alice")
    assert throttle.retry_after("c", "alice") == 0
    assert throttle.record_failure("c", "alice") > 0  # the client's own count was not cleared (3 of 2)
    throttle.record_success("c", "mallory")  # signing into one's own account buys no guesses elsewhere
    assert throttle.retry_after("c", "alice") > 0


def test_throttle_memory_is_bounded():
    clock = FakeClock()
    throttle = security.LoginThrottle(window_seconds=10, max_entries=100, clock=clock)
    for i in range(500):
        throttle.record_failure(f"10.0.{i}.1", f"user{i}")
        clock.now += 0.1
    assert len(throttle._entries) <= 100


# --------------------------------------------------------------------------- logins


def test_login_gives_a_session_of_the_user_and_never_its_hash(grobot_env):
    user_id = make_user("alice", Role.ADMIN)
    throttle = security.LoginThrottle()
    user, token = login(" alice ", PASSWORD, throttle)
    assert user == users.SignedInUser(id=user_id, username="alice", role="admin")
    assert not hasattr(user, "password_hash")
    found = user_for(token)
    assert found is not None and found.id == user_id
    with session_scope(readonly=True) as session:
        assert session.get(AppUser, user_id).last_login_at is not None


def test_wrong_password_and_unknown_user_get_the_same_message(grobot_env):
    make_user("alice")
    throttle = security.LoginThrottle()
    with pytest.raises(users.LoginRefused) as wrong_password:
        login("alice", "not the password", throttle)
    with pytest.raises(users.LoginRefused) as unknown_user:
        login("mallory", PASSWORD, throttle)
    assert str(wrong_password.value) == str(unknown_user.value) == "Wrong username or password"


def test_a_disabled_user_cannot_log_in(grobot_env):
    user_id = make_user("alice")
    with session_scope() as session:
        session.get(AppUser, user_id).disabled = True
    with pytest.raises(users.LoginRefused, match="Wrong username or password"):
        login("alice", PASSWORD, security.LoginThrottle())


def test_repeated_failures_slow_that_client_down_while_the_right_password_gets_in_elsewhere(grobot_env):
    make_user("alice")
    clock = FakeClock()
    throttle = security.LoginThrottle(free_failures=2, first_delay_seconds=30, clock=clock)
    for _ in range(2):
        with pytest.raises(users.LoginRefused, match="^Wrong username or password$"):
            login("alice", "guess", throttle, client="203.0.113.7")
    with pytest.raises(users.LoginRefused, match=r"Wrong username or password. Too many failed attempts: wait 30 s"):
        login(" ALICE ", "guess", throttle, client="203.0.113.7")
    with pytest.raises(users.LoginRefused, match="wait 30 s") as slowed:
        login("alice", PASSWORD, throttle, client="203.0.113.7")  # too soon: the password is not even checked
    assert slowed.value.retry_after == pytest.approx(30)
    user, _ = login("alice", PASSWORD, throttle, client="198.51.100.2")  # the real user, elsewhere: at once
    assert user.username == "alice"
    clock.now += 31
    user, _ = login("alice", PASSWORD, throttle, client="203.0.113.7")  # and here after the wait
    assert user.username == "alice"


# --------------------------------------------------------------------------- sessions end


def test_a_disabled_or_deleted_users_session_stops_working(grobot_env):
    alice = make_user("alice")
    bob = make_user("bob")
    _, alice_token = login("alice", PASSWORD, security.LoginThrottle())
    _, bob_token = login("bob", PASSWORD, security.LoginThrottle())
    with session_scope() as session:
        session.get(AppUser, alice).disabled = True
        session.delete(session.get(AppUser, bob))
    assert user_for(alice_token) is None
    assert user_for(bob_token) is None


def test_a_new_password_ends_older_sessions(grobot_env):
    make_user("alice")
    _, token = login("alice", PASSWORD, security.LoginThrottle())
    with session_scope() as session:
        users.set_password(users.get_user("alice", session=session), "another password", session=session)
    assert user_for(token) is None
    _, fresh = login("alice", "another password", security.LoginThrottle())
    assert user_for(fresh) is not None


def test_signing_out_ends_the_session_even_for_a_copied_token(grobot_env):
    user_id = make_user("alice")
    _, token = login("alice", PASSWORD, security.LoginThrottle())
    copied = str(token)
    with session_scope() as session:
        users.end_sessions(user_id, session=session)
    assert user_for(copied) is None
    _, fresh = login("alice", PASSWORD, security.LoginThrottle())
    assert user_for(fresh) is not None


def test_a_token_for_a_user_id_alone_is_not_enough(grobot_env):
    user_id = make_user("alice", Role.ADMIN)
    assert user_for(security.sign_session(user_id)) is None  # no stamp of the account


# --------------------------------------------------------------------------- roles and bots


def test_authorize_checks_the_session_and_the_role(grobot_env):
    make_user("root", Role.ADMIN)
    make_user("tess", Role.TESTER)
    _, admin_token = login("root", PASSWORD, security.LoginThrottle())
    _, tester_token = login("tess", PASSWORD, security.LoginThrottle())
    with session_scope(readonly=True) as session:
        assert users.authorize(admin_token, Role.ADMIN, session=session).username == "root"
        assert users.authorize(tester_token, session=session).username == "tess"  # any role
        assert users.authorize(tester_token, Role.ADMIN, Role.TESTER, session=session).username == "tess"
        with pytest.raises(PermissionDenied, match="needs the role admin") as denied:
            users.authorize(tester_token, Role.ADMIN, session=session)
        assert not isinstance(denied.value, users.NotSignedIn)
        with pytest.raises(users.NotSignedIn):
            users.authorize("", session=session)
        with pytest.raises(users.NotSignedIn):
            users.authorize(security.sign_session(999, stamp="x"), session=session)


def test_admins_see_every_bot_and_testers_only_the_granted_ones(grobot_env):
    make_user("root", Role.ADMIN)
    tester_id = make_user("tess", Role.TESTER)
    make_user("nobody", Role.TESTER)
    with session_scope() as session:
        ids = {name: bots.create_bot(session=session, name=name).id for name in ("Alpha", "Beta", "Gamma")}
        users.grant_bot(session.get(AppUser, tester_id), ids["Beta"], session=session)
    with session_scope(readonly=True) as session:

        def names(username: str) -> list[str]:
            user = users.get_user(username, session=session)
            return [summary.name for summary in users.bots_visible_to(user, session=session)]

        assert names("root") == ["Alpha", "Beta", "Gamma"]
        assert names("tess") == ["Beta"]
        assert names("nobody") == []
