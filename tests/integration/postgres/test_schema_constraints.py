"""The tables defend themselves: lease shape, final states, envelopes, no plaintext."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from psycopg import errors

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, generate_key
from outbox.domain.purposes import Purpose

pytestmark = pytest.mark.integration

INSERT = """
INSERT INTO outbox.messages (id, purpose, channel, destination, subject_id, template,
                             available_at, created_at, state, lease_owner, lease_token,
                             lease_expires_at)
VALUES (%s, 'sign_up', 'email', 'person@example.com', gen_random_uuid(), 'code', now(), now(),
        %s, %s, %s, %s)
"""
NOW = datetime.now(UTC)


@pytest.mark.parametrize(
    ("state", "owner", "token", "expires"),
    [
        ("leased", None, uuid.uuid4(), NOW),
        ("leased", "w", None, NOW),
        ("leased", "w", uuid.uuid4(), None),
        ("pending", "w", uuid.uuid4(), NOW),
        ("pending", None, None, NOW),
    ],
)
async def test_the_lease_is_complete_exactly_when_the_message_is_leased(
    connect_as, state, owner, token, expires
):
    async with connect_as() as conn:
        with pytest.raises(errors.CheckViolation, match="messages_lease_shape"):
            await conn.execute(INSERT, (uuid.uuid4(), state, owner, token, expires))


async def test_a_final_message_cannot_change(connect_as):
    message_id = uuid.uuid4()
    async with connect_as() as conn:
        await conn.execute(
            "SELECT outbox.enqueue_message(%s, 'notification', 'email', 'p@example.com', NULL,"
            " 'hello')",
            (message_id,),
        )
        await conn.execute(
            "UPDATE outbox.messages SET state = 'published', published_at = now() WHERE id = %s",
            (message_id,),
        )
        with pytest.raises(errors.IntegrityConstraintViolation, match="final"):
            await conn.execute(
                "UPDATE outbox.messages SET state = 'pending', published_at = NULL WHERE id = %s",
                (message_id,),
            )


async def test_a_plaintext_code_cannot_be_stored_as_an_envelope(connect_as):
    async with connect_as() as conn:
        with pytest.raises(errors.CheckViolation, match="envelopes_sealed_shape"):
            await conn.execute(
                "SELECT outbox.enqueue_message(gen_random_uuid(), 'step_up', 'sms', '+15550100',"
                " gen_random_uuid(), 'code', '{}', 'en', '493817')"
            )


async def test_no_text_column_outside_the_envelope_could_hold_a_secret_by_design(connect_as):
    """The only columns that hold message content are listed; a new one needs a look."""
    async with connect_as() as conn:
        cursor = await conn.execute(
            "SELECT table_name || '.' || column_name FROM information_schema.columns"
            " WHERE table_schema = 'outbox' AND data_type IN ('text', 'jsonb')"
            " ORDER BY 1"
        )
        columns = [row[0] for row in await cursor.fetchall()]
    assert [
        "attempts.code",
        "attempts.detail",  # 0016: a provider's reply, scrubbed by the worker, 200 characters
        "attempts.failure_class",
        "attempts.outcome",
        "attempts.provider",
        "attempts.provider_message_id",
        "delivery_states.state",  # 0029_delivery_receipts.sql: a word from a fixed list
        "envelopes.sealed",
        "messages.channel",
        "messages.dead_letter_reason",
        "messages.destination",
        "messages.lease_owner",
        "messages.locale",
        "messages.params",
        "messages.purpose",
        "messages.state",
        "messages.template",
        "messages.trace_context",  # 0014_trace_context.sql: a W3C traceparent (CHECK), no more
        # 0032_console.sql: a provider's name, the operator's reason, a word from a fixed list.
        "provider_pause_audit.action",
        "provider_pause_audit.provider",
        "provider_pause_audit.reason",
        "provider_pauses.provider",
        "provider_pauses.reason",
        # 0029_delivery_receipts.sql: a receipt, sanitised by the webhook listener (no unmasked
        # address: CHECK receipts_raw_masked); words from fixed lists; provider ids.
        "receipts.detail",
        "receipts.event",
        "receipts.provider",
        "receipts.provider_event_id",
        "receipts.provider_message_id",
        "receipts.raw",
        "staff_audit.action",  # 0006_operator_tables.sql: a word from a fixed list
        "staff_audit.console_reason",  # 0032_console.sql: the staff member's reason
        "staff_audit.idempotency_key",  # the staff client's own request key
        # The operator's reason; words from fixed lists; a digest and a masked destination.
        "suppression_audit.action",
        "suppression_audit.reason",
        "suppressions.cause",
        "suppressions.channel",
        "suppressions.destination_digest",
        "suppressions.destination_masked",
        # 0043_events_console.sql: a worker process's host:pid and a lane's name.
        "worker_lanes.lane",
        "worker_lanes.owner",
    ] == columns


@pytest.mark.parametrize(
    ("purpose", "secret", "subject", "problem"),
    [
        ("sign_up", None, "gen_random_uuid()", "needs a sealed secret"),
        ("notification", "'v1.k.c2FsdA.bm9uY2U'", "NULL", "carries no secret"),
        ("teleport", None, "NULL", "unknown purpose"),
    ],
)
async def test_enqueue_names_the_parameter_it_refuses(
    connect_as, purpose, secret, subject, problem
):
    async with connect_as("outbox_producer") as conn:
        with pytest.raises(errors.InvalidParameterValue, match=problem):
            await conn.execute(
                f"SELECT outbox.enqueue_message(gen_random_uuid(), '{purpose}', 'email',"
                f" 'p@example.com', {subject}, 'code', '{{}}', 'en', {secret or 'NULL'})"
            )


@pytest.mark.parametrize("key_id", ["k1", "2026-01-01_rotated-key"])
async def test_a_real_envelope_passes_the_shape_check_and_comes_back_unchanged(connect_as, key_id):
    message_id = uuid.uuid4()
    sealer = EnvelopeSealer(Keyring((generate_key(key_id),)))
    envelope = sealer.seal(message_id=message_id, purpose=Purpose.STEP_UP, plaintext="493817")
    async with connect_as("outbox_producer") as conn:
        await conn.execute(
            "SELECT outbox.enqueue_message(%s, 'step_up', 'sms', '+15550100', gen_random_uuid(),"
            " 'code', '{}', 'en', %s)",
            (message_id, envelope),
        )
    async with connect_as("outbox_worker") as conn:
        cursor = await conn.execute("SELECT sealed_secret FROM outbox.claim_messages('w', 1, 60)")
        row = await cursor.fetchone()
    assert row is not None
    assert "493817" == sealer.open(message_id=message_id, purpose=Purpose.STEP_UP, envelope=row[0])
