"""Scenario 6: sweep vs worker and supersede/cancel vs worker, each interleaving forced.

Each test stops one side inside its statement with an advisory-lock gate (row changed,
row lock held, not committed), runs the other side, checks whether that side skipped the
row (SKIP LOCKED) or waited for it, opens the gate, and compares the final state with the
lifecycle rule: a resend or a cancel fences a leased row (the worker's later record is
refused and only the newest message can be sent), a worker that records first wins, an
expired row under a live lease is left to its worker, and every other expired row ends
``challenge_expired`` exactly once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring
from outbox.adapters.postgres.dispatch_store import PostgresDispatchStore
from outbox.adapters.postgres.outbox_writer import PostgresOutboxWriter
from outbox.adapters.system.ids import Uuid7Ids
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.delivery.outcomes import Published, RecordResult
from outbox.domain.purposes import Purpose
from tests.reliability import lease_audit
from tests.reliability.gates import Gates
from tests.reliability.producer import SEAL_KEY
from tests.reliability.profile import PROFILE, record_counts

pytestmark = pytest.mark.integration

LEASE = timedelta(seconds=60)
ROUNDS = range(PROFILE.interleaving_rounds)
STATE = """
SELECT m.state, m.dead_letter_reason, e.message_id IS NOT NULL
FROM outbox.messages AS m LEFT JOIN outbox.envelopes AS e ON e.message_id = m.id
WHERE m.id = %s
"""
SEALER = EnvelopeSealer(Keyring((SEAL_KEY,)))
IDS = Uuid7Ids()
_forced: dict[str, int] = {}


@pytest.fixture
async def gates(database_url: str) -> AsyncIterator[Gates]:
    """Gates and the lease audit in the shared database, removed again afterwards."""
    lease_audit.install(database_url)
    installed = Gates(database_url)
    await installed.install()
    try:
        yield installed
    finally:
        await installed.open_all()
        # The database is shared with other suites: leave it as the migrations made it.
        async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
            await conn.execute("DROP SCHEMA reliability CASCADE")


def _message(subject: uuid.UUID, *, expires_in: timedelta = timedelta(minutes=10)) -> Message:
    message_id = IDS.new_id()
    now = datetime.now(UTC)
    return Message.enqueue(
        id=message_id,
        purpose=Purpose.SIGN_UP,
        channel=Channel.EMAIL,
        destination="race@rel.test",
        subject_id=subject,
        template="sign_up",
        sealed_secret=SEALER.seal(message_id=message_id, purpose=Purpose.SIGN_UP, plaintext="1"),
        expires_at=now + expires_in,
        now=now,
    )


async def _enqueue(url: str, message: Message) -> None:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute("SET ROLE outbox_producer")
        await PostgresOutboxWriter(conn).enqueue(message)
        await conn.commit()


async def _cancel(url: str, subject: uuid.UUID) -> int:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute("SET ROLE identity_service")  # the identity module's alone
        cancelled = await PostgresOutboxWriter(conn).cancel_by_subject(
            subject_id=subject, reason=FailureClass.CHALLENGE_CONSUMED
        )
        await conn.commit()
    return cancelled


async def _state(url: str, message_id: uuid.UUID) -> tuple[Any, ...]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(STATE, (message_id,))).fetchone()
    assert row is not None
    return tuple(row)


def _published(claimed: ClaimedMessage) -> AttemptRecord:
    return AttemptRecord(
        message_id=claimed.id, lease_token=claimed.lease_token, attempt=1, outcome=Published()
    )


async def _stopped_at_gate(gates: Gates, caller: str, work: Any) -> asyncio.Task[Any]:
    await gates.close(caller)
    task = asyncio.ensure_future(work)
    await gates.waiting(at_gate=1)
    return task


def _count(name: str) -> None:
    _forced[name] = _forced.get(name, 0) + 1
    record_counts("6 forced interleavings", {"interleavings": dict(sorted(_forced.items()))})


# --- supersede (a resend) and cancel vs the worker -----------------------------------------


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_resend_during_the_claim_waits_then_fences_the_fresh_lease(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    old, new = _message(subject), _message(subject)
    await _enqueue(database_url, old)
    claiming = await _stopped_at_gate(
        gates, "claim", dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    )
    resending = asyncio.ensure_future(_enqueue(database_url, new))
    await gates.waiting(at_gate=1, on_rows=1)  # the resend waits for the claimed row

    await gates.open("claim")
    [held] = await claiming
    await resending

    assert [RecordResult.LEASE_LOST] == list(await dispatch_store.record([_published(held)]))
    assert ("dead_lettered", "superseded_by_resend", False) == await _state(database_url, old.id)
    sendable = await dispatch_store.claim(owner="w2", limit=10, lease=LEASE)
    assert [new.id] == [m.id for m in sendable]
    _count("resend during claim")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_claim_during_a_resend_skips_the_old_row_and_cannot_see_the_new_one(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    old, new = _message(subject), _message(subject)
    await _enqueue(database_url, old)
    resending = await _stopped_at_gate(gates, "enqueue", _enqueue(database_url, new))

    assert [] == list(await dispatch_store.claim(owner="w1", limit=10, lease=LEASE))

    await gates.open("enqueue")
    await resending
    assert ("dead_lettered", "superseded_by_resend", False) == await _state(database_url, old.id)
    sendable = await dispatch_store.claim(owner="w1", limit=10, lease=LEASE)
    assert [new.id] == [m.id for m in sendable]
    _count("claim during resend")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_record_during_a_resend_waits_then_is_refused(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    old, new = _message(subject), _message(subject)
    await _enqueue(database_url, old)
    [held] = await dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    resending = await _stopped_at_gate(gates, "enqueue", _enqueue(database_url, new))
    recording = asyncio.ensure_future(dispatch_store.record([_published(held)]))
    await gates.waiting(at_gate=1, on_rows=1)

    await gates.open("enqueue")
    await resending

    assert [RecordResult.LEASE_LOST] == list(await recording)
    assert ("dead_lettered", "superseded_by_resend", False) == await _state(database_url, old.id)
    assert ("pending", None, True) == await _state(database_url, new.id)
    _count("record during resend")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_resend_during_the_record_waits_and_supersedes_nothing(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    old, new = _message(subject), _message(subject)
    await _enqueue(database_url, old)
    [held] = await dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    recording = await _stopped_at_gate(gates, "record", dispatch_store.record([_published(held)]))
    resending = asyncio.ensure_future(_enqueue(database_url, new))
    await gates.waiting(at_gate=1, on_rows=1)

    await gates.open("record")
    assert [RecordResult.RECORDED] == list(await recording)
    await resending

    assert ("published", None, False) == await _state(database_url, old.id)
    assert ("pending", None, True) == await _state(database_url, new.id)
    _count("resend during record")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_consumed_challenge_during_the_claim_fences_the_fresh_lease(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    message = _message(subject)
    await _enqueue(database_url, message)
    claiming = await _stopped_at_gate(
        gates, "claim", dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    )
    cancelling = asyncio.ensure_future(_cancel(database_url, subject))
    await gates.waiting(at_gate=1, on_rows=1)

    await gates.open("claim")
    [held] = await claiming
    assert 1 == await cancelling

    assert [RecordResult.LEASE_LOST] == list(await dispatch_store.record([_published(held)]))
    assert ("dead_lettered", "challenge_consumed", False) == await _state(database_url, message.id)
    _count("consume during claim")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_consumed_challenge_during_the_record_cancels_nothing(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    subject = uuid.uuid4()
    message = _message(subject)
    await _enqueue(database_url, message)
    [held] = await dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    recording = await _stopped_at_gate(gates, "record", dispatch_store.record([_published(held)]))
    cancelling = asyncio.ensure_future(_cancel(database_url, subject))
    await gates.waiting(at_gate=1, on_rows=1)

    await gates.open("record")
    assert [RecordResult.RECORDED] == list(await recording)
    assert 0 == await cancelling
    assert ("published", None, False) == await _state(database_url, message.id)
    _count("consume during record")


# --- the expiry sweep vs the worker -------------------------------------------------------


async def _expired(database_url: str, seconds: float = 0.4) -> Message:
    message = _message(uuid.uuid4(), expires_in=timedelta(seconds=seconds))
    await _enqueue(database_url, message)
    await asyncio.sleep(seconds + 0.05)
    return message


def _callers(database_url: str, message_id: uuid.UUID) -> list[tuple[str, str]]:
    return [
        (change.caller, change.new_state)
        for change in lease_audit.transitions(database_url)
        if change.message_id == message_id
    ]


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_sweep_during_the_claim_of_an_expired_row_skips_it(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    message = await _expired(database_url)
    claiming = await _stopped_at_gate(
        gates, "claim", dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    )

    assert 0 == await dispatch_store.expire(limit=10)

    await gates.open("claim")
    assert [] == list(await claiming)  # the claim dead-letters an expired message itself
    assert ("dead_lettered", "challenge_expired", False) == await _state(database_url, message.id)
    assert [("enqueue", "pending"), ("claim", "dead_lettered")] == _callers(
        database_url, message.id
    )
    _count("sweep during claim")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_claim_during_the_sweep_skips_the_row_being_expired(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    message = await _expired(database_url)
    sweeping = await _stopped_at_gate(gates, "expire", dispatch_store.expire(limit=10))

    assert [] == list(await dispatch_store.claim(owner="w1", limit=10, lease=LEASE))

    await gates.open("expire")
    assert 1 == await sweeping
    assert ("dead_lettered", "challenge_expired", False) == await _state(database_url, message.id)
    assert [("enqueue", "pending"), ("expire", "dead_lettered")] == _callers(
        database_url, message.id
    )
    _count("claim during sweep")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_late_record_during_the_sweep_waits_then_is_refused(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    message = _message(uuid.uuid4(), expires_in=timedelta(seconds=0.6))
    await _enqueue(database_url, message)
    [held] = await dispatch_store.claim(owner="w1", limit=1, lease=timedelta(seconds=0.3))
    await asyncio.sleep(0.7)  # lease and message have both run out; the worker is late
    sweeping = await _stopped_at_gate(gates, "expire", dispatch_store.expire(limit=10))
    recording = asyncio.ensure_future(dispatch_store.record([_published(held)]))

    await gates.open("expire")
    assert 1 == await sweeping
    assert [RecordResult.LEASE_LOST] == list(await recording)
    assert ("dead_lettered", "challenge_expired", False) == await _state(database_url, message.id)
    _count("late record during sweep")


@pytest.mark.parametrize("_", ROUNDS)
async def test_a_sweep_leaves_an_expired_row_under_a_live_lease_to_its_worker(
    _: int, database_url: str, gates: Gates, dispatch_store: PostgresDispatchStore
) -> None:
    message = _message(uuid.uuid4(), expires_in=timedelta(seconds=0.4))
    await _enqueue(database_url, message)
    [held] = await dispatch_store.claim(owner="w1", limit=1, lease=LEASE)
    await asyncio.sleep(0.45)  # the code has expired, the lease has not: the send is under way
    recording = await _stopped_at_gate(gates, "record", dispatch_store.record([_published(held)]))

    assert 0 == await dispatch_store.expire(limit=10)

    await gates.open("record")
    assert [RecordResult.RECORDED] == list(await recording)
    assert ("published", None, False) == await _state(database_url, message.id)
    _count("sweep during live-lease record")
