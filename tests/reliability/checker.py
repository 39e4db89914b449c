"""Classifies every enqueued message from the provider's ledger and the database.

Each acknowledged message is exactly one of: delivered (the provider took it once),
duplicated (the provider received it more than once in a state where it would have sent
it, which the idempotency key may have absorbed), lost, or dead-lettered with a reason.

Fences: every row of ``outbox.attempts`` must match a change the audit trigger saw, made by
``record_outcomes`` under the very lease token the row names, while that lease was live.
A send is *late* when it reached the provider after the sending worker's lease on the
message had run out or been taken away.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from uuid import UUID

import attrs
import psycopg

from tests.reliability.lease_audit import Transition, transitions
from tests.reliability.ledger_provider import Answer, Send
from tests.reliability.producer import Enqueued

MESSAGES = """
SELECT id, state, dead_letter_reason, attempt_count FROM outbox.messages
"""
ATTEMPTS = """
SELECT message_id, attempt, counted, outcome, failure_class, recorded_at, retry_at, lease_token
FROM outbox.attempts ORDER BY id
"""
TAKEN = frozenset({Answer.ACCEPTED, Answer.REPLAYED})


@attrs.frozen(kw_only=True)
class AttemptRow:
    """One row of outbox.attempts."""

    message_id: UUID
    attempt: int
    counted: bool
    outcome: str
    failure_class: str | None
    recorded_at: float
    retry_at: float | None
    lease_token: UUID | None


@attrs.frozen(kw_only=True)
class Snapshot:
    """What the database says at the end of a scenario."""

    states: Mapping[UUID, tuple[str, str | None, int]]  # id -> state, reason, attempt count
    attempts: Sequence[AttemptRow]
    transitions: Sequence[Transition]

    @classmethod
    def read(cls, url: str) -> Snapshot:
        """Read messages, attempts and the audit log (superuser, not through any proxy)."""
        with psycopg.connect(url, autocommit=True) as conn:
            states = {row[0]: (row[1], row[2], row[3]) for row in conn.execute(MESSAGES).fetchall()}
            attempts = [
                AttemptRow(
                    message_id=row[0],
                    attempt=row[1],
                    counted=row[2],
                    outcome=row[3],
                    failure_class=row[4],
                    recorded_at=row[5].timestamp(),
                    retry_at=row[6].timestamp() if row[6] is not None else None,
                    lease_token=row[7],
                )
                for row in conn.execute(ATTEMPTS).fetchall()
            ]
        return cls(states=states, attempts=attempts, transitions=transitions(url))


@attrs.define
class Verdict:
    """The counts of one scenario, and the ids behind every bad count."""

    enqueued: int = 0
    delivered: int = 0
    duplicated: int = 0
    lost: int = 0
    dead_lettered: Counter[str] = attrs.field(factory=Counter)
    duplicate_sends: int = 0  # requests beyond the first that the provider took or replayed
    double_deliveries: int = 0  # messages the provider accepted (sent out) more than once
    fence_violations: int = 0
    late_sends: int = 0
    unleased_sends: int = 0
    problems: list[str] = attrs.field(factory=list)

    def counts(self) -> dict[str, Any]:
        """The counts, for the report."""
        return {
            "enqueued": self.enqueued,
            "delivered": self.delivered,
            "duplicated": self.duplicated,
            "lost": self.lost,
            "dead_lettered": dict(sorted(self.dead_lettered.items())),
            "duplicate_sends": self.duplicate_sends,
            "double_deliveries": self.double_deliveries,
            "fence_violations": self.fence_violations,
            "late_sends": self.late_sends,
            "unleased_sends": self.unleased_sends,
        }


def check(
    enqueued: Iterable[Enqueued],
    ledger: Sequence[Send],
    snapshot: Snapshot,
    owners: Mapping[str, str],
) -> Verdict:
    """Classify ``enqueued`` and audit fences and sends; see the module docstring."""
    verdict = Verdict()
    sends: dict[UUID, list[Send]] = defaultdict(list)
    for send in ledger:
        if send.message_id is not None:
            sends[send.message_id].append(send)
    for message in enqueued:
        verdict.enqueued += 1
        _classify(message, sends.get(message.id, []), snapshot, verdict)
    _audit_fences(snapshot, verdict)
    _audit_sends(ledger, snapshot, owners, verdict)
    return verdict


def _classify(
    message: Enqueued, sends: Sequence[Send], snapshot: Snapshot, verdict: Verdict
) -> None:
    taken = [send for send in sends if send.answer in TAKEN]
    accepted = sum(1 for send in taken if send.answer is Answer.ACCEPTED)
    if accepted > 1:
        verdict.double_deliveries += 1
    verdict.duplicate_sends += max(0, len(taken) - 1)
    row = snapshot.states.get(message.id)
    if row is None:
        verdict.lost += 1
        verdict.problems.append(f"lost {message.id}: not in the database")
        return
    state, reason, _ = row
    if state == "published":
        if accepted == 0:
            verdict.lost += 1
            verdict.problems.append(f"lost {message.id}: published, never accepted")
        elif len(taken) > 1:
            verdict.duplicated += 1
        else:
            verdict.delivered += 1
    elif state == "dead_lettered":
        verdict.dead_lettered[str(reason)] += 1
    else:
        verdict.lost += 1
        verdict.problems.append(f"lost {message.id}: still {state}")


def _audit_fences(snapshot: Snapshot, verdict: Verdict) -> None:
    records = {
        (t.message_id, t.at, t.old_token): t for t in snapshot.transitions if t.caller == "record"
    }
    matched: set[int] = set()
    for row in snapshot.attempts:
        change = records.get((row.message_id, row.recorded_at, row.lease_token))
        if change is None:
            verdict.fence_violations += 1
            verdict.problems.append(f"fence {row.message_id}: attempt under no lease seen")
            continue
        matched.add(change.id)
        live = (
            change.old_state == "leased"
            and change.old_lease_expires_at is not None
            and change.at < change.old_lease_expires_at
        )
        if not live:
            verdict.fence_violations += 1
            verdict.problems.append(f"fence {row.message_id}: recorded under a stale lease")
    for change in records.values():
        if change.id not in matched:
            verdict.fence_violations += 1
            verdict.problems.append(f"fence {change.message_id}: a record left no history")
    tokens = Counter(t.new_token for t in snapshot.transitions if t.grants_lease)
    verdict.fence_violations += sum(n - 1 for n in tokens.values() if n > 1)


def _audit_sends(
    ledger: Sequence[Send], snapshot: Snapshot, owners: Mapping[str, str], verdict: Verdict
) -> None:
    history: dict[UUID, list[Transition]] = defaultdict(list)
    for change in snapshot.transitions:
        history[change.message_id].append(change)
    for send in ledger:
        if send.message_id is None or send.answer is Answer.UNAUTHORIZED:
            continue
        owner = owners.get(send.worker)
        changes = history.get(send.message_id, [])
        lease = _lease_held(changes, owner, send.received_at)
        if lease is None:
            verdict.unleased_sends += 1
            history_text = "; ".join(
                f"{c.caller} {c.old_state}->{c.new_state} at {c.at:.3f} to {c.new_owner}"
                for c in changes
            )
            verdict.problems.append(
                f"send {send.message_id} by {send.worker} ({owner}) at {send.received_at:.3f}:"
                f" no lease at all; history: {history_text}"
            )
            continue
        _, ended_at = lease
        if send.received_at >= ended_at:
            verdict.late_sends += 1


def _lease_held(
    changes: Sequence[Transition], owner: str | None, at: float
) -> tuple[Transition, float] | None:
    """The last lease ``owner`` was granted before ``at``, and when that lease ended.

    A lease ends when it runs out or at the message's next change, whichever is first.
    """
    found: tuple[Transition, float] | None = None
    for index, grant in enumerate(changes):
        if not (grant.grants_lease and grant.new_owner == owner and grant.at <= at):
            continue
        assert grant.new_lease_expires_at is not None
        ended = grant.new_lease_expires_at
        if index + 1 < len(changes):
            ended = min(ended, changes[index + 1].at)
        found = (grant, ended)
    return found
