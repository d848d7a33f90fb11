"""Pure domain layer of GroBot.

Nothing below this package imports ``reflex`` or ``discord``: the same services serve
the web app, the CLI and the bot worker.
"""
