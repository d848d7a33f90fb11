"""What a chat user (Discord) is told when a run fails: a plain reason, never a server's address or
the text a provider sent back (an API key fragment, an internal host). The full error stays in the
bot's logs and in Test Chat, for its admins and testers."""

from __future__ import annotations

from grobot.core.errors import GroBotError

UNAVAILABLE = "the AI service is not available right now; please try again later"
GENERIC = "something went wrong on my side; an admin can see why in the bot's logs"


def public_error(exc: BaseException) -> str:
    """The reason a failed run gives its chat user (see the module's docstring)."""
    from grobot.core.llm import errors

    if isinstance(exc, errors.RateLimited):
        return "the AI service is busy right now; please try again in a minute"
    if isinstance(exc, errors.LLMTimeout):
        return "the AI service took too long to answer; please try again"
    if isinstance(exc, errors.ContextTooLong):
        return "this conversation is too long for my model; /reset starts a new one"
    if isinstance(exc, errors.EmptyAnswer):
        return "my model gave no answer; please try again or say it differently"
    if isinstance(exc, (errors.AuthError, errors.ModelNotFound)):
        return "my AI service is not set up right; an admin needs to check the bot's settings"
    if isinstance(exc, errors.LLMError):
        return UNAVAILABLE
    if isinstance(exc, GroBotError) and "://" not in str(exc):
        return " ".join(str(exc).split())[:300] or GENERIC  # a domain error says what is wrong, for a user
    return GENERIC
