"""The context window: the history is trimmed oldest first, the system prompt kept, tool pairs kept together."""

from __future__ import annotations

from grobot.core.llm.context_window import messages_tokens, prompt_room, trim_history


def turn(i: int, size: int = 200) -> list[dict]:
    return [{"role": "user", "content": f"q{i} " + "x" * size}, {"role": "assistant", "content": f"a{i} " + "y" * size}]


def test_oldest_messages_go_first_and_the_system_prompt_stays():
    messages = [{"role": "system", "content": "rules"}] + [m for i in range(20) for m in turn(i)] + [{"role": "user", "content": "now"}]
    trimmed = trim_history(messages, 600)
    assert trimmed[0] == {"role": "system", "content": "rules"} and trimmed[-1] == {"role": "user", "content": "now"}
    assert messages_tokens(trimmed) <= 600 < messages_tokens(messages)
    kept = [m["content"].split()[0] for m in trimmed[1:-1]]
    assert kept == [f"{p}{i}" for i in range(20 - len(kept) // 2, 20) for p in ("q", "a")]  # the newest turns, in order


def test_tool_results_never_lose_their_call():
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                                 "function": {"name": "t", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "z" * 400}
    messages = [{"role": "system", "content": "s"}, *turn(0), call, result, {"role": "assistant", "content": "done"},
                {"role": "user", "content": "next"}]
    kept_pair = dropped_pair = 0
    for budget in range(20, 400, 7):
        trimmed = trim_history(messages, budget)
        has_call, has_result = call in trimmed, result in trimmed
        assert has_call == has_result, budget  # a call and its result are kept or dropped together
        if has_result:
            assert trimmed[trimmed.index(result) - 1] is call
            kept_pair += 1
        else:
            dropped_pair += 1
    assert kept_pair and dropped_pair  # the budgets tried both keep and drop the pair


def test_a_single_message_too_long_is_cut_from_its_start():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "a" * 10_000 + "THE END"}]
    trimmed = trim_history(messages, 300)
    assert trimmed[-1]["content"].endswith("THE END") and messages_tokens(trimmed) <= 300


def test_input_budget_leaves_room_for_the_answer():
    assert prompt_room(8192) == 8192 - 1024 and prompt_room(1000) == 750


def test_the_supervisor_sends_no_history_a_prompt_of_the_window_could_not_hold():
    """``newest_within`` (the stored history the supervisor sends a bot) leaves out only what every prompt
    of the window trims off: the prompts built from it are the prompts built from the whole history."""
    from grobot.core.agents.context import history_for_model
    from grobot.core.llm.context_window import newest_within

    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                                 "function": {"name": "t", "arguments": "{}"}}]}
    history = []
    for i in range(60):
        history += [{"role": "user", "content": f"q{i} " + "x" * (50 + 37 * (i % 7)), "name": "alice"},
                    {"role": "assistant", "content": f"a{i} " + "y" * (40 + 53 * (i % 5))}]
        if i % 9 == 4:
            history += [call, {"role": "tool", "tool_call_id": "c1", "content": "z" * 300}]
    for window in (256, 512, 1000, 2048, 4096, 100_000):
        sent = newest_within(history, window)
        assert sent == history[len(history) - len(sent):] and sent[0]["role"] != "tool"
        for system in ("", "s" * 900):
            def prompt(h: list) -> list:
                return trim_history([{"role": "system", "content": system}, *history_for_model(h, with_names=True),
                                     {"role": "user", "content": "now"}], prompt_room(window))

            assert prompt(sent) == prompt(history), (window, system)
        assert (len(sent) < len(history)) == (window < 100_000)
    assert newest_within([{"role": "user", "content": "w" * 10_000}], 256) == [{"role": "user", "content": "w" * 10_000}]
