"""Delivery receipts: what a provider's webhook says became of a message.

A receipt is evidence, kept once and never changed. Its event moves the message's delivery
state forward only (``delivery_states.advance``); a hard bounce or a complaint suppresses
the destination for every purpose.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs


class Provider(enum.StrEnum):
    """The providers whose webhooks are received; the value is what attempts record."""

    SES = "ses"
    BREVO = "brevo"
    WASENDER = "wasender"


class ReceiptEvent(enum.StrEnum):
    """What a receipt means, whatever the provider calls it; the value is what tables store."""

    DELIVERED = "delivered"  # the recipient's server (or phone) accepted it
    BOUNCED = "bounced"  # a permanent (hard) bounce: the address does not take mail
    SOFT_BOUNCED = "soft_bounced"  # a transient bounce: nothing moves, nothing is suppressed
    COMPLAINED = "complained"  # the recipient reported it as spam
    FAILED = "failed"  # the provider refused to send it after accepting it (SES Reject)
    OTHER = "other"  # opens, clicks, anything else: kept, no effect

    @property
    def suppresses(self) -> bool:
        """Whether the destination must receive nothing more, for any purpose."""
        return self in (ReceiptEvent.BOUNCED, ReceiptEvent.COMPLAINED)


# The longest provider word for an event (SES bounce type, Brevo event name) kept.
MAX_DETAIL = 200


@attrs.frozen(kw_only=True)
class Receipt:
    """One verified receipt, sanitised: ``raw`` holds no full address and no secret.

    ``event_id`` identifies this event at the provider (the same event delivered twice has
    the same one); ``provider_message_id`` is the id the provider answered when it accepted
    the message, which the publishing attempt recorded.
    """

    provider: Provider
    event_id: str
    provider_message_id: str
    event: ReceiptEvent
    occurred_at: datetime
    detail: str = ""
    raw: Mapping[str, Any] = attrs.field(factory=dict, eq=False)


@attrs.frozen(kw_only=True)
class RecordedReceipt:
    """What recording a receipt did: the message it names (None: unknown id, ignored), its
    delivery state now, and whether the receipt was a duplicate or suppressed the destination.
    """

    receipt_id: int
    message_id: UUID | None  # None: a receipt that named no message we sent
    duplicate: bool
    delivery_state: str | None
    suppressed: bool
