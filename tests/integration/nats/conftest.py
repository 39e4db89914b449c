"""A private JetStream server per test session, a fresh stream per test, and claimed events."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from outbox.adapters.nats.streams import StreamSpec, ensure_stream
from outbox.application.events.ports import ClaimedEvent
from tests.nats_server import NatsServer


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """One nats-server -js for the whole session (each test uses its own stream)."""
    server = NatsServer(tmp_path_factory.mktemp("nats"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def private_nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A nats-server of this test alone, which it may stop and start again."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def stream_name() -> str:
    """A stream name and subject prefix no other test uses."""
    return f"T{uuid.uuid4().hex[:12]}"


async def make_stream(
    url: str,
    name: str,
    *,
    duplicate_window: timedelta = timedelta(minutes=2),
    storage: str = "memory",
) -> None:
    """Create stream ``name`` capturing ``<name lowercased>.>``."""
    client = await nats.connect(url)
    try:
        await ensure_stream(
            client.jetstream(),
            StreamSpec(
                name=name,
                subjects=(f"{name.lower()}.>",),
                duplicate_window=duplicate_window,
                storage=storage,
            ),
        )
    finally:
        await client.close()


@pytest.fixture
async def jetstream(nats_server: NatsServer) -> AsyncIterator[tuple[Client, JetStreamContext]]:
    """A reader's connection to the session's server."""
    client = await nats.connect(nats_server.url)
    yield client, client.jetstream()
    await client.close()


MakeEvent = Callable[..., ClaimedEvent]
ACME = uuid.UUID("0190aaaa-0000-7000-8000-000000000001")


@pytest.fixture
def make_event() -> MakeEvent:
    """A claimed event of ACME's, as the events outbox hands it to a target."""
    counter = iter(range(1, 1_000_000))

    def make(aggregate_id: str = "order-1", **changes: object) -> ClaimedEvent:
        now = datetime.now(UTC)
        sequence = next(counter)
        fields: dict[str, object] = {
            "record_id": uuid.uuid4(),
            "event_id": uuid.uuid4(),
            "organization_id": ACME,
            "event_type": "sales.order_placed",
            "contract_version": 2,
            "aggregate_type": "order",
            "aggregate_id": aggregate_id,
            "append_sequence": sequence,
            "payload": {"total": sequence, "currency": "EUR"},
            "occurred_at": now,
            "appended_at": now,
            "attempts": 0,
            "lease_token": uuid.uuid4(),
            "lease_expires_at": now + timedelta(minutes=1),
        }
        fields.update(changes)
        return ClaimedEvent(**fields)  # type: ignore[arg-type]

    return make
