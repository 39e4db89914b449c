"""The security outbox's operator views on the wire (staff routes and ``outboxctl --json``)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from outbox.application.delivery.views import (
    AttemptView,
    Backlog,
    CopyReceipt,
    DeadLetterSummary,
    MessageDetail,
    MessageSummary,
    Repair,
)
from outbox.application.staff import KeysetPage
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
        return cls.built(repair, action=repair.action.value)


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
        return cls.built(
            item,
            purpose=item.purpose.value,
            channel=item.channel.value,
            attempt_count=item.attempts,
            failure_class=item.failure_class.value,
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
        return cls.built(
            item,
            purpose=item.purpose.value,
            channel=item.channel.value,
            state=item.state.value,
            attempt_count=item.attempts,
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
        return cls.built(
            attempt, failure_class=attempt.failure_class.value if attempt.failure_class else None
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
        return cls.built(
            detail,
            purpose=detail.purpose.value,
            channel=detail.channel.value,
            state=detail.state.value,
            attempt_count=detail.attempts,
            dead_letter_reason=detail.dead_letter_reason.value
            if detail.dead_letter_reason
            else None,
            attempts=[AttemptOut.of(a) for a in detail.history],
        )


class ReissueView(Out, frozen=True):
    """The new message a reissue or requeue enqueued (for a replay: the first request's)."""

    dead_letter_id: UUID
    message_id: UUID
    expires_at: datetime | None
    replayed: bool
    # The paused provider the new message waits for (it goes out once staff resume it);
    # null when it goes out as usual.
    waits_for_provider: str | None

    @classmethod
    def of(cls, receipt: CopyReceipt) -> ReissueView:
        """The body for ``receipt``."""
        return cls.built(receipt, waits_for_provider=receipt.waits_for)
