"""Scenario 5: the email provider fails in every way it can while WhatsApp keeps working.

One worker runs through phases: Brevo answers 503, then 429 with Retry-After, then hangs
past the provider timeout, then resets connections, then suspends the account (402). In
each phase email and WhatsApp messages are enqueued while the fault is on, and the fault
is lifted after a while. Throughout, one destination is always rejected and some codes
expire before the outage ends. The long run repeats the cycle of phases (at the same
load: the point is punctuality, not overload).

What must hold: every retry is claimed within [due, due + poll interval] (plus a small
allowance for a loaded machine, reported as measured); no request follows a 429 sooner
than its Retry-After; an expired code is never sent again and ends ``challenge_expired``;
a suspended provider costs no attempt; WhatsApp reaches its provider while email is down.
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
from tests.reliability.ledger_provider import Answer, Fault, Send
from tests.reliability.producer import EMAIL_CODE, WHATSAPP_CODE, Enqueued
from tests.reliability.profile import PROFILE
from tests.reliability.scenario import Scenario

pytestmark = pytest.mark.integration

POLL = 0.2
ALLOWANCE = 0.5  # a loaded CI machine's scheduling delay on top of the poll interval
WINDOW = 1.5  # how long each fault stays on
RETRY_AFTER = 2
PROBE = 0.5
LIFETIME = timedelta(seconds=1)  # codes that expire during the 503 outage
REJECTED = "reject-me@rel.test"
PHASES = (Fault.UNAVAILABLE, Fault.THROTTLED, Fault.HANG, Fault.RESET, Fault.SUSPENDED)
HISTORY = """
SELECT failure_class, counted, count(*) FROM outbox.attempts
WHERE message_id = ANY(%s) AND failure_class IS NOT NULL GROUP BY 1, 2
"""
DEAD = "SELECT id, dead_letter_reason FROM outbox.messages WHERE id = ANY(%s)"


async def test_retries_are_punctual_and_bounded_and_healthy_traffic_flows(
    scenario: Scenario,
) -> None:
    scenario.ledger.behaviour.retry_after = RETRY_AFTER
    scenario.ledger.behaviour.hang_seconds = 3.0
    scenario.ledger.behaviour.reject_destination = REJECTED
    await scenario.workers.start_ready(
        "--batch-size",
        "50",
        "--concurrency",
        "50",
        OUTBOX_WORKER_POLL_SECONDS=str(POLL),
        OUTBOX_PROVIDER_TIMEOUT_SECONDS="1",
        OUTBOX_PROVIDER_PROBE_SECONDS=str(PROBE),
        OUTBOX_WORKER_LEASE_SECONDS="4",
    )
    producer = scenario.producer
    chats_during: list[tuple[Enqueued, float]] = []  # each WhatsApp message, and its fault's end
    doomed: list[Enqueued] = []
    rejected: list[Enqueued] = []
    suspended: list[Enqueued] = []
    for fault in itertools.islice(itertools.cycle(PHASES), PROFILE.outage_cycles * len(PHASES)):
        scenario.ledger.behaviour.fault = fault
        started = time.time()
        emails = await producer.enqueue(PROFILE.outage_messages, kinds=[EMAIL_CODE])
        chats = await producer.enqueue(PROFILE.outage_messages, kinds=[WHATSAPP_CODE])
        if fault is Fault.UNAVAILABLE:
            doomed += await producer.enqueue(
                PROFILE.outage_messages, kinds=[EMAIL_CODE], lifetime=LIFETIME
            )
            message, enqueued = producer.build(EMAIL_CODE, destination=REJECTED)
            await producer.commit([(message, enqueued)])
            rejected.append(enqueued)
        if fault is Fault.SUSPENDED:
            suspended += emails
        await asyncio.sleep(max(0.0, started + WINDOW - time.time()))
        scenario.ledger.behaviour.fault = Fault.NONE
        chats_during += [(chat, time.time()) for chat in chats]
        await scenario.settle(within=60)

    snapshot = Snapshot.read(scenario.url)
    requests: dict[UUID | None, list[Send]] = defaultdict(list)
    for send in scenario.ledger.ledger():
        requests[send.message_id].append(send)
    lateness = _retry_lateness(snapshot)
    healthy_late = sum(
        1
        for chat, lifted in chats_during
        if not any(
            s.answer is Answer.ACCEPTED and s.received_at < lifted for s in requests[chat.id]
        )
    )
    early_after_429 = sum(
        1
        for sends in requests.values()
        for before, after in itertools.pairwise(sends)
        if before.answer is Answer.THROTTLED
        and after.received_at - before.received_at < RETRY_AFTER - 0.01
    )
    # A send the worker started before the code expired may still arrive just after it.
    after_expiry = [
        send.received_at - message.expires_at.timestamp()
        for message in doomed
        for send in requests[message.id]
        if message.expires_at is not None and send.received_at >= message.expires_at.timestamp()
    ]
    reasons = {row[0]: row[1] for row in scenario.rows(DEAD, [m.id for m in doomed + rejected])}
    suspension = {
        f"{row[0]} {'counted' if row[1] else 'not counted'}": row[2]
        for row in scenario.rows(HISTORY, [e.id for e in suspended])
    }
    verdict = await scenario.finish(
        "5 provider outages",
        cycles=PROFILE.outage_cycles,
        phases=[str(f) for f in PHASES],
        retries_measured=len(lateness),
        retry_lateness_max_seconds=round(max(lateness, default=0.0), 3),
        retries_later_than_poll=sum(1 for late in lateness if late > POLL),
        requests_sooner_than_retry_after=early_after_429,
        expired_requests_arriving_after_expiry=len(after_expiry),
        expired_latest_arrival_seconds=round(max(after_expiry, default=0.0), 3),
        suspended_phase_failures=suspension,
        healthy_not_sent_during_outage=healthy_late,
    )

    assert lateness, "no retry was measured"
    assert max(lateness) <= POLL + ALLOWANCE, sorted(lateness)[-5:]
    assert 0 == early_after_429
    assert max(after_expiry, default=0.0) < 0.5  # in flight at expiry; never a new attempt
    assert {"challenge_expired"} == {reasons[m.id] for m in doomed}
    assert {"REJECTED"} == {reasons[m.id] for m in rejected}
    assert 0 == suspension.get("PROVIDER_SUSPENDED counted", 0)  # no attempt spent
    assert 0 == healthy_late
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
