"""``python -m grobot council``: an admin sets the council up, asks it, and reads past deliberations."""

from __future__ import annotations

import json

from grobot.cli.main import main
from tests.fakes.llm import Reply, use_fake_llm


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_council_from_the_command_line(grobot_env, capsys, fake_llm):
    use_fake_llm(fake_llm)
    assert run(capsys, "bot", "add", "--name", "sage")[0] == 0
    code, out, _ = run(capsys, "council", "show", "sage")
    assert code == 0 and "council: disabled" in out and "Devil's Advocate" in out and "ollama fake-model" in out

    code, _, err = run(capsys, "council", "ask", "sage", "Go?")
    assert code == 2 and "not enabled" in err and "\n" == err[-1] and err.count("\n") == 1

    assert run(capsys, "council", "enable", "sage")[0] == 0
    assert run(capsys, "council", "set", "sage", "Visionary", "--model", "vision-1")[0] == 0
    assert run(capsys, "council", "set", "sage", "Historian", "--role", "You are the Historian.",
               "--category", "decision")[0] == 0
    assert run(capsys, "council", "remove", "sage", "Strategist")[0] == 0
    code, _, err = run(capsys, "council", "set", "sage", "Analyst", "--provider", "nope")
    assert code == 2 and "unknown provider 'nope'" in err
    code, out, _ = run(capsys, "council", "show", "sage", "--json")
    shown = json.loads(out)
    assert shown["enabled"] is True
    assert [a["name"] for a in shown["advisors"]] == ["Analyst", "Devil's Advocate", "Pragmatist", "Visionary",
                                                      "Historian"]
    assert shown["advisors"][3]["uses"] == "ollama vision-1"

    fake_llm.script_for(lambda body: "advisory council" in str(body["messages"][0]["content"]),
                        Reply(json={"consensus": "Go.", "disagreements": [], "recommendation": "Start Monday.",
                                    "confidence": 81}), persistent=True)
    fake_llm.script_for(lambda body: True, Reply(text="I would go."), persistent=True)
    code, out, _ = run(capsys, "council", "ask", "sage", "Go?")
    assert code == 0 and out.count("I would go.") == 5 and "confidence 81/100" in out and "Start Monday." in out
    assert [r["model"] for r in fake_llm.chat_requests()].count("vision-1") == 1

    code, out, _ = run(capsys, "council", "list", "sage")
    assert code == 0 and "Go?" in out and "81" in out
    code, out, _ = run(capsys, "council", "list", "sage", "--json")
    [row] = json.loads(out)
    assert row["platform"] == "cli" and len(row["advisors"]) == 5
    code, out, _ = run(capsys, "council", "view", str(row["id"]))
    assert code == 0 and "## Historian" in out and "Consensus:** Go." in out
    assert run(capsys, "council", "reset", "sage")[0] == 0
    code, out, _ = run(capsys, "council", "show", "sage", "--json")
    assert [a["name"] for a in json.loads(out)["advisors"]][1] == "Strategist"


def test_council_ask_says_how_to_enable_it_and_fails_without_a_synthesis(grobot_env, capsys, fake_llm, monkeypatch):
    from grobot.cli import council as council_cli

    use_fake_llm(fake_llm)
    loaded: list[object] = []
    real_serve = council_cli.serve_embedded

    async def serve_embedded(llms):
        loaded.append(llms)
        return await real_serve(llms)

    monkeypatch.setattr(council_cli, "serve_embedded", serve_embedded)
    assert run(capsys, "bot", "add", "--name", "sage")[0] == 0
    code, out, err = run(capsys, "council", "ask", "sage", "Go?")
    assert (code, out) == (2, "")
    assert err == "error: the council of sage is not enabled: turn it on with python -m grobot council enable sage\n"
    assert loaded == []  # no model was started for a council that cannot meet

    assert run(capsys, "council", "enable", "sage")[0] == 0
    fake_llm.script_for(lambda body: "advisory council" in str(body["messages"][0]["content"]),
                        Reply(status=500, error="synthesis model crashed"), persistent=True)
    fake_llm.script_for(lambda body: True, Reply(text="I would go."), persistent=True)
    code, out, err = run(capsys, "council", "ask", "sage", "Go?")
    assert code == 2 and out.count("I would go.") == 5 and "**Synthesis** could not be made" in out
    assert err.startswith("error: the synthesis could not be made: ") and err.count("\n") == 1
    code, out, err = run(capsys, "council", "ask", "sage", "Go?", "--json")
    assert code == 2 and json.loads(out)["confidence"] is None and err.count("\n") == 1


def test_council_show_does_not_blame_the_embedded_model_for_another_provider(grobot_env, capsys):
    assert run(capsys, "bot", "add", "--name", "helper")[0] == 0  # no LLM set: the embedded demo model
    assert run(capsys, "council", "synthesis", "helper", "--provider", "ollama", "--model", "llama3.2")[0] == 0
    code, out, _ = run(capsys, "council", "show", "helper")
    assert code == 0 and out.splitlines()[0] == "council: disabled; synthesis on ollama llama3.2"
    assert json.loads(run(capsys, "council", "show", "helper", "--json")[1])["synthesis"] == "ollama llama3.2"
