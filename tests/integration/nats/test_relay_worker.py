"""``outboxctl worker --lanes events`` with OUTBOX_NATS_URL: the relay, end to end."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import nats
import pytest

from tests.events_sql import SALES, append, onboard, rows
from tests.integration.nats.conftest import make_stream
from tests.integration.providers.network import free_port
from tests.nats_server import NatsServer
from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

ACME = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")
GLOBEX = uuid.UUID("0190aaaa-0000-7000-8000-000000000002")
STATES = "SELECT state, count(*) FROM events.outbox_records GROUP BY state ORDER BY state"


@pytest.fixture
async def appended(connect_as) -> list[uuid.UUID]:
    """Twelve orders' events of two organizations, four per order, appended as `sales`."""
    async with connect_as() as conn:
        await onboard(conn)
    async with connect_as(SALES) as conn:
        return [
            await append(conn, organization, f"order-{n % 3}", payload={"n": n})
            for organization in (ACME, GLOBEX)
            for n in range(12)
        ]


def _drain(
    database_url: str, tmp_path: Path, nats_url: str, stream: str, *, retry: str = "0.2"
) -> dict[str, int]:
    result = run_outboxctl(
        "worker",
        "--drain",
        "--lanes",
        "events",
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
            "OUTBOX_DATA_DIR": str(tmp_path),
            "OUTBOX_LOG_FORMAT": "json",
            "OUTBOX_EVENTS_BATCH_SIZE": "5",
            "OUTBOX_RETRY_SCHEDULE_SECONDS": retry,
            "OUTBOX_NATS_URL": nats_url,
            "OUTBOX_NATS_STREAM": stream,
            "OUTBOX_NATS_SUBJECT_PREFIX": stream.lower(),
            "OUTBOX_NATS_ACK_TIMEOUT_SECONDS": "2",
        },
    )
    assert 0 == result.returncode, result.stderr[-2000:]
    assert "s3cret" not in result.stderr
    totals: dict[str, dict[str, int]] = json.loads(result.stdout)
    return totals["events"]


async def _stored(url: str, stream: str) -> list[nats.aio.msg.Msg]:
    client = await nats.connect(url)
    try:
        jetstream = client.jetstream()
        info = await jetstream.stream_info(stream)
        if not info.state.messages:
            return []
        return [
            await jetstream.get_msg(stream, sequence)
            for sequence in range(info.state.first_seq, info.state.last_seq + 1)
        ]
    finally:
        await client.close()


async def test_the_relay_publishes_every_event_to_jetstream_in_each_aggregates_order(
    appended, connect_as, database_url: str, tmp_path: Path, nats_server: NatsServer
) -> None:
    stream = f"R{uuid.uuid4().hex[:10]}"  # missing: the relay creates it at start

    totals = _drain(database_url, tmp_path, nats_server.url, stream)

    assert (24, 24) == (totals["claimed"], totals["published"])
    async with connect_as() as conn:
        assert [("published", 24)] == await rows(conn, STATES)
        appended_order = await rows(
            conn,
            "SELECT id, organization_id, aggregate_id FROM events.domain_events"
            " ORDER BY append_sequence",
        )
    stored = await _stored(nats_server.url, stream)
    assert {str(event_id) for event_id in appended} == {
        m.headers["Nats-Msg-Id"] for m in stored if m.headers
    }
    for organization in (ACME, GLOBEX):
        for aggregate in ("order-0", "order-1", "order-2"):
            expected = [str(i) for i, o, a in appended_order if (o, a) == (organization, aggregate)]
            in_stream = [
                m.headers["Nats-Msg-Id"]
                for m in stored
                if m.headers
                and m.headers["Outbox-Organization"] == str(organization)
                and m.headers["Outbox-Aggregate-Id"] == aggregate
            ]
            assert expected == in_stream


async def test_events_wait_unpublished_through_an_outage_and_go_out_once_it_ends(
    appended, connect_as, database_url: str, tmp_path: Path, nats_server: NatsServer
) -> None:
    """Recorded published only after the PubAck: with no broker, nothing is published, and
    no attempt is spent: the heads are released and the lane waits for the broker."""
    stream = f"R{uuid.uuid4().hex[:10]}"
    await make_stream(nats_server.url, stream)
    down = f"nats://relay:s3cret@127.0.0.1:{free_port()}"

    during = _drain(database_url, tmp_path, down, stream, retry="600")

    # Heads were offered and released unspent; the later events wait behind them. One batch
    # of five trips the breaker; another of the lane's batches in flight at once may have
    # claimed the sixth head before it tripped, and releases it the same way.
    assert during["claimed"] in (5, 6)
    assert (during["claimed"], 0, 0) == (
        during["released"],
        during["published"],
        during["retried"],
    )
    async with connect_as() as conn:
        assert [("pending", 24)] == await rows(conn, STATES)
        classes = await rows(
            conn, "SELECT DISTINCT failure_class, code FROM events.publication_attempts"
        )
    assert [("PROVIDER_SUSPENDED", "no_connection")] == classes
    async with connect_as() as conn:
        assert [(0,)] == await rows(
            conn, "SELECT DISTINCT attempt_count FROM events.outbox_records"
        )
    assert [] == await _stored(nats_server.url, stream)

    async with connect_as() as conn:  # the retry falls due
        await conn.execute("UPDATE events.outbox_records SET available_at = now()")
    after = _drain(database_url, tmp_path, nats_server.url, stream)

    assert 24 == after["published"]
    async with connect_as() as conn:
        assert [("published", 24)] == await rows(conn, STATES)
    assert 24 == len(await _stored(nats_server.url, stream))
