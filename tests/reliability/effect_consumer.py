"""A consumer process for the exactly-once tests: ``python -m tests.reliability.effect_consumer``.

It runs the real runner (``run_consumers``) with one handler, registered here, that writes an
effect row through the transaction it is given, and first notes, on a connection of its own
(outside that transaction), that it started: starts may repeat (a lease lost, a SIGKILL),
effects must not. An effect row keeps the id of the top-level transaction that wrote it
(``txid``: the handler writes inside its savepoint, whose rows carry a subtransaction's xmin).
Configured by the environment: OUTBOX_DATABASE_URL (a superuser's), EFFECT_CONSUMER_ROLE (the
role it acts as), EFFECT_CONSUMER_LEASE_SECONDS.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from typing import Any

import psycopg

from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.entrypoints.bootstrap.consumers import run_consumers
from outbox.entrypoints.settings.tree import load_settings

CONSUMER = "shop.fulfilment"
EVENT_TYPE = "sales.order_placed"
TABLES = """
CREATE TABLE IF NOT EXISTS public.consumer_starts (
    delivery_id uuid NOT NULL, pid integer NOT NULL, started_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS public.consumer_effects (
    event_id uuid NOT NULL, delivery_id uuid NOT NULL, replay_round integer NOT NULL,
    pid integer NOT NULL, txid bigint NOT NULL DEFAULT txid_current()
);
"""


def registry(starts: psycopg.AsyncConnection) -> ConsumerRegistry:
    """The one handler: note the start, then write the effect in the delivery's transaction."""
    handlers = ConsumerRegistry()

    @handlers.register(CONSUMER, event_types=[EVENT_TYPE], versions=(1, 1))
    async def effect(event: DeliveredEvent, transaction: Any) -> None:
        await starts.execute(
            "INSERT INTO public.consumer_starts (delivery_id, pid) VALUES (%s, %s)",
            (event.delivery_id, os.getpid()),
        )
        await transaction.execute(
            "INSERT INTO public.consumer_effects (event_id, delivery_id, replay_round, pid)"
            " VALUES (%s, %s, %s, %s)",
            (event.event_id, event.delivery_id, event.replay_round, os.getpid()),
        )

    return handlers


async def main() -> None:
    """Run the consumer until SIGTERM (or SIGKILL)."""
    settings = load_settings(os.environ)
    url = os.environ["OUTBOX_DATABASE_URL"]
    lease = timedelta(seconds=float(os.environ.get("EFFECT_CONSUMER_LEASE_SECONDS", "2")))
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as starts:
        await run_consumers(
            settings,
            registry=registry(starts),
            role=os.environ["EFFECT_CONSUMER_ROLE"],
            url=url,
            lease=lease,
            batch_size=20,
        )


if __name__ == "__main__":
    asyncio.run(main())
