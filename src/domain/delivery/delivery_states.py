"""A sent message's delivery state, moved forward only by receipts.

The states form one total order, accepted < delivered < failed < bounced < complained,
and a receipt moves the state to the higher of the two. Taking the maximum is commutative,
associative and idempotent, so the same receipts give the same final state whatever order
they arrive in and however often each is delivered. The SQL twin is
``outbox.delivery_state_after`` (0030_receipt_functions.sql); a property test keeps the two
equal.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from outbox.domain.delivery.receipts import ReceiptEvent


class DeliveryState(enum.StrEnum):
    """Where a published message stands; the value is what tables store."""

    ACCEPTED = "accepted"  # the provider took it; no receipt has said more
    DELIVERED = "delivered"
    FAILED = "failed"
    BOUNCED = "bounced"
    COMPLAINED = "complained"

    @property
    def rank(self) -> int:
        """Its place in the order: a receipt never moves a state to a lower rank."""
        return _ORDER.index(self)


_ORDER = (
    DeliveryState.ACCEPTED,
    DeliveryState.DELIVERED,
    DeliveryState.FAILED,
    DeliveryState.BOUNCED,
    DeliveryState.COMPLAINED,
)
_REACHED = {
    ReceiptEvent.DELIVERED: DeliveryState.DELIVERED,
    ReceiptEvent.FAILED: DeliveryState.FAILED,
    ReceiptEvent.BOUNCED: DeliveryState.BOUNCED,
    ReceiptEvent.COMPLAINED: DeliveryState.COMPLAINED,
}


def advance(state: DeliveryState, event: ReceiptEvent) -> DeliveryState:
    """The state after ``state`` receives ``event``: the higher of the two, never lower."""
    reached = _REACHED.get(event)
    if reached is None or reached.rank <= state.rank:
        return state
    return reached


def fold(events: Iterable[ReceiptEvent]) -> DeliveryState:
    """The state a message reaches from accepted through ``events``, in the order given."""
    state = DeliveryState.ACCEPTED
    for event in events:
        state = advance(state, event)
    return state
