"""The notifications context's ports: who a recipient is, and where snapshots live.

Notifications never imports identity: a recipient is resolved through ``RecipientDirectory``,
which the identity module's adapter implements (verified identifiers, preferred locale).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.notifications.snapshots import (
    Decision,
    Intent,
    PlannedDelivery,
    Recipient,
    Snapshot,
)


class RecipientDirectory(Protocol):
    """Resolves a recipient's verified addresses and preferred locale."""

    async def resolve(self, recipient_id: UUID) -> Recipient | None:
        """The recipient with its verified addresses (emails first, oldest first), or None
        when there is no such recipient."""
        ...


@attrs.frozen(kw_only=True)
class TakenSnapshot:
    """What taking one snapshot answered: ``created`` is False when it existed already (the
    intent was asked for again), and then every field is the first snapshot's."""

    snapshot_id: UUID
    intent_id: UUID
    channel: Channel
    decision: Decision
    created: bool

    @property
    def message_id(self) -> UUID | None:
        """The outbox message delivering it, None when consent suppressed it."""
        return self.snapshot_id if self.decision is Decision.SEND else None


class NotificationStore(Protocol):
    """The snapshots, in the caller's transaction."""

    async def take_snapshot(
        self, intent: Intent, planned: PlannedDelivery, *, intent_id: UUID
    ) -> TakenSnapshot:
        """Record ``intent`` (under ``intent_id`` unless its key and recipient are recorded
        already) and the snapshot of ``planned``: consent applied now, and, when it sends, the
        outbox message of purpose ``notification`` (the snapshot's id) enqueued with it.

        A snapshot of that intent and channel taken before is answered unchanged. Raises
        InvalidRequest for an unknown category or a channel it does not offer.
        """
        ...


class NotificationScope(Protocol):
    """One open transaction: the recipient directory and the snapshots."""

    @property
    def recipients(self) -> RecipientDirectory:
        """The recipient directory in this transaction."""
        ...

    @property
    def notifications(self) -> NotificationStore:
        """The snapshots in this transaction."""
        ...


@attrs.frozen(kw_only=True)
class OptOut:
    """A recipient opted out of ``category`` on ``channel`` at ``opted_out_at``."""

    recipient_id: UUID
    category: str
    channel: Channel
    opted_out_at: datetime


class ConsentStore(Protocol):
    """The opt-outs, one per (recipient, category, channel)."""

    async def opt_out(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """Opt ``recipient_id`` out of ``category`` on ``channels``; how many were new."""
        ...

    async def opt_in(self, recipient_id: UUID, category: str, channels: Sequence[Channel]) -> int:
        """Lift those opt-outs; how many there were."""
        ...

    async def opt_outs(self, recipient_id: UUID) -> Sequence[OptOut]:
        """The recipient's opt-outs, by category then channel."""
        ...


@attrs.frozen(kw_only=True)
class NotificationView:
    """An intent's snapshots, each with its outbox message's state (None once purged or when
    suppressed)."""

    snapshots: tuple[Snapshot, ...]
    message_states: tuple[str | None, ...]


class NotificationReader(Protocol):
    """Reads the snapshots of an intent."""

    async def find(self, some_id: UUID) -> NotificationView | None:
        """The snapshots of the intent ``some_id`` names (an intent's id, a snapshot's or its
        message's), or None."""
        ...
