from grobot.core.db import session_scope
from grobot.core.services import bots


def test_create_and_list_bot_on_both_databases(any_db_env):
    with session_scope() as session:
        bots.create_bot(session=session, name="alpha", personality="kind")
    with session_scope(readonly=True) as session:
        names = [b.name for b in bots.list_bots(session=session)]
    assert names == ["alpha"]
