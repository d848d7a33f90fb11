"""What a Discord user is told when a run fails: a plain reason, never an address or a provider's reply."""

from __future__ import annotations

import pytest

from grobot.core.errors import NotFoundError
from grobot.core.llm import errors
from grobot.core.llm.public_errors import GENERIC, UNAVAILABLE, public_error

URL = "http://10.0.0.7:11434"


@pytest.mark.parametrize(("exc", "told"), [
    (errors.ServerError(f"ollama at {URL} failed (HTTP 500: key sk-abc123 leaked)", provider="ollama", url=URL),
     UNAVAILABLE),
    (errors.ServerUnavailable(f"cannot reach ollama at {URL}", provider="ollama", url=URL), UNAVAILABLE),
    (errors.AuthError(f"API key rejected by openai at {URL} (HTTP 401: Incorrect API key sk-ab…)", provider="openai",
                      url=URL), "my AI service is not set up right; an admin needs to check the bot's settings"),
    (errors.RateLimited("429 from openai", provider="openai", url=URL),
     "the AI service is busy right now; please try again in a minute"),
    (errors.EmptyAnswer(f"model 'm' at {URL} gave an empty answer twice", provider="ollama", url=URL),
     "my model gave no answer; please try again or say it differently"),
    (NotFoundError("no stored message numbered 7"), "no stored message numbered 7"),  # a domain error says what
    (NotFoundError(f"nothing at {URL}"), GENERIC),  # unless it names an address
    (KeyError("api_key"), GENERIC),
])
def test_a_failed_run_is_told_plainly(exc: Exception, told: str) -> None:
    assert public_error(exc) == told
    assert "://" not in told and "sk-" not in told
