"""Budget alerts: a bot's budget used to 80 % is alerted once per budget period.

The check is free on the message path: :func:`alert_near_budgets` looks at the counters the
usage limits just read, and only a budget at 80 % or more that this process has not alerted
yet costs anything: a background thread records it in ``budget_alert`` (its key, bot + budget +
period, makes it once for every process) and, when it is new, writes a WARNING to the bot's log.
The web app's banner and ``usage --json`` read the counters themselves (:func:`fleet_alerts`).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from grobot.core.db import session_scope
from grobot.core.limits import Budget, LimitState, near_budgets
from grobot.core.models import BudgetAlert, utcnow

logger = logging.getLogger(__name__)

_INSERTS = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}
_alerted: set[tuple[int, str, str]] = set()  # (bot id, budget, period) alerted or being alerted by this process
_lock = threading.Lock()


def reset_alerts() -> None:
    """Forget which budgets this process alerted (a new database in this process: the tests)."""
    with _lock:
        _alerted.clear()


def alert_near_budgets(state: LimitState) -> list[Budget]:
    """The budgets of ``state`` at 80 % or more; the new ones are alerted in the background."""
    near = near_budgets(state)
    if not near:
        return near
    with _lock:
        fresh = [b for b in near if (state.bot_id, b.name, b.period) not in _alerted]
        _alerted.update((state.bot_id, b.name, b.period) for b in fresh)
    if fresh:
        threading.Thread(target=_record, args=(state, fresh), name="budget-alert", daemon=True).start()
    return near


def _record(state: LimitState, fresh: list[Budget]) -> None:
    try:
        with session_scope() as session:
            new = [b for b in fresh if record_alert(state.bot_id, b, session=session)]
    except Exception as exc:  # an alert must never break anything; the next process may try again
        logger.warning("Could not record a budget alert of bot %s (%s)", state.bot_id, type(exc).__name__)
        with _lock:
            _alerted.difference_update((state.bot_id, b.name, b.period) for b in fresh)
        return
    for budget in new:
        logger.warning("Bot %s has used %.0f %% of its %s budget (%s of %s); at 100 %% it stops making LLM calls",
                       state.bot_name, 100 * budget.ratio, budget.label, amount_text(budget.used), amount_text(budget.limit),
                       extra={"bot_id": state.bot_id})


def record_alert(bot_id: int, budget: Budget, *, session: Session) -> bool:
    """Record that ``budget`` of ``bot_id`` reached 80 % in its period; False when it was already recorded."""
    connection = session.connection()
    insert = _INSERTS[connection.dialect.name]
    stmt = insert(BudgetAlert.__table__).values(  # type: ignore[attr-defined]
        bot_id=bot_id, budget=budget.name, period=budget.period, used=budget.used, budget_limit=budget.limit,
        created_at=utcnow()).on_conflict_do_nothing()
    return bool(connection.execute(stmt).rowcount)


def amount_text(value: float) -> str:
    """A count or a cost as a person reads it: ``5,000`` or ``12.50``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"


def alerts_of(state: LimitState) -> list[dict[str, Any]]:
    """The budgets at 80 % or more, as ``usage --json`` and the web app show them."""
    return [{**b.as_dict(), "reached": b.used >= b.limit} for b in near_budgets(state)]
