"""``bot channel`` as an admin meets it: a channel's persona set by the name the bot saw it under, shown
by name, its LLM overrides checked as the bot's own LLM settings are (a refusal in one plain line, with
nothing saved), and removed."""

from __future__ import annotations

import json

from grobot.cli.main import main
from grobot.core.db import session_scope
from grobot.core.models import Conversation
from grobot.core.services import bots

RANDOM = "222222222222222222"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_channel_persona_from_the_cli(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "parrot")[0] == 0
    with session_scope() as session:
        bot_id = bots.get_bot("parrot", session=session).id
        session.add(Conversation(bot_id=bot_id, key=f"guild:{RANDOM}", title="#random", discord_channel_id=RANDOM))

    code, out, _ = run(capsys, "bot", "channel", "parrot")
    assert code == 0 and "its own persona in every channel" in out
    code, out, _ = run(capsys, "bot", "channel", "parrot", "set", "#random", "--personality", "Speak like a pirate.")
    assert code == 0 and f"#random ({RANDOM})" in out and "Speak like a pirate." in out
    code, out, err = run(capsys, "bot", "channel", "parrot", "set", "#random", "--category", "output", "--provider",
                         "ollama", "--model", "pirate-model", "--temperature", "0.2")
    assert code == 0 and "output: ollama pirate-model, temperature 0.2" in out, err

    # Checked as the bot's own LLM form checks it: nothing saved when refused.
    for args, said in ((("--provider", "openai"), "needs an API key"), (("--temperature", "5"), "temperature"),
                       (("--provider", "nosuch"), "unknown provider"),
                       (("--model", "nosuch"), "GGUF file not found")):  # the bot's provider: the embedded one
        code, _, err = run(capsys, "bot", "channel", "parrot", "set", "#random", "--category", "decision", *args)
        assert code == 2 and err.startswith("error: ") and said in err and err.count("\n") == 1, err
    code, _, err = run(capsys, "bot", "channel", "parrot", "set", "#nowhere", "--personality", "x")
    assert code == 2 and "has seen no channel named '#nowhere'" in err

    code, out, _ = run(capsys, "bot", "channel", "parrot", "--json")
    assert json.loads(out) == [{"channel_id": RANDOM, "name": "random", "personality": "Speak like a pirate.",
                                "llms": {"output": {"provider": "ollama", "model": "pirate-model",
                                                                      "temperature": 0.2}}}]
    code, out, _ = run(capsys, "bot", "channel", "parrot", "set", RANDOM, "--clear-llm", "output")
    assert code == 0 and "the bot's own" in out
    assert run(capsys, "bot", "channel", "parrot", "clear", "#random")[0] == 0
    code, _, err = run(capsys, "bot", "channel", "parrot", "show", "#random")
    assert code == 2 and "has no persona in channel #random" in err
