"""A code block a model left open is closed before anything is shown after it."""

from __future__ import annotations

from grobot.core.agents.council import SECTION_MAX_CHARS, AdvisorAnswer, Deliberation
from grobot.core.markdown_fences import fence_open_at, fences_closed


def test_an_open_code_block_is_closed_with_its_own_fence():
    assert fences_closed("Run:\n~~~bash\nls") == "Run:\n~~~bash\nls\n~~~"
    assert fences_closed("Run:\n````\nls\n") == "Run:\n````\nls\n````"
    closed = "Run:\n```\nls\n```\nDone."
    assert fences_closed(closed) == closed
    assert fences_closed("Inline ```code``` is no block") == "Inline ```code``` is no block"


def test_a_council_synthesis_keeps_its_parts_out_of_an_advisors_open_code_block():
    result = Deliberation(question="How?", consensus="Use this:\n```python\nprint(1)",
                          disagreements=["Cost:\n```\nhigh"], recommendation="Start with\n```\nmake run",
                          confidence=60)
    text = result.synthesis(public=True)
    for part in ("**Disagreements:**", "**Recommendation:**"):
        assert fence_open_at(text, text.index(part)) is None, text
    assert fence_open_at(text) is None


def test_a_section_cut_inside_code_is_closed_and_stays_within_its_length():
    long_code = "Here:\n```text\n" + "x = 1\n" * 600
    section = AdvisorAnswer(name="Pragmatist", role="", provider="ollama", model="m", answer=long_code).section()
    assert len(section) <= SECTION_MAX_CHARS
    assert fence_open_at(section) is None and section.rstrip().endswith("```")
    short = AdvisorAnswer(name="Skeptic", role="", provider="ollama", model="m", answer="See:\n```\nls").section()
    assert fence_open_at(short) is None
