"""The receipt functions (0030): correlation, dedupe, the forward-only delivery state,
suppression at claim time, insert-only receipts and who may call what."""

from __future__ import annotations

import itertools
import uuid

import pytest
from psycopg import errors

from outbox.domain.delivery.delivery_states import DeliveryState, advance, fold
from outbox.domain.delivery.receipts import ReceiptEvent
from tests.integration.receipts.receipt_sql import claim, enqueue, message_state, publish, record

pytestmark = pytest.mark.integration

MOVING = ("delivered", "failed", "bounced", "complained")


async def test_a_receipt_advances_its_message_and_a_duplicate_changes_nothing(connect_as):
    async with connect_as() as conn:
        message_id = await publish(conn, "ana@example.com", "ses", "ses-1")
        first = await record(conn, event_id="sns-1", provider_message_id="ses-1", event="delivered")
        again = await record(conn, event_id="sns-1", provider_message_id="ses-1", event="delivered")
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.receipts WHERE message_id = %s", (message_id,)
        )
        count = await cursor.fetchone()
    assert (message_id, False, "delivered", False) == first[1:]
    assert (first[0], message_id, True, "delivered", False) == again
    assert (1,) == count


async def test_a_receipt_naming_no_sent_message_is_kept_and_changes_nothing(connect_as):
    async with connect_as() as conn:
        await publish(conn, "ana@example.com", "ses", "ses-1")
        # Same id through another provider, and an id nobody recorded.
        other = await record(
            conn, provider="brevo", event_id="b-1", provider_message_id="ses-1", event="bounced"
        )
        unknown = await record(
            conn, event_id="sns-2", provider_message_id="nobody", event="bounced"
        )
        cursor = await conn.execute(
            "SELECT count(*) FILTER (WHERE message_id IS NULL), (SELECT count(*) FROM"
            " outbox.suppressions), (SELECT count(*) FROM outbox.delivery_states)"
            " FROM outbox.receipts"
        )
        counts = await cursor.fetchone()
    assert (None, False, None, False) == other[1:]
    assert (None, False, None, False) == unknown[1:]
    assert (2, 0, 0) == counts


async def test_the_sql_order_is_the_domain_order_for_every_permutation(connect_as):
    """Every order of every event, folded by outbox.delivery_state_after and by the domain."""
    events = [event.value for event in ReceiptEvent]
    async with connect_as() as conn:
        for order in itertools.permutations(events):
            state: str | None = None
            for event in order:
                cursor = await conn.execute(
                    "SELECT outbox.delivery_state_after(%s, %s)", (state, event)
                )
                row = await cursor.fetchone()
                assert row is not None
                state = row[0]
            assert fold(ReceiptEvent(e) for e in order).value == state


async def test_receipts_in_any_order_and_repeated_converge_on_one_state(connect_as):
    """Every permutation of the four moving events, each delivered twice, through
    outbox.record_receipt: the stored state is the domain's fold, the same every time."""
    finals = set()
    async with connect_as() as conn:
        for number, order in enumerate(itertools.permutations(MOVING)):
            provider_id = f"ses-{number}"
            message_id = await publish(conn, f"p{number}@example.com", "ses", provider_id)
            for event in (*order, *reversed(order)):
                await record(
                    conn,
                    event_id=f"{provider_id}-{event}",
                    provider_message_id=provider_id,
                    event=event,
                )
            cursor = await conn.execute(
                "SELECT state FROM outbox.delivery_states WHERE message_id = %s", (message_id,)
            )
            row = await cursor.fetchone()
            assert row is not None
            assert fold(ReceiptEvent(e) for e in order).value == row[0]
            finals.add(row[0])
    assert {DeliveryState.COMPLAINED.value} == finals


def test_the_domain_never_moves_a_state_backwards():
    for state, event in itertools.product(DeliveryState, ReceiptEvent):
        assert advance(state, event).rank >= state.rank
        assert advance(advance(state, event), event) == advance(state, event)


async def test_a_hard_bounce_suppresses_the_destination_until_lifted(connect_as):
    async with connect_as() as conn:
        await publish(conn, "gone@example.com", "ses", "ses-1")
        row = await record(conn, event_id="sns-1", provider_message_id="ses-1", event="bounced")
        assert (False, "bounced", True) == row[2:]
        # The next message, a code, is dead-lettered at claim and its envelope dropped; one to
        # another address is claimed as usual.
        suppressed = await enqueue(conn, "gone@example.com", secret=True)
        other = await enqueue(conn, "here@example.com")
        claimed = [r[0] for r in await claim(conn)]
        assert [other] == claimed
        assert ("dead_lettered", "suppressed", False) == await message_state(conn, suppressed)

        cursor = await conn.execute(
            "SELECT id FROM outbox.lift_suppression(NULL, NULL, 'gone@example.com', 'fixed')"
        )
        assert await cursor.fetchone() is not None
        after = await enqueue(conn, "gone@example.com")
        assert [after] == [r[0] for r in await claim(conn)]
        cursor = await conn.execute(
            "SELECT action, actor_id, reason FROM outbox.suppression_audit ORDER BY id"
        )
        audit = await cursor.fetchall()
    assert [("add", None, "ses receipt bounced"), ("lift", None, "fixed")] == audit


async def test_a_soft_bounce_suppresses_nothing_and_a_complaint_does(connect_as):
    async with connect_as() as conn:
        await publish(conn, "full@example.com", "ses", "ses-1")
        await publish(conn, "angry@example.com", "ses", "ses-2")
        soft = await record(conn, event_id="e1", provider_message_id="ses-1", event="soft_bounced")
        spam = await record(conn, event_id="e2", provider_message_id="ses-2", event="complained")
        cursor = await conn.execute("SELECT destination_masked, cause FROM outbox.suppressions")
        rows = await cursor.fetchall()
    assert ("accepted", False) == soft[3:]
    assert ("complained", True) == spam[3:]
    assert [("a***@example.com", "complaint")] == rows


async def test_a_late_receipt_does_not_undo_a_lift(connect_as):
    async with connect_as() as conn:
        await publish(conn, "gone@example.com", "ses", "ses-1")
        await conn.execute(
            "SELECT * FROM outbox.add_suppression(NULL, NULL, 'gone@example.com', 'email', 'x')"
        )
        await conn.execute(
            "SELECT * FROM outbox.lift_suppression(NULL, NULL, 'gone@example.com', 'fixed')"
        )
        await conn.execute(
            "SELECT * FROM outbox.record_receipt('ses', 'old', 'ses-1', 'bounced', '',"
            " now() - interval '1 hour', '{}')"
        )
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.suppressions WHERE lifted_at IS NULL"
        )
        active = await cursor.fetchone()
    assert (0,) == active


async def test_receipts_are_insert_only_but_go_with_their_purged_message(connect_as):
    async with connect_as() as conn:
        message_id = await publish(conn, "ana@example.com", "ses", "ses-1")
        await record(conn, event_id="sns-1", provider_message_id="ses-1", event="delivered")
        for statement in (
            "UPDATE outbox.receipts SET event = 'bounced'",
            "DELETE FROM outbox.receipts",
        ):
            with pytest.raises(errors.IntegrityConstraintViolation):
                await conn.execute(statement)
        await conn.execute("DELETE FROM outbox.messages WHERE id = %s", (message_id,))
        cursor = await conn.execute("SELECT count(*) FROM outbox.receipts")
        left = await cursor.fetchone()
    assert (0,) == left


async def test_an_unmasked_address_never_lands_in_a_receipt(connect_as):
    async with connect_as() as conn:
        with pytest.raises(errors.CheckViolation):
            await record(
                conn,
                event_id="e",
                provider_message_id="x",
                event="other",
                raw={"email": "ana@example.com"},
            )


CALLS = {
    "record_receipt": (
        "SELECT * FROM outbox.record_receipt('ses', 'e', 'x', 'other', '', now(), '{}')"
    ),
    "delivery_state_counts": "SELECT * FROM outbox.delivery_state_counts()",
    "list_suppressions": "SELECT * FROM outbox.list_suppressions(NULL, true, 10)",
    "add_suppression": (
        "SELECT * FROM outbox.add_suppression(NULL, NULL, 'a@example.com', 'email', 'r')"
    ),
    "lift_suppression": "SELECT * FROM outbox.lift_suppression(NULL, NULL, 'a@example.com', 'r')",
    "message_receipts": f"SELECT * FROM outbox.message_receipts(NULL, '{uuid.uuid4()}')",
    "delivery_state_after": "SELECT outbox.delivery_state_after(NULL, 'delivered')",
}
STAFF_CALLS = {
    "staff_suppressions": (
        f"SELECT * FROM outbox.staff_suppressions('{uuid.uuid4()}', 'x', true, 1)"
    ),
    "staff_add_suppression": (
        f"SELECT * FROM outbox.staff_add_suppression('{uuid.uuid4()}', 'x', 'a@example.com',"
        " 'email', 'r')"
    ),
    "staff_lift_suppression": (
        f"SELECT * FROM outbox.staff_lift_suppression('{uuid.uuid4()}', 'x', 'a@example.com', 'r')"
    ),
    "staff_message_receipts": (
        f"SELECT * FROM outbox.staff_message_receipts('{uuid.uuid4()}', 'x', '{uuid.uuid4()}')"
    ),
}
API_ONLY = {"record_receipt", "delivery_state_counts"}


@pytest.mark.parametrize("role", ["outbox_worker", "outbox_producer", "outbox_runtime"])
@pytest.mark.parametrize("name", [*CALLS, *STAFF_CALLS])
async def test_no_other_role_may_call_a_receipt_function(connect_as, role, name):
    async with connect_as(role) as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute({**CALLS, **STAFF_CALLS}[name])
    assert "42501" == caught.value.sqlstate


@pytest.mark.parametrize("name", sorted(set(CALLS) - API_ONLY))
async def test_the_api_may_not_call_the_database_operators_functions(connect_as, name):
    async with connect_as("identity_service") as conn:
        with pytest.raises(errors.InsufficientPrivilege):
            await conn.execute(CALLS[name])


@pytest.mark.parametrize("name", sorted(STAFF_CALLS))
async def test_the_api_acting_for_no_elevated_staff_member_is_refused(connect_as, name):
    async with connect_as("identity_service") as conn:
        with pytest.raises(errors.InsufficientPrivilege) as caught:
            await conn.execute(STAFF_CALLS[name])
    assert "staff membership required" == caught.value.diag.message_primary


@pytest.mark.parametrize("name", sorted(API_ONLY))
async def test_the_api_records_receipts_and_reads_the_counts(connect_as, name):
    async with connect_as("identity_service") as conn:
        await conn.execute(CALLS[name])


async def _account(conn, *identifiers: tuple[str, str, bool]) -> uuid.UUID:
    identity_id = uuid.uuid4()
    await conn.execute("SELECT identity.add_identity(%s, now())", (identity_id,))
    for value, channel, verified in identifiers:
        await conn.execute(
            "SELECT identity.save_login_identifier(%s, %s, %s, now(), CASE WHEN %s THEN now() END)",
            (value, channel, identity_id, verified),
        )
    return identity_id


async def test_the_owner_of_a_bounced_identifier_is_told_on_their_other_verified_ones(
    connect_as,
):
    async with connect_as() as conn:
        owner = await _account(
            conn,
            ("gone@example.com", "email", True),
            ("+34612345678", "sms", True),
            ("unverified@example.com", "email", False),
        )
        await publish(conn, "gone@example.com", "ses", "ses-1")
        await record(conn, event_id="sns-1", provider_message_id="ses-1", event="bounced")
        # A second receipt of the same address suppresses nothing new and tells nobody again.
        await record(conn, event_id="sns-2", provider_message_id="ses-1", event="complained")
        cursor = await conn.execute(
            "SELECT destination, channel, subject_id, params->>'change', params->>'identifier'"
            " FROM outbox.messages WHERE purpose = 'security_notice'"
        )
        notices = await cursor.fetchall()
    assert [("+34612345678", "sms", owner, "identifier_suppressed", "g***@example.com")] == (
        notices
    )


async def test_an_address_that_is_no_verified_identifier_tells_nobody(connect_as):
    async with connect_as() as conn:
        await _account(conn, ("gone@example.com", "email", False), ("+34612345678", "sms", True))
        await publish(conn, "gone@example.com", "ses", "ses-1")
        await record(conn, event_id="sns-1", provider_message_id="ses-1", event="bounced")
        cursor = await conn.execute(
            "SELECT count(*) FROM outbox.messages WHERE purpose = 'security_notice'"
        )
        count = await cursor.fetchone()
    assert (0,) == count
