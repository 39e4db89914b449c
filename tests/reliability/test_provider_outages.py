"""Scenario 5: the email provider fails in every way it can while WhatsApp keeps working.

One worker runs through phases: Brevo answers 503, then 429 with Retry-After, then hangs
past the provider timeout, then resets connections, then suspends the account (402). In
each phase email and WhatsApp messages are enqueued while the fault is on, and the fault
is lifted after a while. Throughout, one destination is always rejected and some codes
expire before the outage ends.

What must hold: every retry is claimed within [due, due + poll interval] (plus a small
allowance for a loaded machine, reported as measured); no request follows a 429 sooner
than its Retry-After; an expired code is never sent again and ends ``challenge_expired``;
a suspended provider costs no attempts; WhatsApp is delivered while email is down.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from datetime import timedelta
from uuid import UUID

import pytest

from tests.reliability.checker import Snapshot
from tests.reliability.ledger_provider import Answer, Fault
from tests.reliability.producer import EMAIL_CODE, WHATSAPP_CODE, Enqueued
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario

pytestmark = pytest.mark.integration

POLL = 0.2
ALLOWANCE = 0.5  # a loaded CI machine's scheduling delay on top of the poll interval
WINDOW = 1.5  # how long each fault stays on
RETRY_AFTER = 2
PROBE = 0.5
REJECTED = "reject-me@rel.test"
PHASES = (Fault.UNAVAILABLE, Fault.THROTTLED, Fault.HANG, Fault.RESET, Fault.SUSPENDED)
PUBLISHED_AT = """
SELECT id, extract(epoch FROM published_at)::float8, attempt_count
FROM outbox.messages WHERE id = ANY(%s)
"""


async def test_retries_are_punctual_and_bounded_and_healthy_traffic_flows(
    scenario: Scenario,
) -> None:
    scenario.ledger.behaviour.retry_after = RETRY_AFTER
    scenario.ledger.behaviour.hang_seconds = 2.0
    scenario.ledger.behaviour.reject_destination = REJECTED
    await scenario.workers.start_ready(
        "--batch-size",
        "50",
        "--concurrency",
        "50",
        OUTBOX_WORKER_POLL_SECONDS=str(POLL),
        OUTBOX_PROVIDER_TIMEOUT_SECONDS="0.5",
        OUTBOX_PROVIDER_PROBE_SECONDS=str(PROBE),
        OUTBOX_WORKER_LEASE_SECONDS="3",
    )
    producer = scenario.producer
    phases: dict[Fault, dict[str, list[Enqueued]]] = {}
    lifted_at: dict[Fault, float] = {}
    for fault in PHASES:
        scenario.ledger.behaviour.fault = fault
        started = time.time()
        emails = await producer.enqueue(PROFILE.outage_messages, kinds=[EMAIL_CODE])
        chats = await producer.enqueue(PROFILE.outage_messages, kinds=[WHATSAPP_CODE])
        doomed: list[Enqueued] = []
        if fault is Fault.UNAVAILABLE:
            # Codes that expire during the outage, and a destination refused for good.
            doomed = await producer.enqueue(
                PROFILE.outage_messages, kinds=[EMAIL_CODE], lifetime=timedelta(seconds=1)
            )
            rejected = producer.build(EMAIL_CODE, destination=REJECTED)
            await producer.commit([rejected])
        phases[fault] = {"emails": emails, "chats": chats, "doomed": doomed}
        await asyncio.sleep(max(0.0, started + WINDOW - time.time()))
        scenario.ledger.behaviour.fault = Fault.NONE
        lifted_at[fault] = time.time()
        await scenario.settle(within=60)

    snapshot = Snapshot.read(scenario.url)
    ledger = scenario.ledger.ledger()
    lateness = _retry_lateness(snapshot)
    published = {
        row[0]: (row[1], row[2])
        for row in scenario.rows(
            PUBLISHED_AT, [e.id for phase in phases.values() for e in phase["chats"]]
        )
    }
    late_chats = sum(
        1
        for fault, phase in phases.items()
        for chat in phase["chats"]
        if published[chat.id][0] >= lifted_at[fault]
    )
    requests = defaultdict(list)
    for send in ledger:
        requests[send.message_id].append(send)
    early_after_429 = sum(
        1
        for sends in requests.values()
        for before, after in itertools.pairwise(sends)
        if before.answer is Answer.THROTTLED
        and after.received_at - before.received_at < RETRY_AFTER - 0.01
    )
    doomed = phases[Fault.UNAVAILABLE]["doomed"]
    sent_after_expiry = sum(
        1
        for message in doomed
        for send in requests[message.id]
        if message.expires_at is not None and send.received_at >= message.expires_at.timestamp()
    )
    suspended = phases[Fault.SUSPENDED]["emails"]
    attempts = {row[0]: row[2] for row in scenario.rows(PUBLISHED_AT, [e.id for e in suspended])}
    verdict = await scenario.finish(
        "5 provider outages",
        phases=[str(f) for f in PHASES],
        retries_measured=len(lateness),
        retry_lateness_max_seconds=round(max(lateness, default=0.0), 3),
        retries_later_than_poll=sum(1 for late in lateness if late > POLL),
        requests_sooner_than_retry_after=early_after_429,
        expired_sent_after_expiry=sent_after_expiry,
        suspended_attempts_counted=sum(attempts.values()) - len(suspended),
        healthy_delivered_after_outage=late_chats,
    )

    assert lateness, "no retry was measured"
    assert max(lateness) <= POLL + ALLOWANCE, sorted(lateness)[-5:]
    assert 0 == early_after_429
    assert 0 == sent_after_expiry
    assert len(doomed) == verdict.dead_lettered["challenge_expired"]
    assert 1 == verdict.dead_lettered["REJECTED"]
    assert {1} == set(attempts.values())  # the suspension cost no attempt
    assert 0 == late_chats
    assert 0 == verdict.double_deliveries


def _retry_lateness(snapshot: Snapshot) -> list[float]:
    """For every retry and release, how long after its due time the next claim came."""
    grants: dict[UUID, list[float]] = defaultdict(list)
    for change in snapshot.transitions:
        if change.grants_lease:
            grants[change.message_id].append(change.at)
    lateness = []
    for row in snapshot.attempts:
        if row.outcome not in {"retry", "release"} or row.retry_at is None:
            continue
        later = [at for at in grants[row.message_id] if at > row.recorded_at]
        if later:
            lateness.append(min(later) - row.retry_at)
    return lateness
