"""``users grant|revoke|disable|enable``: the Users page's actions from the command line, with its rules."""

from __future__ import annotations

import io
import sys

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.services import users


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def add_user(capsys, monkeypatch, name: str, role: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a-password-123\n"))
    assert run(capsys, "users", "add", "--username", name, "--role", role, "--password-stdin")[0] == 0


def visible(name: str) -> set[int] | None:
    with session_scope(readonly=True) as session:
        return users.visible_bot_ids(users.get_user(name, session=session), session=session)


def test_revoke_takes_a_tester_s_bot_away(grobot_env, capsys, monkeypatch):
    add_user(capsys, monkeypatch, "tess", "tester")
    add_user(capsys, monkeypatch, "root", "admin")
    for name in ("alpha", "beta"):
        assert run(capsys, "bot", "add", "--name", name)[0] == 0
        assert run(capsys, "users", "grant", "tess", name)[0] == 0

    assert run(capsys, "users", "revoke", "tess", "alpha") == (0, "'tess' may no longer see bot 'alpha'\n", "")
    assert visible("tess") == {2}  # beta's grant stays
    assert run(capsys, "users", "revoke", "tess", "1") == (0, "'tess' could not see bot 'alpha': nothing to revoke\n", "")
    assert run(capsys, "users", "revoke", "root", "beta") == (
        2, "", "error: only testers are limited to some bots; admins see them all\n")
    assert run(capsys, "users", "revoke", "tess", "ghost") == (2, "", "error: no bot named or numbered 'ghost'\n")
    assert run(capsys, "users", "revoke", "nobody", "beta") == (2, "", "error: no user named 'nobody'\n")
    assert visible("tess") == {2}


def test_grant_lets_only_a_tester_see_a_bot(grobot_env, capsys, monkeypatch):
    add_user(capsys, monkeypatch, "tess", "tester")
    add_user(capsys, monkeypatch, "root", "admin")
    assert run(capsys, "bot", "add", "--name", "alpha")[0] == 0

    assert run(capsys, "users", "grant", "root", "alpha") == (
        2, "", "error: only testers are limited to some bots; admins see them all\n")  # as revoke (it said granted)
    assert run(capsys, "users", "grant", "tess", "1") == (0, "'tess' may now see bot 'alpha'\n", "")
    assert visible("tess") == {1}
    assert run(capsys, "users", "grant", "tess", "alpha") == (
        0, "'tess' could already see bot 'alpha': nothing to grant\n", "")
    assert run(capsys, "users", "grant", "tess", "ghost") == (2, "", "error: no bot named or numbered 'ghost'\n")
    assert visible("tess") == {1}


def test_disable_ends_the_sessions_and_never_takes_the_last_admin(grobot_env, capsys, monkeypatch):
    add_user(capsys, monkeypatch, "root", "admin")
    add_user(capsys, monkeypatch, "tess", "tester")
    with session_scope(readonly=True) as session:
        token = users.start_session(users.get_user("tess", session=session))

    assert run(capsys, "users", "disable", "tess") == (0, "'tess' disabled: their sessions have ended\n", "")
    with session_scope(readonly=True) as session:
        assert users.get_user("tess", session=session).disabled
        assert users.user_for_session(token, session=session) is None
    assert run(capsys, "users", "enable", "tess") == (0, "'tess' enabled\n", "")
    with session_scope(readonly=True) as session:
        assert not users.get_user("tess", session=session).disabled

    assert run(capsys, "users", "disable", "root") == (2, "", "error: cannot disable the last enabled admin\n")
    add_user(capsys, monkeypatch, "second", "admin")
    assert run(capsys, "users", "disable", "root")[0] == 0
    assert run(capsys, "users", "disable", "second") == (2, "", "error: cannot disable the last enabled admin\n")
    with session_scope(readonly=True) as session:
        assert [(u.username, u.disabled) for u in users.list_users(session=session)] == [
            ("root", True), ("second", False), ("tess", False)]
