"""Batches leave a fresh code to the reserved slot in another process, for a moment only.

``outbox.claim_messages``' ``p_leave_urgent_seconds`` (0064_batches_leave_codes_to_the_slot.sql),
as the worker's role calls it: a high-priority message due for less than that is left out of
the fair slots and of the scan by priority; one due for longer is anybody's again.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.outbox_sql import CODE, NOTICE, NOTIFICATION, enqueue_as_producer

pytestmark = pytest.mark.integration

CLAIM = "SELECT purpose, priority FROM outbox.claim_messages('w', %s, 60, %s)"
CLAIM_DEFAULT = "SELECT purpose, priority FROM outbox.claim_messages('w', %s, 60)"
CLAIM_URGENT = "SELECT purpose FROM outbox.claim_urgent_messages('w', 10, 60)"


async def _claim(connect_as, query: str, *params: object) -> list[tuple[object, ...]]:
    async with connect_as("outbox_worker") as conn:
        return await (await conn.execute(query, params)).fetchall()


async def test_a_batch_leaves_fresh_codes_to_the_slot_even_in_its_fair_slots(connect_as) -> None:
    # The codes are the oldest rows: a batch's fair slots (one in ten) take the oldest due
    # rows of any priority, and they too leave a fresh code out.
    await enqueue_as_producer(connect_as, CODE, NOTICE, *[NOTIFICATION] * 12)

    batch = await _claim(connect_as, CLAIM, 10, 60.0)
    slot = await _claim(connect_as, CLAIM_URGENT)

    assert [("notification", 1)] * 10 == batch
    assert [("sign_up",), ("security_notice",)] == slot


async def test_a_code_due_for_longer_than_the_grace_is_the_batches_again(connect_as) -> None:
    """A slot that is down or behind strands no code: past the grace the batches take it."""
    await enqueue_as_producer(connect_as, NOTIFICATION, CODE)
    async with connect_as() as conn:
        await conn.execute("SELECT pg_sleep(0.3)")

    batch = await _claim(connect_as, CLAIM, 10, 0.2)

    assert [("sign_up", 2), ("notification", 1)] == batch  # by priority, as always


async def test_without_a_grace_the_claim_takes_codes_first_as_before(connect_as) -> None:
    await enqueue_as_producer(connect_as, NOTIFICATION, CODE)

    assert [("sign_up", 2), ("notification", 1)] == await _claim(connect_as, CLAIM_DEFAULT, 10)


@pytest.mark.parametrize("grace", [-1.0, None])
async def test_a_negative_or_missing_grace_is_refused_naming_it(connect_as, grace) -> None:
    await enqueue_as_producer(connect_as, CODE)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_leave_urgent_seconds"):
        await _claim(connect_as, CLAIM, 10, grace)
    assert [("sign_up", 2)] == await _claim(connect_as, CLAIM_DEFAULT, 10)  # nothing was taken
