"""What operators see of receipts and suppressions; destinations always masked."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class ReceiptView:
    """One receipt of a message: who said what, and when (the raw body stays in the table)."""

    id: int
    provider: str
    event: str
    detail: str
    occurred_at: datetime
    received_at: datetime


@attrs.frozen(kw_only=True)
class SuppressionView:
    """One suppression: the masked destination, why and since when, lifted or not."""

    id: UUID
    destination: str
    channel: str
    cause: str  # hard_bounce, complaint or operator
    reason: str
    created_at: datetime
    lifted_at: datetime | None


@attrs.frozen(kw_only=True)
class SuppressionChange:
    """What an add or a lift did: the suppression and the masked destination.

    ``changed`` is False for an add of a destination already suppressed.
    """

    id: UUID
    destination: str
    changed: bool
