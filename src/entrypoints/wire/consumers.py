"""The consumers' operator views on the wire (``outboxctl consumers … --json``): settings,
lag and dead-lettered deliveries. No body carries an event's payload."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from outbox.application.events.consumer_ports import ConsumerDeadLetter, ConsumerLag
from outbox.entrypoints.wire import Out, SequencePageInfo


class ConsumerLagView(Out, frozen=True):
    """One consumer: its settings, its subscriptions (``type:min-max``) and its lag; the age
    is null when every delivery is done."""

    consumer: str
    owner_module: str
    active: bool
    ordered: bool
    max_attempts: int
    replay_round: int
    subscriptions: list[str]
    events_behind: int
    oldest_undelivered_age_seconds: float | None
    dead_letters: int

    @classmethod
    def of(cls, row: ConsumerLag) -> ConsumerLagView:
        """The body for ``row``."""
        age = row.oldest_undelivered
        return cls.built(
            row,
            subscriptions=list(row.subscriptions),
            oldest_undelivered_age_seconds=age.total_seconds() if age else None,
        )


class ConsumerLagsView(Out, frozen=True):
    """Every consumer, by code."""

    items: list[ConsumerLagView]

    @classmethod
    def of(cls, rows: Sequence[ConsumerLag]) -> ConsumerLagsView:
        """The body for ``rows``."""
        return cls(items=[ConsumerLagView.of(row) for row in rows])


class ConsumerDeadLetterView(Out, frozen=True):
    """A dead-lettered delivery: which event, why (a code, never a message), when."""

    delivery_id: UUID
    sequence: int
    event_id: UUID
    organization_id: UUID
    event_type: str
    contract_version: int
    publication_sequence: int
    replay_round: int
    attempt_count: int
    reason: str
    code: str
    dead_lettered_at: datetime

    @classmethod
    def of(cls, item: ConsumerDeadLetter) -> ConsumerDeadLetterView:
        """The body for ``item``."""
        return cls.built(item, attempt_count=item.attempts)


class ConsumerDeadLetterPageView(Out, frozen=True):
    """A page of dead-lettered deliveries, newest first."""

    items: list[ConsumerDeadLetterView]
    page_info: SequencePageInfo

    @classmethod
    def of(cls, items: Sequence[ConsumerDeadLetter], *, limit: int) -> ConsumerDeadLetterPageView:
        """The body for ``items``, a page of at most ``limit``."""
        end = str(items[-1].sequence) if items else None
        return cls(
            items=[ConsumerDeadLetterView.of(item) for item in items],
            page_info=SequencePageInfo(has_next_page=len(items) == limit, end_cursor=end),
        )


class ConsumerChangeView(Out, frozen=True):
    """What a pause or resume did: ``changed`` is false when it was already so."""

    consumer: str
    active: bool
    changed: bool


class ReplayView(Out, frozen=True):
    """How many deliveries the replay wrote, in a new round."""

    consumer: str
    deliveries: int
