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
class EventActivityMinute:
    """Tenant events' records waiting at a minute's end, and published and dead-lettered in it."""

    minute: datetime
    pending: int  # pending or leased when the minute ended (the current minute: now)
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


# How often a worker lane says it runs; outbox.workers counts it gone after three beats.
WORKER_BEAT = timedelta(seconds=10)


@attrs.frozen(kw_only=True)
class WorkerLane:
    """One lane of one worker process: since when it runs, when it last said so, whether it
    still runs (not stopped, and heard from within three beats), and how long the lane's
    oldest due work has waited (None: nothing waits)."""

    owner: str  # the process's lease owner name: host and pid
    lane: str  # security, events or consumers
    started_at: datetime
    seen_at: datetime
    stopped_at: datetime | None
    running: bool
    lag: timedelta | None
