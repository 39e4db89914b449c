"""The webhook listener of ``outboxctl serve`` and ``outboxctl up``, wired."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.receipt_store import PostgresReceiptStore
from outbox.adapters.webhooks.sns import SnsPolicy, SnsVerifier
from outbox.application.delivery.record_receipts import RecordReceipts
from outbox.entrypoints.bootstrap.parts import ProcessParts
from outbox.entrypoints.http.server import Listener, bind
from outbox.entrypoints.http.webhooks import WebhookServices, create_webhook_app
from outbox.entrypoints.settings.reader import PREFIX, SettingsError
from outbox.entrypoints.settings.tree import Settings


def bind_webhook_socket(settings: Settings) -> socket.socket:
    """The webhook listener's socket; SettingsError naming OUTBOX_WEBHOOK_PORT if it is taken."""
    webhooks = settings.webhooks
    try:
        return bind(webhooks.host, webhooks.port)
    except OSError as error:
        raise SettingsError(
            PREFIX + "WEBHOOK_PORT",
            f"cannot listen on {webhooks.host}:{webhooks.port} ({error.strerror});"
            " choose a free port",
        ) from None


@contextlib.asynccontextmanager
async def webhook_listener(
    settings: Settings,
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    sock: socket.socket,
) -> AsyncIterator[Listener]:
    """The webhook listener over the API pool; its SNS client is closed on exit."""
    webhooks = settings.webhooks
    sns = None
    if webhooks.sns_topic_arns:
        sns = SnsVerifier(
            policy=SnsPolicy(
                topic_arns=frozenset(webhooks.sns_topic_arns),
                certificate_host=webhooks.sns_certificate_host,
                max_age=webhooks.sns_max_age,
            ),
            clock=parts.clock,
            ca_file=str(webhooks.sns_ca_file) if webhooks.sns_ca_file else None,
        )
    services = WebhookServices(
        record=RecordReceipts(store=PostgresReceiptStore(pool), telemetry=parts.telemetry),
        telemetry=parts.telemetry,
        sns=sns,
        brevo_token=webhooks.brevo_token,
        wasender_secret=webhooks.wasender_secret,
    )
    try:
        yield Listener(app=create_webhook_app(services), socket=sock)
    finally:
        if sns is not None:
            await sns.aclose()
