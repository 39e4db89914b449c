"""A configured provider can carry every send a worker makes at once: concurrency x batches.

Each of a worker's batches in flight (OUTBOX_WORKER_PARALLEL_BATCHES) sends up to
OUTBOX_WORKER_CONCURRENCY messages at a time; a provider client with fewer connections
makes the rest queue for one, and the wait counts
against the send's timeout, so a slow provider turns sends that never left into
INDETERMINATE timeouts (and spends their attempts).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest

from outbox.domain.channels import Channel
from outbox.entrypoints.bootstrap.providers import build_providers, close_providers
from outbox.entrypoints.bootstrap.worker import worker_services
from outbox.entrypoints.settings.tree import Settings, load_settings
from tests.fakes.clock import FixedClock
from tests.fakes.deliveries import email_delivery
from tests.integration.providers.http_stand_in import HttpStandIn, Received, Reply
from tests.integration.providers.impersonations import BREVO_KEY, Brevo

CONCURRENCY, LANES = 2, 2
pytestmark = pytest.mark.integration


@pytest.fixture
def gathering_brevo() -> Iterator[HttpStandIn]:
    """Brevo that answers nobody until CONCURRENCY x LANES requests are open at once."""
    barrier = threading.Barrier(CONCURRENCY * LANES, timeout=3)
    brevo = Brevo()

    def behaviour(request: Received) -> Reply:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return Reply(status=503, body={"code": "not_all_arrived"})
        return brevo(request)

    server = HttpStandIn(behaviour)
    server.start()
    yield server
    server.stop()


def _settings(server: HttpStandIn, **extra: str) -> Settings:
    return load_settings(
        {
            "OUTBOX_CHANNEL_EMAIL": "brevo",
            "OUTBOX_CHANNEL_SMS": "none",
            "OUTBOX_CHANNEL_WHATSAPP": "none",
            "OUTBOX_BREVO_API_KEY": BREVO_KEY,
            "OUTBOX_BREVO_BASE_URL": f"{server.url}/v3",
            "OUTBOX_BREVO_SENDER_EMAIL": "no-reply@example.com",
            "OUTBOX_WORKER_PARALLEL_BATCHES": str(LANES),
            **extra,
        },
        providers=True,
    )


async def _all_at_once(provider: object) -> int:
    """Send CONCURRENCY x LANES messages at once; return how many were accepted."""
    receipts = await asyncio.gather(
        *(
            provider.send(email_delivery(message_id=uuid.uuid4()))  # type: ignore[attr-defined]
            for _ in range(CONCURRENCY * LANES)
        ),
        return_exceptions=True,
    )
    return sum(1 for receipt in receipts if isinstance(receipt, str) and receipt)


async def test_every_lane_of_a_worker_can_send_at_once(
    clock: FixedClock, gathering_brevo: HttpStandIn
) -> None:
    settings = _settings(gathering_brevo, OUTBOX_WORKER_CONCURRENCY=str(CONCURRENCY))
    providers = build_providers(settings, clock=clock)
    try:
        accepted = await _all_at_once(providers[Channel.EMAIL])
    finally:
        await close_providers(providers)

    assert CONCURRENCY * LANES == accepted


async def test_the_worker_sizes_its_providers_for_its_concurrency_option(
    gathering_brevo: HttpStandIn, database_url: str, tmp_path
) -> None:
    """``outboxctl worker --concurrency N`` gives each provider room for N sends per lane."""
    settings = _settings(
        gathering_brevo,
        OUTBOX_DATABASE_URL=database_url,
        OUTBOX_WORKER_DB_ROLE="outbox_worker",
        OUTBOX_WORKER_CONCURRENCY="1",
        OUTBOX_DATA_DIR=str(tmp_path),
    )
    async with worker_services(settings, concurrency=CONCURRENCY) as services:
        accepted = await _all_at_once(services.dispatch.providers[Channel.EMAIL])

    assert CONCURRENCY * LANES == accepted
