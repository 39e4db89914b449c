"""Advisory-lock gates that stop one SQL function inside its own statement, row lock held.

A trigger (installed by the test, never by a migration) fires after every update of a
message row. When a gate is closed for the calling function (``claim``, ``record``,
``expire``, ``enqueue`` or ``cancel``, told apart by the statement's text), the trigger
waits for a shared advisory lock the test holds exclusively. The function has then changed
the row and holds its lock, but has not committed: exactly the moment a race would hit.
The test runs the other side, checks that it skipped or waited, and opens the gate.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import psycopg

INSTALL = """
CREATE SCHEMA IF NOT EXISTS reliability;
CREATE TABLE reliability.gates (caller text PRIMARY KEY, key bigint NOT NULL);
CREATE FUNCTION reliability.gate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_query text := pg_catalog.current_query();
    v_key bigint;
BEGIN
    SELECT g.key INTO v_key FROM reliability.gates AS g WHERE g.caller = CASE
        WHEN v_query ~ 'claim_messages' THEN 'claim'
        WHEN v_query ~ 'record_outcomes' THEN 'record'
        WHEN v_query ~ 'expire_messages' THEN 'expire'
        WHEN v_query ~ 'enqueue_message' THEN 'enqueue'
        WHEN v_query ~ 'cancel_by_subject' THEN 'cancel'
    END;
    IF v_key IS NOT NULL THEN
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(v_key);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_reliability_gate
    AFTER UPDATE ON outbox.messages
    FOR EACH ROW EXECUTE FUNCTION reliability.gate();
"""
WAITING = """
SELECT count(*) FROM pg_catalog.pg_locks AS l
JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
WHERE NOT l.granted AND a.datname = pg_catalog.current_database() AND l.locktype = ANY(%s)
"""
ROW_LOCKS = ["transactionid", "tuple"]
_keys = itertools.count(7_000_001)


class Gates:
    """Closes and opens gates on one database; one held connection per closed gate."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._held: dict[str, tuple[int, psycopg.AsyncConnection]] = {}

    async def install(self) -> None:
        """Install the trigger (superuser), or open every gate left in the table."""
        async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
            cursor = await conn.execute("SELECT to_regclass('reliability.gates')")
            found = await cursor.fetchone()
            if found is not None and found[0] is not None:
                await conn.execute("DELETE FROM reliability.gates")
            else:
                await conn.execute(INSTALL)

    async def close(self, caller: str) -> None:
        """From now on ``caller``'s updates of messages wait at the gate."""
        key = next(_keys)
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        await conn.execute(
            "INSERT INTO reliability.gates (caller, key) VALUES (%s, %s)", (caller, key)
        )
        self._held[caller] = (key, conn)

    async def open(self, caller: str) -> None:
        """Let whoever waits at ``caller``'s gate go on, and stop gating it."""
        key, conn = self._held.pop(caller)
        await conn.execute("DELETE FROM reliability.gates WHERE caller = %s", (caller,))
        await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        await conn.close()

    async def open_all(self) -> None:
        """Open every gate still closed (test clean-up)."""
        for caller in list(self._held):
            await self.open(caller)

    async def waiting(self, *, at_gate: int = 0, on_rows: int = 0, within: float = 10) -> None:
        """Wait until exactly these many backends wait at a gate and on row locks."""
        deadline = time.monotonic() + within
        async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
            while True:
                gate = await (await conn.execute(WAITING, (["advisory"],))).fetchone()
                rows = await (await conn.execute(WAITING, (ROW_LOCKS,))).fetchone()
                seen = (gate[0] if gate else 0, rows[0] if rows else 0)
                if seen == (at_gate, on_rows):
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"expected {at_gate} at a gate and {on_rows} on rows: {seen}"
                    )
                await asyncio.sleep(0.02)
