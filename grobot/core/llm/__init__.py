"""LLM providers behind one async interface (see :mod:`grobot.core.llm.base`)."""
