"""Secrets are encrypted at rest; a wrong key is reported clearly; passwords are hashed."""

from __future__ import annotations

import os
import stat

import pytest

from grobot.core import security
from grobot.core.db import session_scope
from grobot.core.errors import SecretKeyError
from grobot.core.models import Bot
from grobot.core.services import bots, secrets_rotation
from grobot.core.settings import get_settings
from tests.helpers import make_token

TOKEN = make_token(111111111111111111)


def test_token_is_stored_encrypted_and_decrypts(grobot_env):
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="enc", token=TOKEN)
    with session_scope(readonly=True) as session:
        stored = session.get(Bot, bot.id)
    assert TOKEN not in stored.discord_token_enc
    assert bots.get_token(stored) == TOKEN


def test_wrong_key_gives_a_clear_error_not_garbage(grobot_env, monkeypatch):
    secret = security.encrypt("api-key-123")
    monkeypatch.setenv("GROBOT_SECRET_KEY", "another-key")
    get_settings.cache_clear()
    with pytest.raises(SecretKeyError, match="secrets were encrypted with another key"):
        security.decrypt(secret)


def test_key_is_generated_once_with_mode_600(grobot_env, monkeypatch):
    monkeypatch.delenv("GROBOT_SECRET_KEY")
    get_settings.cache_clear()
    secret = security.encrypt("x")
    path = security.key_file()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    first = path.read_text()
    assert security.decrypt(secret) == "x"
    security.encrypt("y")
    assert path.read_text() == first


def test_rotation_reencrypts_every_secret(grobot_env, monkeypatch):
    monkeypatch.delenv("GROBOT_SECRET_KEY")
    get_settings.cache_clear()
    with session_scope() as session:
        bot = bots.create_bot(session=session, name="rot", token=TOKEN)
        before = bot.discord_token_enc
    old_key = security.key_file().read_text()
    assert secrets_rotation.rotate_key(session_factory=session_scope) == 1
    assert security.key_file().read_text() != old_key
    with session_scope(readonly=True) as session:
        after = session.get(Bot, bot.id)
    assert after.discord_token_enc != before
    assert bots.get_token(after) == TOKEN


def test_password_hashing():
    hashed = security.hash_password("correct horse")
    assert hashed.startswith("$argon2")
    assert security.verify_password("correct horse", hashed)
    assert not security.verify_password("wrong", hashed)
    assert not security.verify_password("x", "not-a-hash")
