"""The agent chain: specialised LLM calls, one job each (see docs/DESIGN.md)."""
