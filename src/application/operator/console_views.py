"""What the operator console shows besides the queue views: activity, audit, pauses and lag.

Like every operator view, none holds a code, a token, a seal or a full destination.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class ActivityMinute:
    """Messages created, published and dead-lettered in one minute."""

    minute: datetime
    created: int
    published: int
    dead_lettered: int


@attrs.frozen(kw_only=True)
class AuditEntry:
    """One staff action on a message or an event: who, what, when, and why if they said."""

    action: str  # reissue, requeue, republish, release, ...
    actor_id: UUID | None  # None: the database operator
    subject_id: UUID | None  # the repaired message or dead letter
    result_id: UUID | None  # the copy, new code or record the action made
    reason: str | None
    at: datetime


@attrs.frozen(kw_only=True)
class ProviderPause:
    """A provider staff paused: no worker sends through it until it is resumed."""

    provider: str
    paused_by: UUID
    reason: str
    paused_at: datetime


@attrs.frozen(kw_only=True)
class ConsumerLag:
    """One consumer's backlog: deliveries not yet done, the oldest's age, its dead letters."""

    consumer: str
    owner_module: str
    active: bool
    events_behind: int
    oldest_undelivered_age: timedelta | None
    dead_letters: int
