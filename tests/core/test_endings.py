"""How a text cut at its output cap ends for a reader."""

from __future__ import annotations

import pytest

from grobot.core.agents.endings import ended_cleanly


@pytest.mark.parametrize(("cut", "ended"), [
    # the last full sentence keeps most of the text: the fragment goes
    ("Paris is the capital of France. It has many museums and parks. The Eiffel",
     "Paris is the capital of France. It has many museums and parks."),
    ('He said: "We will go tomorrow." Then', 'He said: "We will go tomorrow."'),
    ("东京是日本的首都。它很大。人口", "东京是日本的首都。它很大。"),
    # too little would be left, or no sentence ends: an ellipsis, without a dangling comma
    ("Paris is nice. Then we walked along the river and saw many boats, and",
     "Paris is nice. Then we walked along the river and saw many boats, and…"),
    ("One, two, three, four,", "One, two, three, four…"),
    ("Version 1.2 is out and", "Version 1.2 is out and…"),  # a dot inside a number ends no sentence
    # inside a code block: the block is closed
    ("Here:\n```python\nprint(1)\nfor i in", "Here:\n```python\nprint(1)\nfor i in\n```\n…"),
    # already ends: kept
    ("All done!", "All done!"),
])
def test_a_cut_text_ends_for_a_reader(cut: str, ended: str) -> None:
    assert ended_cleanly(cut) == ended
