"""The security outbox's operator views on the wire (staff routes and ``outboxctl --json``)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from outbox.application.operator.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    KeysetPage,
    MessageDetail,
    MessageSummary,
    Repair,
)
from outbox.entrypoints.wire import Out, PageInfo


class BacklogCounts(Out, frozen=True):
    """Messages in each state (zero when none)."""

    pending: int
    leased: int
    published: int
    dead_lettered: int


class BacklogView(Out, frozen=True):
    """The backlog; the age is null when no pending message is due."""

    messages: BacklogCounts
    oldest_due_age_seconds: float | None

    @classmethod
    def of(cls, backlog: Backlog) -> BacklogView:
        """The body for ``backlog``."""
        age = backlog.oldest_due_age
        return cls(
            messages=BacklogCounts(
                pending=backlog.pending,
                leased=backlog.leased,
                published=backlog.published,
                dead_lettered=backlog.dead_lettered,
            ),
            oldest_due_age_seconds=age.total_seconds() if age is not None else None,
        )


class CopyView(Out, frozen=True):
    """The copy a reissue or requeue of a dead letter made, and when."""

    action: str
    message_id: UUID
    at: datetime

    @classmethod
    def of(cls, repair: Repair | None) -> CopyView | None:
        """The body for ``repair``; null when the dead letter was never repaired (always,
        for a staff read: only the database operator's reads say)."""
        if repair is None:
            return None
        return cls(action=repair.action.value, message_id=repair.message_id, at=repair.at)


class DeadLetterView(Out, frozen=True):
    """One dead letter; the destination is masked."""

    id: UUID
    purpose: str
    channel: str
    destination: str
    attempt_count: int
    failure_class: str
    dead_lettered_at: datetime
    expires_at: datetime | None
    repair: CopyView | None = None

    @classmethod
    def of(cls, item: DeadLetterSummary) -> DeadLetterView:
        """The body for ``item``."""
        return cls(
            id=item.id,
            purpose=item.purpose.value,
            channel=item.channel.value,
            destination=item.destination,
            attempt_count=item.attempts,
            failure_class=item.failure_class.value,
            dead_lettered_at=item.dead_lettered_at,
            expires_at=item.expires_at,
            repair=CopyView.of(item.repair),
        )


class DeadLetterPageView(Out, frozen=True):
    """A keyset page of dead letters, newest first."""

    items: list[DeadLetterView]
    page_info: PageInfo

    @classmethod
    def of(cls, page: KeysetPage[DeadLetterSummary]) -> DeadLetterPageView:
        """The body for ``page``."""
        return cls(items=[DeadLetterView.of(i) for i in page.items], page_info=PageInfo.of(page))


class MessageSummaryView(Out, frozen=True):
    """One row of the message list; the destination is masked."""

    id: UUID
    purpose: str
    channel: str
    destination: str
    state: str
    attempt_count: int
    created_at: datetime
    dead_letter_reason: str | None
    provider: str | None
    repair: CopyView | None

    @classmethod
    def of(cls, item: MessageSummary) -> MessageSummaryView:
        """The body for ``item``."""
        return cls(
            id=item.id,
            purpose=item.purpose.value,
            channel=item.channel.value,
            destination=item.destination,
            state=item.state.value,
            attempt_count=item.attempts,
            created_at=item.created_at,
            dead_letter_reason=item.dead_letter_reason.value if item.dead_letter_reason else None,
            provider=item.provider or None,
            repair=CopyView.of(item.repair),
        )


class MessagePageView(Out, frozen=True):
    """A keyset page of messages, newest first."""

    items: list[MessageSummaryView]
    page_info: PageInfo

    @classmethod
    def of(cls, page: KeysetPage[MessageSummary]) -> MessagePageView:
        """The body for ``page``."""
        return cls(
            items=[MessageSummaryView.of(i) for i in page.items], page_info=PageInfo.of(page)
        )


class AttemptOut(Out, frozen=True):
    """One recorded attempt of a message."""

    attempt: int
    counted: bool
    outcome: str
    failure_class: str | None
    code: str
    detail: str
    provider: str
    provider_message_id: str
    recorded_at: datetime
    retry_at: datetime | None

    @classmethod
    def of(cls, attempt: AttemptView) -> AttemptOut:
        """The body for ``attempt``."""
        return cls(
            attempt=attempt.attempt,
            counted=attempt.counted,
            outcome=attempt.outcome,
            failure_class=attempt.failure_class.value if attempt.failure_class else None,
            code=attempt.code,
            detail=attempt.detail,
            provider=attempt.provider,
            provider_message_id=attempt.provider_message_id,
            recorded_at=attempt.recorded_at,
            retry_at=attempt.retry_at,
        )


class MessageView(Out, frozen=True):
    """One message, masked, with its attempts (never its secret: only whether one is held)."""

    id: UUID
    purpose: str
    channel: str
    destination: str
    subject_id: UUID | None
    template: str
    locale: str
    state: str
    attempt_count: int
    created_at: datetime
    available_at: datetime
    expires_at: datetime | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    published_at: datetime | None
    dead_lettered_at: datetime | None
    dead_letter_reason: str | None
    has_secret: bool
    reissued_as: UUID | None
    attempts: list[AttemptOut]

    @classmethod
    def of(cls, detail: MessageDetail) -> MessageView:
        """The body for ``detail``."""
        return cls(
            id=detail.id,
            purpose=detail.purpose.value,
            channel=detail.channel.value,
            destination=detail.destination,
            subject_id=detail.subject_id,
            template=detail.template,
            locale=detail.locale,
            state=detail.state.value,
            attempt_count=detail.attempts,
            created_at=detail.created_at,
            available_at=detail.available_at,
            expires_at=detail.expires_at,
            lease_owner=detail.lease_owner,
            lease_expires_at=detail.lease_expires_at,
            published_at=detail.published_at,
            dead_lettered_at=detail.dead_lettered_at,
            dead_letter_reason=detail.dead_letter_reason.value
            if detail.dead_letter_reason
            else None,
            has_secret=detail.has_secret,
            reissued_as=detail.reissued_as,
            attempts=[AttemptOut.of(a) for a in detail.history],
        )


class ReissueView(Out, frozen=True):
    """The new message a reissue or requeue enqueued (for a replay: the first request's)."""

    dead_letter_id: UUID
    message_id: UUID
    expires_at: datetime | None
    replayed: bool

    @classmethod
    def of(cls, receipt: CopyReceipt) -> ReissueView:
        """The body for ``receipt``."""
        return cls(
            dead_letter_id=receipt.dead_letter_id,
            message_id=receipt.message_id,
            expires_at=receipt.expires_at,
            replayed=receipt.replayed,
        )
