"""The services behind the admin pages: account guards (never the last admin, never
yourself), tester grants, range checks of the global settings (all or none), per-field
errors of the LLM form, and usage per agent role."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grobot.core.db import session_scope
from grobot.core.errors import ConflictError, NotFoundError, ValidationError
from grobot.core.models import AppUser, Role
from grobot.core.services import app_settings, bots, llm_calls, llm_settings, usage, users
from grobot.core.services.validation import field_errors

PASSWORD = "correct horse battery"


def make_user(username: str, role: Role) -> int:
    with session_scope() as session:
        return users.create_user(session=session, username=username, password=PASSWORD, role=role.value).id


def test_the_last_enabled_admin_and_yourself_are_protected(grobot_env) -> None:
    first, second, tester = make_user("ann", Role.ADMIN), make_user("bob", Role.ADMIN), make_user("tim", Role.TESTER)
    with session_scope() as session:
        with pytest.raises(ConflictError, match="your own account"):
            users.delete_user(session.get(AppUser, first), session=session, acting_user_id=first)
        with pytest.raises(ConflictError, match="your own account"):
            users.set_disabled(session.get(AppUser, first), True, session=session, acting_user_id=first)
        users.set_disabled(session.get(AppUser, second), True, session=session, acting_user_id=first)
    with session_scope() as session:
        # bob is disabled: ann is the last enabled admin, whoever acts.
        with pytest.raises(ConflictError, match="last enabled admin"):
            users.delete_user(session.get(AppUser, first), session=session, acting_user_id=second)
        with pytest.raises(ConflictError, match="last enabled admin"):
            users.set_disabled(session.get(AppUser, first), True, session=session, acting_user_id=None)
        users.delete_user(session.get(AppUser, tester), session=session, acting_user_id=first)
        users.set_disabled(session.get(AppUser, second), False, session=session, acting_user_id=first)
    with session_scope() as session:
        users.delete_user(session.get(AppUser, second), session=session, acting_user_id=first)
        assert [u.username for u in users.list_users(session=session)] == ["ann"]


def test_disabling_or_a_new_password_ends_the_sessions(grobot_env) -> None:
    admin, tester = make_user("ann", Role.ADMIN), make_user("tim", Role.TESTER)
    with session_scope() as session:
        token = users.start_session(session.get(AppUser, tester))
        assert users.user_for_session(token, session=session) is not None
        users.set_password(session.get(AppUser, tester), "another password", session=session)
    with session_scope() as session:
        assert users.user_for_session(token, session=session) is None
        token = users.start_session(session.get(AppUser, tester))
        users.set_disabled(session.get(AppUser, tester), True, session=session, acting_user_id=admin)
    with session_scope() as session:
        assert users.user_for_session(token, session=session) is None


def test_a_testers_bots_are_set_exactly(grobot_env) -> None:
    tester, admin = make_user("tim", Role.TESTER), make_user("ann", Role.ADMIN)
    with session_scope() as session:
        a, b, c = (bots.create_bot(session=session, name=n).id for n in ("a", "b", "c"))
        user = session.get(AppUser, tester)
        users.set_granted_bots(user, {a, b}, session=session)
        assert users.visible_bot_ids(user, session=session) == {a, b}
        users.set_granted_bots(user, {b, c}, session=session)
        assert users.visible_bot_ids(user, session=session) == {b, c}
        assert {k: sorted(v) for k, v in users.granted_bots(session=session).items()} == {tester: sorted([b, c])}
        with pytest.raises(NotFoundError):
            users.set_granted_bots(user, {b, 9999}, session=session)
        with pytest.raises(ValidationError, match="only testers"):
            users.set_granted_bots(session.get(AppUser, admin), {a}, session=session)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("log_retention_days", "0", "must be between 1 and 3,650"),
        ("log_retention_days", "2.5", "expected a whole number"),
        ("max_file_bytes", str(2 * 1024**3), "must be between 1 and 1,073,741,824"),
        ("tool_timeout_seconds", "abc", "expected a number"),
        ("tool_timeout_seconds", "nan", "expected a number"),
        ("acknowledge_after_seconds", "", "expected a number"),
        ("acknowledge_after_seconds", True, "expected a number"),
    ],
)
def test_settings_out_of_range_are_refused(key: str, value: object, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        app_settings.check_value(key, value)


def test_settings_are_stored_all_or_none(grobot_env) -> None:
    with session_scope() as session:
        errors = app_settings.set_values({"log_retention_days": "30", "tool_timeout_seconds": "0"}, session=session)
    assert errors == {"tool_timeout_seconds": "must be between 1 and 600"}
    with session_scope() as session:
        assert app_settings.get_value("log_retention_days", session=session) == 14
        assert app_settings.set_values({"log_retention_days": " 30 ", "acknowledge_after_seconds": "0.5"}, session=session) == {}
    with session_scope(readonly=True) as session:
        assert app_settings.get_values(("log_retention_days", "acknowledge_after_seconds"), session=session) == {
            "log_retention_days": 30,
            "acknowledge_after_seconds": 0.5,
        }


def test_llm_form_errors_are_per_field() -> None:
    errors = field_errors(llm_settings.LLMFields, {"provider": "nope", "model": "", "temperature": 5, "base_url": "ftp://x"})
    assert set(errors) == {"provider", "model", "temperature", "base_url"}
    assert errors["base_url"] == "must start with http:// or https://"
    assert errors["temperature"] == "must be between 0 and 2"
    assert errors["model"] == "required"
    assert field_errors(llm_settings.LLMFields, {"provider": "openai", "model": "gpt-4o-mini"}) == {}


def test_usage_per_agent_role(grobot_env) -> None:
    def call(role: str, tokens_in: int, latency: float, error: str = "") -> SimpleNamespace:
        return SimpleNamespace(role=role, provider="ollama", model="m", tokens_in=tokens_in, tokens_out=1,
                               ttft_ms=None, latency_ms=latency, error=error)  # fmt: skip

    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="u").id
        records = [call("gatekeeper", 10, 100.0), call("synthesizer", 20, 300.0), call("synthesizer", 30, 500.0, "boom")]
        llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=records)
    with session_scope(readonly=True) as session:
        rows = usage.usage_by_role(session=session, days=1)
    assert [(r.agent_role, r.calls, r.tokens_in, r.tokens_out, r.errors, r.avg_latency_ms) for r in rows] == [
        ("synthesizer", 2, 50, 2, 1, 400.0),
        ("gatekeeper", 1, 10, 1, 0, 100.0),
    ]
