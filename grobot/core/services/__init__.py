"""Service functions: the one place for each rule, shared by the UI, the CLI and the worker.

Every function takes the database session as the keyword-only argument ``session``.
"""
