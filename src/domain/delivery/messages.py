"""The outbox message and every transition of its lifecycle."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from types import MappingProxyType
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.delivery.errors import InvalidMessage, InvalidTransition, LeaseLost
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.outcomes import (
    DeadLetter,
    Outcome,
    Published,
    Release,
    Retry,
    expiry_reason,
)
from outbox.domain.delivery.priorities import Priority
from outbox.domain.purposes import Purpose

# A W3C traceparent, version 00: the one form of trace context a message keeps.
TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}", re.ASCII)


class State(enum.StrEnum):
    """Where a message is in its life; published and dead_lettered are final."""

    PENDING = "pending"
    LEASED = "leased"
    PUBLISHED = "published"
    DEAD_LETTERED = "dead_lettered"

    @property
    def is_final(self) -> bool:
        """Whether no event can change a message in this state any more."""
        return self in (State.PUBLISHED, State.DEAD_LETTERED)


@attrs.frozen(kw_only=True)
class Lease:
    """A worker's exclusive, time-bounded right to send and record a message."""

    owner: str
    token: UUID
    expires_at: datetime

    def is_live(self, now: datetime) -> bool:
        """Whether the lease still holds at ``now``."""
        return now < self.expires_at


def _frozen_mapping(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class Message:
    """One message in the outbox: what to send, to whom, and how far it got.

    ``sealed_secret`` is the envelope text (never plaintext); it is dropped on every
    final transition, as the store deletes the envelope row in the same transaction.
    ``priority`` defaults to the purpose's (security purposes high, notifications normal).
    ``trace_context`` is the producer's W3C traceparent, for tracing; never a secret.
    """

    id: UUID
    purpose: Purpose
    channel: Channel
    destination: str = attrs.field(repr=False)
    subject_id: UUID | None
    template: str
    params: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_mapping)
    locale: str = "en"
    sealed_secret: str | None = attrs.field(default=None, repr=False)
    state: State = State.PENDING
    lease: Lease | None = None
    attempts: int = 0
    available_at: datetime
    expires_at: datetime | None = None
    created_at: datetime
    published_at: datetime | None = None
    dead_lettered_at: datetime | None = None
    dead_letter_reason: FailureClass | None = None
    priority: Priority = attrs.field(
        default=attrs.Factory(lambda self: Priority.default_for(self.purpose), takes_self=True),
        converter=Priority,
    )
    trace_context: str | None = None

    @classmethod
    def enqueue(
        cls,
        *,
        id: UUID,  # noqa: A002 - the message's own id is its natural name
        purpose: Purpose,
        channel: Channel,
        destination: str,
        subject_id: UUID | None,
        template: str,
        now: datetime,
        params: Mapping[str, str] | None = None,
        locale: str = "en",
        sealed_secret: str | None = None,
        expires_at: datetime | None = None,
        priority: Priority | None = None,
        not_before: datetime | None = None,
        trace_context: str | None = None,
    ) -> Message:
        """Create a pending message; the purpose decides what is required.

        It is available now, or at ``not_before`` when that is later (a delayed send; a past
        time means now). ``priority`` defaults to the purpose's.
        """
        if purpose.carries_secret and sealed_secret is None:
            raise InvalidMessage(f"a {purpose} message needs a sealed secret")
        if not purpose.carries_secret and sealed_secret is not None:
            raise InvalidMessage(f"a {purpose} message carries no secret")
        if purpose.names_subject and subject_id is None:
            raise InvalidMessage(f"a {purpose} message names its subject")
        if expires_at is not None and expires_at <= now:
            raise InvalidMessage("the message would be born expired")
        if not template:
            raise InvalidMessage("a message names its template")
        if priority is not None and priority not in tuple(Priority):
            raise InvalidMessage("priority: expected 0 (low), 1 (normal) or 2 (high)")
        if not_before is not None and not_before.tzinfo is None:
            raise InvalidMessage("not_before: a delayed send names its time zone")
        if not_before is not None and expires_at is not None and not_before >= expires_at:
            raise InvalidMessage("not_before: the message would expire before it may be sent")
        if trace_context is not None and not TRACEPARENT.fullmatch(trace_context):
            raise InvalidMessage("trace_context: expected a W3C traceparent")
        return cls(
            id=id,
            purpose=purpose,
            channel=channel,
            destination=destination,
            subject_id=subject_id,
            template=template,
            params=params or {},
            locale=locale,
            sealed_secret=sealed_secret,
            available_at=now if not_before is None else max(now, not_before),
            expires_at=expires_at,
            created_at=now,
            priority=Priority.default_for(purpose) if priority is None else priority,
            trace_context=trace_context,
        )

    @property
    def is_delayed(self) -> bool:
        """Whether the producer asked for a later send than the enqueue (``not_before``)."""
        return self.available_at > self.created_at

    @property
    def claimable_at(self) -> datetime | None:
        """When a claim may take it: due time while pending, lease expiry while leased."""
        if self.state is State.PENDING:
            return self.available_at
        if self.state is State.LEASED and self.lease is not None:
            return self.lease.expires_at
        return None

    @property
    def is_live(self) -> bool:
        """Whether the message can still be sent (pending or leased)."""
        return not self.state.is_final

    def is_expired(self, now: datetime) -> bool:
        """Whether the message's secret can no longer be used at ``now``."""
        return self.expires_at is not None and self.expires_at <= now

    def is_claimable(self, now: datetime) -> bool:
        """Pending and due, or leased under a lease that ran out (its worker died or stalled)."""
        if self.state is State.PENDING:
            return self.available_at <= now
        if self.state is State.LEASED:
            return self.lease is not None and not self.lease.is_live(now)
        return False

    def claim(self, *, owner: str, token: UUID, now: datetime, duration: timedelta) -> Message:
        """Lease the message to a worker; the attempt count is left as it was."""
        if not self.is_claimable(now):
            raise InvalidTransition(f"a {self.state} message is not claimable now")
        if self.is_expired(now):
            raise InvalidTransition("an expired message is expired, not claimed")
        return attrs.evolve(
            self,
            state=State.LEASED,
            lease=Lease(owner=owner, token=token, expires_at=now + duration),
        )

    def holds(self, token: UUID, now: datetime) -> bool:
        """Whether ``token`` names the live lease on this message at ``now``."""
        return (
            self.state is State.LEASED
            and self.lease is not None
            and self.lease.token == token
            and self.lease.is_live(now)
        )

    def record(self, *, token: UUID, outcome: Outcome, now: datetime) -> Message:
        """Apply a worker's outcome under its lease; a lost or expired lease raises LeaseLost."""
        if not self.holds(token, now):
            raise LeaseLost(f"message {self.id} is not leased under this token")
        attempts = self.attempts + (1 if outcome.counts_attempt else 0)
        match outcome:
            case Published():
                return attrs.evolve(
                    self,
                    state=State.PUBLISHED,
                    lease=None,
                    attempts=attempts,
                    sealed_secret=None,
                    published_at=now,
                )
            case Retry(available_at=at) | Release(available_at=at):
                return attrs.evolve(
                    self, state=State.PENDING, lease=None, attempts=attempts, available_at=at
                )
            case DeadLetter(reason=reason):
                return self._dead_letter(reason, now, attempts=attempts)

    def supersede(self, now: datetime) -> Message:
        """Withdraw an unsent message because a newer one for its subject exists (a resend)."""
        if not self.purpose.is_supersedable:
            raise InvalidTransition(f"{self.purpose} messages are never superseded")
        return self.cancel(FailureClass.SUPERSEDED_BY_RESEND, now)

    def cancel(self, reason: FailureClass, now: datetime) -> Message:
        """Withdraw an unsent message whatever its lease: the holder's later record is refused."""
        if not self.is_live:
            raise InvalidTransition(f"a {self.state} message cannot be withdrawn")
        return self._dead_letter(reason, now, attempts=self.attempts)

    def expire(self, now: datetime) -> Message:
        """Dead-letter an expired message nobody holds (the sweep); a live lease is left alone."""
        if not self.is_expired(now):
            raise InvalidTransition("the message has not expired")
        if not self.is_live:
            raise InvalidTransition(f"a {self.state} message cannot expire")
        if self.lease is not None and self.lease.is_live(now):
            raise InvalidTransition("a message under a live lease is left to its worker")
        return self._dead_letter(expiry_reason(self.purpose), now, attempts=self.attempts)

    def reissue(
        self,
        *,
        new_id: UUID,
        sealed_secret: str,
        now: datetime,
        expires_at: datetime | None,
    ) -> Message:
        """A new message with a new secret for the same subject; this one stays final."""
        if self.state is not State.DEAD_LETTERED:
            raise InvalidTransition("only a dead letter can be reissued")
        if not self.purpose.is_reissuable:
            raise InvalidTransition(f"{self.purpose} messages cannot be reissued")
        return self._copy(
            new_id=new_id, sealed_secret=sealed_secret, now=now, expires_at=expires_at
        )

    def requeue(self, *, new_id: UUID, now: datetime) -> Message:
        """A new copy of a dead-lettered notification; this one stays final."""
        if self.state is not State.DEAD_LETTERED:
            raise InvalidTransition("only a dead letter can be requeued")
        if not self.purpose.is_requeueable:
            raise InvalidTransition(f"{self.purpose} messages cannot be requeued")
        return self._copy(new_id=new_id, sealed_secret=None, now=now, expires_at=None)

    def _copy(
        self,
        *,
        new_id: UUID,
        sealed_secret: str | None,
        now: datetime,
        expires_at: datetime | None,
    ) -> Message:
        return Message.enqueue(
            id=new_id,
            purpose=self.purpose,
            channel=self.channel,
            destination=self.destination,
            subject_id=self.subject_id,
            template=self.template,
            params=self.params,
            locale=self.locale,
            sealed_secret=sealed_secret,
            expires_at=expires_at,
            now=now,
        )

    def _dead_letter(self, reason: FailureClass, now: datetime, *, attempts: int) -> Message:
        return attrs.evolve(
            self,
            state=State.DEAD_LETTERED,
            lease=None,
            attempts=attempts,
            sealed_secret=None,
            dead_lettered_at=now,
            dead_letter_reason=reason,
        )
