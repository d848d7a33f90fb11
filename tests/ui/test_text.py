"""The web app's wording and the sign-in return path, without a browser (the browser tests of
``test_wording.py`` and ``test_shell.py`` show them on the pages)."""

from __future__ import annotations

import logging

import pytest

from grobot.components.formatting import byte_size_text, counted
from grobot.core.errors import ValidationError
from grobot.core.services import bots, llm_settings
from grobot.core.services.validation import sentences, validate
from grobot.core.wording import human_size
from grobot.pages.add_bot_state import added_message
from grobot.pages.bot_files_state import too_big
from grobot.state.app_state import login_route, safe_next
from grobot.state.bot_page import enabled_message

logger = logging.getLogger(__name__)


@pytest.mark.parametrize(("model", "data", "expected"), [
    (llm_settings.LLMFields, {"provider": "ollama", "model": "m", "temperature": 7}, "Temperature must be between 0 and 2."),
    (llm_settings.LLMFields, {"provider": "ollama", "model": "m", "context_window": "many"},
     "Context window must be a whole number."),
    (bots.BotFields, {"max_tool_rounds": 99}, "Max tool rounds must be between 0 and 20."),
])
def test_validator_errors_become_sentences_naming_the_field_and_its_range(model, data, expected) -> None:
    with pytest.raises(ValidationError) as caught:
        validate(model, data)
    assert "Input should" not in str(caught.value) and "Value error" not in str(caught.value)
    assert sentences(str(caught.value)) == expected


def test_other_messages_are_left_as_they_are_but_capitalised() -> None:
    assert sentences("the file is 3 bytes; the limit is 2 bytes") == "The file is 3 bytes; the limit is 2 bytes"
    assert sentences("name: required; keywords: must be at most 50 items") == (
        "Name is required. Keywords must be at most 50 items.")


def test_sizes_differ_when_the_rounded_figures_would_not() -> None:
    assert too_big("Big.bin", 1_048_577, 1_048_576) == (
        "Big.bin is 1,048,577 bytes; the limit is 1,048,576 bytes (1.0 MB).")
    assert too_big("Huge.bin", 3 * 1_048_576, 1_048_576) == "Huge.bin is 3.0 MB; the limit is 1.0 MB."


def test_file_sizes_as_the_files_list_shows_them() -> None:
    """The list said "1 bytes"."""
    assert [human_size(n) for n in (1, 17, 1536, 5 * 1_048_576, 3 * 1024 ** 3)] == [
        "1 byte", "17 bytes", "1.5 KB", "5.0 MB", "3.0 GB"]


@pytest.mark.parametrize(("raw", "text"), [
    ("5242880", "5,242,880 bytes = 5 MiB."), ("1048576", "1,048,576 bytes = 1 MiB."),
    ("3000000", "3,000,000 bytes ≈ 2.9 MiB."), ("1", "1 byte."), ("12", "12 bytes."),
    ("", "A whole number of bytes, e.g. 5242880 = 5 MiB."),
])
def test_the_byte_size_helper(raw: str, text: str) -> None:
    assert byte_size_text(raw) == text


def test_counted_nouns() -> None:
    assert [counted(n, "guild") for n in (0, 1, 2, 1500)] == ["0 guilds", "1 guild", "2 guilds", "1,500 guilds"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


def test_the_added_bot_toast_mentions_starting_the_worker_only_without_one() -> None:
    assert "start the worker" in added_message("a", worker_running=False)
    assert "start the worker" not in added_message("a", worker_running=True)


@pytest.mark.parametrize(("target", "safe"), [
    ("/bots/3/logs", "/bots/3/logs"), ("/usage?days=7", "/usage?days=7"), ("//evil.example/x", "/"),
    ("https://evil.example/", "/"), ("/\\evil.example", "/"), ("/login", "/"), ("/login?next=/x", "/"),
    ("", "/"), (None, "/"), ("bots/3", "/"), ("/a\nb", "/"),
])
def test_signing_in_returns_only_to_a_page_of_the_app(target, safe) -> None:
    assert safe_next(target) == safe


def test_the_login_route_carries_the_page_that_asked() -> None:
    assert login_route("/bots/3/logs") == "/login?next=%2Fbots%2F3%2Flogs"
    assert login_route("/") == "/login" and login_route("//evil.example") == "/login"


def test_the_enable_switch_toast_says_what_the_worker_does_or_that_none_runs() -> None:
    assert enabled_message("a", True, worker_running=True) == "a enabled: the worker starts it."
    assert "start it with python -m grobot worker" in enabled_message("a", True, worker_running=False)
    assert enabled_message("a", False, worker_running=False) == "a disabled."
