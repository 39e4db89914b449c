"""A real worker drains what producers enqueued: each message once, envelopes gone, history kept."""

from __future__ import annotations

import asyncio
import io
import json
import re
from uuid import UUID

import psycopg
import pytest
import structlog

from outbox.application.delivery.batch import BatchTally
from outbox.application.delivery.ports import Delivery
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.entrypoints.bootstrap.worker import worker_services
from outbox.entrypoints.observability import configure_logging
from outbox.entrypoints.settings.tree import load_settings
from outbox.entrypoints.worker.loop import WorkerLoop
from tests.fakes.providers import RecordingProvider
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.worker.conftest import Enqueue

pytestmark = pytest.mark.integration


async def _drain(env: dict[str, str], provider: RecordingProvider, *, batch_size: int = 50) -> int:
    settings = load_settings(env)
    async with worker_services(
        settings, batch_size=batch_size, providers={Channel.EMAIL: provider}
    ) as services:
        loop = WorkerLoop(
            totals=BatchTally(),
            dispatch=services.dispatch,
            wait_for_work=services.store.wait_for_work,
            telemetry=RecordingTelemetry(),
            poll_interval=settings.worker.poll_interval,
            drain=True,
        )
        return (await loop.run()).claimed


def _code_in(delivery: Delivery) -> str:
    match = re.search(r"\b[0-9]{6}\b", delivery.content.text)
    assert match is not None
    return match.group(0)


async def _scalar(database_url: str, query: str) -> object:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        row = await (await conn.execute(query)).fetchone()
        assert row is not None
        return row[0]


async def test_a_worker_delivers_every_message_once_and_wipes_every_envelope(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue
) -> None:
    codes = await enqueue(120)
    provider = RecordingProvider(provider_name="recording")
    assert 120 == await _drain(worker_env, provider)
    delivered = {d.message_id: _code_in(d) for d in provider.sent}
    assert codes == delivered
    assert 120 == len(provider.sent)
    assert 0 == await _scalar(database_url, "SELECT count(*) FROM outbox.envelopes")
    assert 120 == await _scalar(
        database_url, "SELECT count(*) FROM outbox.messages WHERE state = 'published'"
    )
    assert 120 == await _scalar(database_url, "SELECT count(*) FROM outbox.attempts")


async def test_two_workers_side_by_side_claim_disjoint_work(
    worker_env: dict[str, str], enqueue: Enqueue
) -> None:
    codes = await enqueue(300)
    first, second = RecordingProvider(), RecordingProvider()
    await asyncio.gather(
        _drain(worker_env, first, batch_size=10), _drain(worker_env, second, batch_size=10)
    )
    first_ids = {d.message_id for d in first.sent}
    second_ids = {d.message_id for d in second.sent}
    assert set() == first_ids & second_ids
    assert set(codes) == first_ids | second_ids
    assert 300 == len(first.sent) + len(second.sent)


async def test_no_table_holds_a_plaintext_code_after_a_drain(
    database_url: str, worker_env: dict[str, str], enqueue: Enqueue
) -> None:
    codes = await enqueue(40)
    codes |= await enqueue(5, destination="refused@example.com")
    provider = RecordingProvider()
    provider.failures_for["refused@example.com"] = provider.refuse(FailureClass.REJECTED, "550")
    await _drain(worker_env, provider)
    assert 40 == len(provider.sent)  # published and dead-lettered rows are both scanned
    assert [] == await _rows_containing(database_url, set(codes.values()))


async def _rows_containing(database_url: str, needles: set[str]) -> list[str]:
    """Every (table.column) in our schemas whose text holds one of ``needles``."""
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        columns = await (
            await conn.execute(
                """
                SELECT table_schema, table_name, column_name
                FROM information_schema.columns
                WHERE table_schema IN ('outbox', 'identity')
                  AND data_type IN ('text', 'character varying', 'jsonb', 'json', 'bytea')
                """
            )
        ).fetchall()
        assert columns
        # A short code may occur by chance inside a UUID or a hex string, never as a word.
        pattern = re.compile(
            "|".join(rf"(?<![0-9A-Za-z]){re.escape(needle)}(?![0-9A-Za-z])" for needle in needles)
        )
        hits = []
        for schema, table, column in columns:
            rows = await (
                await conn.execute(
                    psycopg.sql.SQL("SELECT {}::text FROM {}.{}").format(
                        psycopg.sql.Identifier(column),
                        psycopg.sql.Identifier(schema),
                        psycopg.sql.Identifier(table),
                    )
                )
            ).fetchall()
            hits += [
                f"{schema}.{table}.{column}" for (value,) in rows if value and pattern.search(value)
            ]
        return hits


async def test_a_provider_error_quoting_secrets_leaves_them_out_of_every_log_line(
    worker_env: dict[str, str], enqueue: Enqueue
) -> None:
    codes = await enqueue(3, destination="carol.secret@example.com")
    bearer = "Bearer sk_live_7f3a9c2e1b"
    provider = RecordingProvider()
    provider.fail_next(
        *(
            RuntimeError(f"send failed for carol.secret@example.com code {code} {bearer}")
            for code in codes.values()
        )
    )
    out = io.StringIO()
    configure_logging("json", "debug", stream=out)
    try:
        await _drain_with_real_telemetry(worker_env, provider)
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert any(line["event"] == "delivery.unexpected_error" for line in lines)
    text = out.getvalue()
    for secret in [
        *codes.values(),
        "carol.secret@example.com",
        "sk_live_7f3a9c2e1b",
        "send failed",
    ]:
        assert secret not in text


async def _drain_with_real_telemetry(env: dict[str, str], provider: RecordingProvider) -> None:
    settings = load_settings(env)
    async with worker_services(settings, providers={Channel.EMAIL: provider}) as services:
        loop = WorkerLoop(
            totals=BatchTally(),
            dispatch=services.dispatch,
            wait_for_work=services.store.wait_for_work,
            telemetry=services.telemetry,
            poll_interval=settings.worker.poll_interval,
            drain=True,
        )
        await loop.run()


async def test_the_message_ids_delivered_are_the_ones_enqueued(
    worker_env: dict[str, str], enqueue: Enqueue
) -> None:
    codes = await enqueue(5)
    provider = RecordingProvider()
    await _drain(worker_env, provider)
    assert sorted(codes) == sorted(UUID(str(d.message_id)) for d in provider.sent)
