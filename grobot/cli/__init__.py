"""The ``python -m grobot`` command line: one module per command group.

Each module has ``register(subparsers)`` that adds its commands; a command's handler
takes the parsed arguments and returns the exit code. Handlers raise
:class:`grobot.core.errors.GroBotError` for bad input: ``main`` prints it as one line
on stderr and exits with code 2.
"""
