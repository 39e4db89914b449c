"""Retention against real PostgreSQL (issue 13 finding 11): published rows go 30 days
after publication, dead letters 90 days after dead-lettering, live rows never, and one purge
runs at a time under its advisory lock.

The windows are checked an hour either side of each edge, through ``outboxctl sweep retention``
with its default settings (settings → policy → SQL), so a changed default, a swapped window or
a wrong comparison fails here; the lock is held from outside to show the sweep yields to it.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import attrs
import pytest

from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.application.delivery.sweeps import retention_sweep
from outbox.domain.delivery.retention import RetentionPolicy
from tests.fakes.telemetry import RecordingTelemetry
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ENQUEUE = (
    "SELECT outbox.enqueue_message(%s, 'notification', 'email', 'person@example.com', NULL,"
    " 'hello')"
)
# A final row is immutable once final (trigger messages_final_is_immutable), so it is made
# final and backdated in the one update that ends it.
PUBLISH = (
    "UPDATE outbox.messages SET state = 'published', attempt_count = 1,"
    " published_at = now() - %s::interval WHERE id = %s"
)
DEAD_LETTER = (
    "UPDATE outbox.messages SET state = 'dead_lettered', attempt_count = 1,"
    " dead_letter_reason = 'REJECTED', dead_lettered_at = now() - %s::interval WHERE id = %s"
)
ATTEMPT = (
    "INSERT INTO outbox.attempts (message_id, attempt, counted, outcome, failure_class, code,"
    " provider, provider_message_id, recorded_at) VALUES (%s, 1, true, %s, %s, '', 'test', '',"
    " now())"
)
PURGE_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('outbox.purge_messages', 0))"
EXPIRY_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('outbox.expire_messages', 0))"


@attrs.frozen
class Rows:
    """The ids of the rows each side of every retention edge."""

    gone: frozenset[uuid.UUID]
    kept: frozenset[uuid.UUID]


async def _message(connect_as, state: str, age: str) -> uuid.UUID:
    message_id = uuid.uuid4()
    async with connect_as() as conn:
        await conn.execute(ENQUEUE, (message_id,))
        if state == "published":
            await conn.execute(PUBLISH, (age, message_id))
            await conn.execute(ATTEMPT, (message_id, "published", None))
        elif state == "dead_lettered":
            await conn.execute(DEAD_LETTER, (age, message_id))
            await conn.execute(ATTEMPT, (message_id, "dead_letter", "REJECTED"))
        else:
            await conn.execute(
                "UPDATE outbox.messages SET created_at = now() - %s::interval,"
                " available_at = now() - %s::interval WHERE id = %s",
                (age, age, message_id),
            )
    return message_id


async def _rows_around_the_edges(connect_as) -> Rows:
    gone = {
        await _message(connect_as, "published", "30 days 1 hour"),
        await _message(connect_as, "published", "89 days"),
        await _message(connect_as, "dead_lettered", "90 days 1 hour"),
        await _message(connect_as, "dead_lettered", "400 days"),
    }
    kept = {
        await _message(connect_as, "published", "29 days 23 hours"),
        await _message(connect_as, "published", "1 minute"),
        # Past the published window but not the dead letters' one: the windows are distinct.
        await _message(connect_as, "dead_lettered", "30 days 1 hour"),
        await _message(connect_as, "dead_lettered", "89 days 23 hours"),
        # Live rows are never purged, however old.
        await _message(connect_as, "pending", "400 days"),
    }
    return Rows(gone=frozenset(gone), kept=frozenset(kept))


async def _remaining(connect_as) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
    """(ids of the messages left, ids with an attempt row left)."""
    async with connect_as() as conn:
        messages = await (await conn.execute("SELECT id FROM outbox.messages")).fetchall()
        attempts = await (await conn.execute("SELECT message_id FROM outbox.attempts")).fetchall()
    return {row[0] for row in messages}, {row[0] for row in attempts}


def _sweep_retention(database_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    variables = {
        "OUTBOX_DATABASE_URL": database_url,
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_DATA_DIR": str(tmp_path),
    }
    return run_outboxctl("sweep", "retention", variables=variables)


async def test_the_default_windows_are_30_days_published_and_90_days_dead_lettered(
    connect_as, database_url, tmp_path
):
    rows = await _rows_around_the_edges(connect_as)

    result = _sweep_retention(database_url, tmp_path)

    assert 0 == result.returncode, result.stderr
    assert len(rows.gone) == json.loads(result.stdout)["retention"]
    messages, attempts = await _remaining(connect_as)
    assert rows.kept == messages
    assert rows.gone.isdisjoint(attempts)  # the history goes with its message


async def test_the_sweep_yields_while_another_holds_its_lock(connect_as, dispatch_store):
    rows = await _rows_around_the_edges(connect_as)
    purge = retention_sweep(dispatch_store, RecordingTelemetry())

    async with connect_as(autocommit=False) as other:
        await other.execute(PURGE_LOCK)
        assert 0 == await purge()
        assert rows.gone | rows.kept == (await _remaining(connect_as))[0]
        await other.rollback()

    assert len(rows.gone) == await purge()
    assert rows.kept == (await _remaining(connect_as))[0]


async def test_the_expiry_sweeps_lock_does_not_stop_the_retention_sweep(
    connect_as, dispatch_store: PostgresDispatchStore
):
    rows = await _rows_around_the_edges(connect_as)

    async with connect_as(autocommit=False) as other:
        await other.execute(EXPIRY_LOCK)
        purged = await dispatch_store.purge(retention=RetentionPolicy(), limit=100)
        await other.rollback()

    assert len(rows.gone) == purged


async def test_two_purges_at_once_one_runs_and_the_other_returns_at_once(connect_as):
    rows = await _rows_around_the_edges(connect_as)
    purge = "SELECT outbox.purge_messages('30 days', '90 days', 100)"

    async with connect_as("outbox_worker", autocommit=False) as first:
        assert [(len(rows.gone),)] == await (await first.execute(purge)).fetchall()
        async with connect_as("outbox_worker") as second:
            # Without the lock it would wait on the first one's rows: fail fast instead.
            await second.execute("SET statement_timeout = '5s'")
            assert [(0,)] == await (await second.execute(purge)).fetchall()
        await first.commit()

    assert rows.kept == (await _remaining(connect_as))[0]
