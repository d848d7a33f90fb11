"""GroBot: a self-hosted platform for a fleet of LLM-driven Discord bots."""
