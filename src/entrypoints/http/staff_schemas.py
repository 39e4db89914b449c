"""Response bodies of the staff routes (msgspec), mapped by hand from the operator views."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from outbox.application.operator.views import (
    Backlog,
    CopyReceipt,
    DeadLetterPage,
    DeadLetterSummary,
)
from outbox.entrypoints.http.schemas import Out


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
        )


class PageInfo(Out, frozen=True):
    """Whether rows lie beyond the page; pass ``endCursor`` as ``after`` for the next (older)
    page and ``startCursor`` as ``before`` for the previous (newer) one."""

    has_next_page: bool
    has_previous_page: bool
    start_cursor: UUID | None
    end_cursor: UUID | None


class DeadLetterPageView(Out, frozen=True):
    """A keyset page of dead letters, newest first."""

    items: list[DeadLetterView]
    page_info: PageInfo

    @classmethod
    def of(cls, page: DeadLetterPage) -> DeadLetterPageView:
        """The body for ``page``."""
        return cls(
            items=[DeadLetterView.of(item) for item in page.items],
            page_info=PageInfo(
                has_next_page=page.has_older,
                has_previous_page=page.has_newer,
                start_cursor=page.newer_cursor,
                end_cursor=page.older_cursor,
            ),
        )


class ReissueView(Out, frozen=True):
    """The new message a reissue enqueued (for a replay: the one the first request did)."""

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
