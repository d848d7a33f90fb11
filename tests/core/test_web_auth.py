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


def login(username: str, password: str, throttle: security.LoginThrottle) -> tuple[users.SignedInUser, str]:
    with session_scope() as session:
        return users.login(session=session, username=username, password=password, throttle=throttle)


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


def test_throttle_locks_a_username_after_repeated_failures_then_lets_it_try_again():
    clock = FakeClock()
    throttle = security.LoginThrottle(max_failures=3, window_seconds=300, lockout_seconds=60, clock=clock)
    assert throttle.record_failure("alice") == 0
    assert throttle.record_failure("Alice ") == 0  # same account, however typed
    assert throttle.retry_after("alice") == 0
    assert throttle.record_failure("alice") == pytest.approx(60)
    clock.now += 20
    assert throttle.retry_after("ALICE") == pytest.approx(40)
    assert throttle.retry_after("bob") == 0  # only that username
    clock.now += 41
    assert throttle.retry_after("alice") == 0


def test_throttle_forgets_old_failures_and_a_success_clears_the_count():
    clock = FakeClock()
    throttle = security.LoginThrottle(max_failures=3, window_seconds=300, lockout_seconds=60, clock=clock)
    throttle.record_failure("alice")
    throttle.record_failure("alice")
    clock.now += 301  # the streak is old: counting starts again
    assert throttle.record_failure("alice") == 0
    throttle.record_failure("alice")
    throttle.record_success("alice")
    assert throttle.record_failure("alice") == 0
    assert throttle.retry_after("alice") == 0


def test_throttle_memory_is_bounded():
    clock = FakeClock()
    throttle = security.LoginThrottle(max_failures=3, window_seconds=10, lockout_seconds=5, max_entries=100, clock=clock)
    for i in range(500):
        throttle.record_failure(f"user{i}")
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


def test_repeated_failures_lock_the_username_even_for_the_right_password(grobot_env):
    make_user("alice")
    clock = FakeClock()
    throttle = security.LoginThrottle(max_failures=3, lockout_seconds=30, clock=clock)
    for _ in range(2):
        with pytest.raises(users.LoginRefused, match="Wrong username or password"):
            login("alice", "guess", throttle)
    with pytest.raises(users.LoginRefused, match=r"Too many failed attempts. Try again in 30 s") as locked:
        login("alice", "guess", throttle)
    assert locked.value.retry_after == pytest.approx(30)
    with pytest.raises(users.LoginRefused, match="Too many failed attempts"):
        login("alice", PASSWORD, throttle)  # locked: the password is not even checked
    clock.now += 31
    user, _ = login("alice", PASSWORD, throttle)
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
