"""The webhook app over a real database (role identity_service) and a trusted SNS stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from outbox.adapters.postgres.pool import open_pool
from outbox.adapters.postgres.receipt_store import PostgresReceiptStore
from outbox.adapters.system.clock import SystemClock
from outbox.adapters.webhooks.sns import SnsPolicy, SnsVerifier
from outbox.application.delivery.record_receipts import RecordReceipts
from outbox.entrypoints.http.webhooks import WebhookServices, create_webhook_app
from outbox.entrypoints.observability import build_telemetry, new_registry
from tests.integration.receipts.sns_world import TOPIC, Signer, SnsStandIn, sns_world

BREVO_TOKEN = "brevo-webhook-token-for-tests"
WASENDER_SECRET = "wasender-webhook-secret-for-tests"


@pytest.fixture
def sns(tmp_path: Path) -> Iterator[tuple[SnsStandIn, Signer, Path]]:
    """The SNS stand-in, its signer and the CA file that makes it trusted."""
    with sns_world(tmp_path) as world:
        yield world


class Webhooks:
    """A client of the webhook app, and the registry its telemetry counts into."""

    def __init__(self, client: httpx.AsyncClient, registry: object) -> None:
        self.client = client
        self.registry = registry


@pytest.fixture
async def webhooks(
    database_url: str, sns: tuple[SnsStandIn, Signer, Path]
) -> AsyncIterator[Webhooks]:
    """The webhook app as the API process serves it, SNS pinned to the stand-in."""
    stand_in, _, ca_file = sns
    registry = new_registry()
    telemetry = build_telemetry(registry)
    pool = await open_pool(database_url, min_size=1, max_size=2, role="identity_service")
    verifier = SnsVerifier(
        policy=SnsPolicy(topic_arns=frozenset({TOPIC}), certificate_host="localhost"),
        clock=SystemClock(),
        ca_file=str(ca_file),
    )
    app = create_webhook_app(
        WebhookServices(
            record=RecordReceipts(store=PostgresReceiptStore(pool), telemetry=telemetry),
            telemetry=telemetry,
            sns=verifier,
            brevo_token=BREVO_TOKEN,
            wasender_secret=WASENDER_SECRET,
        )
    )
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://webhooks") as client:
            yield Webhooks(client, registry)
    finally:
        await verifier.aclose()
        await pool.close()
    assert stand_in.base.startswith("https://localhost:")
