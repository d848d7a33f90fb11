"""What costs and budgets add per message, measured apart from the rest of the fleet.

    .venv/bin/python bench/costs.py [--n 2000]

Prints, on a throwaway SQLite database: the usage-limits read of a message (today's counters
alone, as before budgets; then with this month's totals, costs and the budgets) and the check
with the 80 % alert test; the cost estimate of a message's LLM calls (a price cache lookup per
call); and the write of a message's calls with their costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(fn, n: int) -> float:
    """Median microseconds of ``fn()`` over ``n`` runs (after 50 warm-up runs)."""
    for _ in range(50):
        fn()
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="grobot-bench-costs-")
    os.environ.update(DATABASE_URL=f"sqlite:///{tmp}/grobot.db", GROBOT_DATA_DIR=tmp)

    from sqlalchemy import bindparam, select

    from grobot.core import migrations
    from grobot.core.db import session_scope
    from grobot.core.limits import check, near_budgets
    from grobot.core.models import Bot, Setting, UsageDaily, UserUsageDaily
    from grobot.core.services import bots, costs, llm_calls, usage_accounting, usage_limits
    from grobot.core.services.app_settings import DAILY_LIMIT_KEYS

    migrations.upgrade()
    with session_scope() as session:
        bot_id = bots.create_bot(session=session, name="bench", monthly_cost_limit=1000.0, daily_call_limit=10**6).id
        for day in range(1, 25):  # a month of counters
            usage_accounting.add_llm_usage(session=session, bot_id=bot_id, calls=100, tokens_in=10_000,
                                           tokens_out=1000, errors=0, cost=1.0,
                                           now=usage_accounting.utcnow().replace(day=day))
    usage = (UsageDaily.bot_id == bindparam("bot_id")) & (UsageDaily.day == bindparam("day"))
    user = ((UserUsageDaily.bot_id == bindparam("bot_id")) & (UserUsageDaily.day == bindparam("day"))
            & (UserUsageDaily.discord_user_id == bindparam("user_id")))
    daily_only = select(  # the query of the daily limits alone (before budgets)
        select(UsageDaily.tokens_in + UsageDaily.tokens_out).where(usage).scalar_subquery(),
        select(UsageDaily.calls).where(usage).scalar_subquery(),
        select(UserUsageDaily.messages).where(user).scalar_subquery(),
        *[select(Setting.value).where(Setting.key == key).scalar_subquery() for key in DAILY_LIMIT_KEYS])
    day = usage_accounting.utc_day()
    calls = [SimpleNamespace(role=r, provider=p, model=m, tokens_in=900, tokens_out=40, ttft_ms=5.0, latency_ms=50.0,
                             error="")
             for r, p, m in (("tool_identifier", "openai", "gpt-4o-mini"), ("synthesizer", "openai", "gpt-4o-mini"),
                             ("archivist", "ollama", "llama3.2"))]

    with session_scope(readonly=True) as session:
        bot = session.get(Bot, bot_id)
        conn = session.connection()
        before = timed(lambda: conn.execute(daily_only, {"bot_id": bot_id, "day": day, "user_id": "42"}).one(), args.n)
        params = {"bot_id": bot_id, "day": day, "user_id": "42", "month_first": day[:8] + "01"}
        query = timed(lambda: conn.execute(usage_limits._state_query(), params).one(), args.n)
        after = timed(lambda: usage_limits.read_state(session=session, bot=bot, discord_user_id="42"), args.n)
        state = usage_limits.read_state(session=session, bot=bot, discord_user_id="42")
        checking = timed(lambda: (check(state), near_budgets(state)), args.n)
        rows = [{"provider": c.provider, "model": c.model, "tokens_in": c.tokens_in, "tokens_out": c.tokens_out}
                for c in calls]
        estimating = timed(lambda: costs.estimate(rows, session=session), args.n)

    def write() -> None:
        with session_scope() as session:
            llm_calls.insert_calls(session=session, bot_id=bot_id, run_id=None, records=calls)

    writing = timed(write, max(200, args.n // 10))
    print(f"usage-limits query per message:  {before:7.1f} us daily limits alone -> {query:7.1f} us with the month, "
          f"costs and budgets (+{query - before:.1f} us)")
    print(f"usage-limits read (query + state + 80 % test): {after:7.1f} us")
    print(f"limit check + 80 % alert test:   {checking:7.1f} us")
    print(f"cost estimate of 3 LLM calls:    {estimating:7.1f} us")
    print(f"write of 3 LLM calls with costs: {writing:7.1f} us (one transaction: the calls and the daily counters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
