"""The checker and the leak scan can fail: each bad case they exist for is caught."""

from __future__ import annotations

import json
from uuid import UUID, uuid4

from outbox.domain.channels import Channel
from outbox.domain.purposes import Purpose
from tests.reliability.checker import AttemptRow, Snapshot, check
from tests.reliability.leak_scan import Needles, scan_lines
from tests.reliability.lease_audit import Transition
from tests.reliability.ledger_provider import Answer, Send
from tests.reliability.producer import Enqueued

OWNER = "host:1:aaaaaa"


def _enqueued(message_id: UUID) -> Enqueued:
    return Enqueued(
        id=message_id,
        purpose=Purpose.SIGN_UP,
        channel=Channel.EMAIL,
        destination="a@rel.test",
        secret="123456",
        expires_at=None,
    )


def _grant(message_id: UUID, token: UUID, at: float, owner: str = OWNER, n: int = 1) -> Transition:
    return Transition(
        id=n,
        message_id=message_id,
        at=at,
        caller="claim",
        old_state="pending",
        new_state="leased",
        old_owner=None,
        new_owner=owner,
        old_token=None,
        new_token=token,
        old_lease_expires_at=None,
        new_lease_expires_at=at + 10,
        reason=None,
    )


def _record(message_id: UUID, token: UUID, at: float, expires: float, n: int = 2) -> Transition:
    return Transition(
        id=n,
        message_id=message_id,
        at=at,
        caller="record",
        old_state="leased",
        new_state="published",
        old_owner=OWNER,
        new_owner=None,
        old_token=token,
        new_token=None,
        old_lease_expires_at=expires,
        new_lease_expires_at=None,
        reason=None,
    )


def _attempt(message_id: UUID, token: UUID, at: float) -> AttemptRow:
    return AttemptRow(
        message_id=message_id,
        attempt=1,
        counted=True,
        outcome="published",
        failure_class=None,
        recorded_at=at,
        retry_at=None,
        lease_token=token,
    )


def _send(message_id: UUID, at: float, answer: Answer = Answer.ACCEPTED) -> Send:
    return Send(
        provider="brevo",
        message_id=message_id,
        worker="w1",
        destination="a@rel.test",
        received_at=at,
        answer=answer,
    )


def test_a_clean_delivery_is_delivered_and_nothing_else() -> None:
    m, token = uuid4(), uuid4()
    snapshot = Snapshot(
        states={m: ("published", None, 1)},
        attempts=[_attempt(m, token, 105.0)],
        transitions=[_grant(m, token, 100.0), _record(m, token, 105.0, 110.0)],
    )
    verdict = check([_enqueued(m)], [_send(m, 101.0)], snapshot, {"w1": OWNER})
    assert (1, 0, 0, 0, 0, 0) == (
        verdict.delivered,
        verdict.duplicated,
        verdict.lost,
        verdict.fence_violations,
        verdict.late_sends,
        verdict.unleased_sends,
    )


def test_each_bad_case_is_counted() -> None:
    lost, twice, stale, late = uuid4(), uuid4(), uuid4(), uuid4()
    token = uuid4()
    snapshot = Snapshot(
        states={
            lost: ("published", None, 1),  # published, yet the provider never took it
            twice: ("published", None, 1),
            stale: ("published", None, 1),
            late: ("dead_lettered", "challenge_expired", 0),
        },
        attempts=[_attempt(stale, token, 120.0)],  # recorded after its lease ran out
        transitions=[
            _grant(stale, token, 100.0),
            _record(stale, token, 120.0, 110.0),
            _grant(late, uuid4(), 100.0, n=3),
            _grant(twice, uuid4(), 100.0, n=4),
        ],
    )
    ledger = [
        _send(twice, 101.0),
        _send(twice, 102.0, Answer.REPLAYED),
        _send(stale, 101.0),
        _send(late, 115.0),  # after the lease of w1 ran out at 110
        _send(uuid4(), 1.0),  # a message no lease was ever granted for
    ]
    verdict = check(
        [_enqueued(m) for m in (lost, twice, stale, late)], ledger, snapshot, {"w1": OWNER}
    )
    assert 1 == verdict.lost
    assert 1 == verdict.duplicated
    assert 1 == verdict.fence_violations
    assert 1 == verdict.late_sends
    assert 1 == verdict.unleased_sends
    assert {"challenge_expired": 1} == dict(verdict.dead_lettered)


def test_the_leak_scan_flags_secrets_destinations_tracebacks_and_free_text() -> None:
    needles = Needles.of(
        secrets=["482915", "tok_abcdefghijklmnopqrstu"],
        destinations=["Alice@Example.com", "+34612345678"],
        keys=["rel-key-w1"],
    )
    event = {"event": "x", "timestamp": "2026-01-01T00:00:00.482915Z", "id": str(uuid4())}
    clean = [
        json.dumps(event),  # the code's digits as microseconds are not a code
        json.dumps({"event": "y", "destination": "a***@example.com"}),
    ]
    dirty = [
        json.dumps({"event": "a", "text": "your code is 482915"}),
        json.dumps({"event": "b", "link": "https://x.test/#token=tok_abcdefghijklmnopqrstu"}),
        json.dumps({"event": "c", "to": "alice@example.COM"}),
        json.dumps({"event": "d", "to": "+34612345678"}),
        json.dumps({"event": "e", "key": "rel-key-w1"}),
        "Traceback (most recent call last):",
    ]
    assert [] == scan_lines(clean, needles)
    findings = scan_lines(dirty, needles)
    assert 7 == len(findings)  # the traceback line is also not JSON
    assert all("482915" not in finding for finding in findings)
