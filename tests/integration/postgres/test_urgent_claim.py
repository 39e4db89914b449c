"""The reserved slot's claim and wake-up, as the roles see them (0049_reserved_slot.sql)."""

from __future__ import annotations

import psycopg
import pytest

from tests.outbox_sql import CODE, LOW_NOTICE, NOTICE, NOTIFICATION, enqueue_as_producer

pytestmark = pytest.mark.integration

CLAIM_URGENT = "SELECT purpose, priority FROM outbox.claim_urgent_messages('w', %s, 60)"


async def test_the_urgent_claim_takes_high_priority_messages_only(connect_as) -> None:
    await enqueue_as_producer(connect_as, NOTIFICATION, LOW_NOTICE, NOTICE, CODE, NOTIFICATION)

    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute(CLAIM_URGENT, (10,))
        taken = await cursor.fetchall()
        cursor = await conn.execute(CLAIM_URGENT, (10,))
        again = await cursor.fetchall()
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT purpose, priority, state FROM outbox.messages ORDER BY created_at, id"
        )
        left = await cursor.fetchall()

    assert [("security_notice", 2), ("sign_up", 2)] == taken  # oldest first
    assert [] == again  # leased: not claimed twice
    assert [
        ("notification", 1, "pending"),
        ("security_notice", 0, "pending"),
        ("security_notice", 2, "leased"),
        ("sign_up", 2, "leased"),
        ("notification", 1, "pending"),
    ] == left


async def test_the_urgent_claim_refuses_bad_arguments_and_other_roles(connect_as) -> None:
    async with connect_as("outbox_worker") as conn:
        for arguments, refused in (
            ("'', 1, 60", "p_owner"),
            ("'w', 0, 60", "p_limit"),
            ("'w', 1, 0", "p_lease_seconds"),
        ):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match=refused):
                await conn.execute(f"SELECT * FROM outbox.claim_urgent_messages({arguments})")
    async with connect_as("outbox_producer") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            await conn.execute("SELECT * FROM outbox.claim_urgent_messages('w', 1, 60)")


@pytest.mark.parametrize(
    ("message", "wakes"),
    [(NOTIFICATION, False), (LOW_NOTICE, False), (NOTICE, True), (CODE, True)],
)
async def test_a_high_priority_enqueue_wakes_the_reserved_slot_and_nothing_else(
    connect_as, message: dict[str, object], wakes: bool
) -> None:
    """Every other message wakes the lane's batches; a code or notice wakes the slot only
    (0065): the batches' claims for it found nothing when the slot ran apart."""
    async with connect_as("outbox_worker") as listener:
        await listener.execute("LISTEN outbox_urgent")
        await listener.execute("LISTEN outbox_work")
        await enqueue_as_producer(connect_as, message)
        channels = [n.channel async for n in listener.notifies(timeout=0.5)]

    expected = ["outbox_urgent"] if wakes else ["outbox_work"]
    assert expected == channels
