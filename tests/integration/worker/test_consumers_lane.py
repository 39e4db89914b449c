"""The worker's consumers lane: the handlers it is given run with the consumers' role."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from outbox.application.events.consumer_handlers import ConsumerRegistry
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.entrypoints.bootstrap.consumers import run_consumers
from outbox.entrypoints.bootstrap.worker_process import run_worker
from outbox.entrypoints.settings.tree import load_settings
from tests.consumer_rows import consumer_role, define_type, publish

pytestmark = pytest.mark.integration

CONSUMER = "shop.fulfilment"


async def test_the_consumers_lane_handles_the_deliveries_and_drains(
    connect_as, database_url: str, tmp_path: Path
):
    async with connect_as() as owner, consumer_role(owner, "shop") as role:
        await define_type(owner, "sales.order_placed")
        await owner.execute(f"SELECT events.register_consumer('{CONSUMER}', 'shop')")
        await owner.execute(f"SELECT events.subscribe('{CONSUMER}', 'sales.order_placed', 1, 1)")
        await owner.execute("CREATE TABLE public.handled (event_id uuid NOT NULL)")
        await owner.execute(f"GRANT INSERT ON public.handled TO {role}")
        published = [
            (
                await publish(
                    owner,
                    organization_id=uuid.uuid4(),
                    event_type="sales.order_placed",
                    aggregate=("o", str(n)),
                )
            ).event_id
            for n in range(5)
        ]
        registry = ConsumerRegistry()

        @registry.register(CONSUMER, event_types=["sales.order_placed"])
        async def handle(event: DeliveredEvent, transaction: Any) -> None:
            await transaction.execute(
                "INSERT INTO public.handled (event_id) VALUES (%s)", (event.event_id,)
            )

        settings = load_settings(
            {
                "OUTBOX_DATABASE_URL": database_url,
                "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
                "OUTBOX_API_DB_ROLE": role,  # the consumers' role: the API's by default
                "OUTBOX_DATA_DIR": str(tmp_path),
                "OUTBOX_WORKER_LANES": "consumers",
            }
        )
        totals = await run_worker(settings, drain=True, consumers=registry)
        cursor = await owner.execute("SELECT event_id FROM public.handled")
        handled = sorted(row[0] for row in await cursor.fetchall())

    assert ["consumers"] == list(totals)
    assert (5, 5) == (totals["consumers"].claimed, totals["consumers"].completed)
    assert sorted(published) == handled


async def _handled(owner, event_id: uuid.UUID, *, within: float) -> bool:
    """Whether ``event_id``'s effect row is there within ``within`` seconds (a generous bound,
    not a timing assert: the poll interval is far longer)."""
    deadline = asyncio.get_running_loop().time() + within
    while asyncio.get_running_loop().time() < deadline:
        cursor = await owner.execute(
            "SELECT count(*) FROM public.handled WHERE event_id = %s", (event_id,)
        )
        row = await cursor.fetchone()
        if row is not None and row[0] > 0:
            return True
        await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize("runner", ["lane", "consume"])
async def test_a_published_event_wakes_the_consumers_before_their_poll(
    connect_as, database_url: str, tmp_path: Path, runner: str
):
    async with connect_as() as owner, consumer_role(owner, "shop") as role:
        await define_type(owner, "sales.order_placed")
        await owner.execute(f"SELECT events.register_consumer('{CONSUMER}', 'shop')")
        await owner.execute(f"SELECT events.subscribe('{CONSUMER}', 'sales.order_placed', 1, 1)")
        await owner.execute("CREATE TABLE public.handled (event_id uuid NOT NULL)")
        await owner.execute(f"GRANT INSERT ON public.handled TO {role}")
        registry = ConsumerRegistry()

        @registry.register(CONSUMER, event_types=["sales.order_placed"])
        async def handle(event: DeliveredEvent, transaction: Any) -> None:
            await transaction.execute(
                "INSERT INTO public.handled (event_id) VALUES (%s)", (event.event_id,)
            )

        settings = load_settings(
            {
                "OUTBOX_DATABASE_URL": database_url,
                "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
                "OUTBOX_API_DB_ROLE": role,
                "OUTBOX_DATA_DIR": str(tmp_path),
                "OUTBOX_WORKER_LANES": "consumers",
                "OUTBOX_WORKER_POLL_SECONDS": "60",
            }
        )
        running = asyncio.create_task(
            run_worker(settings, consumers=registry)
            if runner == "lane"
            else run_consumers(settings, registry=registry, handle_signals=False)
        )
        try:
            # The first is found by a claim, whenever it runs; once it is handled the runner
            # is idle for 60 s, so only the fan-out's notification brings the second in time.
            first = await publish(
                owner, organization_id=uuid.uuid4(), event_type="sales.order_placed"
            )
            assert await _handled(owner, first.event_id, within=30)
            second = await publish(
                owner, organization_id=uuid.uuid4(), event_type="sales.order_placed"
            )
            assert await _handled(owner, second.event_id, within=10)
        finally:
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
