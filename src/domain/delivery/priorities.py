"""How urgent a message is, and the claim's order: priority first, never starving.

The claim serves higher priorities first, but one slot in ten of every batch (rounded up; a
batch of one has none) goes to the oldest due messages whatever their priority. So a flood
of notifications never delays a code by more than one batch, and a message of any priority
is claimed once the messages that became due before it have been: each batch moves that
oldest-first frontier by at least one row, however many higher ones keep arriving.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar
from uuid import UUID

from outbox.domain.purposes import Purpose


class Priority(enum.IntEnum):
    """Three levels, higher served first; the numbers are what the SQL API takes."""

    LOW = 0  # bulk: newsletters, digests
    NORMAL = 1  # plain notifications
    HIGH = 2  # security: codes, magic links, invitations, security notices

    @classmethod
    def default_for(cls, purpose: Purpose) -> Priority:
        """Security purposes (codes, links, invitations, security notices) are high; plain
        notifications are normal."""
        return cls.HIGH if purpose.is_security else cls.NORMAL


FAIR_SHARE = 10  # one slot in this many goes to the oldest due messages


def fair_slots(limit: int) -> int:
    """How many of a batch of ``limit`` go oldest-first, whatever the priority."""
    return 0 if limit < 2 else math.ceil(limit / FAIR_SHARE)


T = TypeVar("T")
# A candidate's place in the oldest-first order: (claimable at, created at, id).
ClaimKey = tuple[datetime, datetime, UUID]


def claim_order(
    due: Sequence[T], limit: int, *, key: Callable[[T], ClaimKey], priority: Callable[[T], int]
) -> list[T]:
    """The candidates one claim of ``limit`` takes, fair slots first, then by priority."""
    oldest = sorted(due, key=key)
    taken = oldest[: fair_slots(limit)]
    chosen = {id(item) for item in taken}
    rest = sorted(
        (item for item in oldest if id(item) not in chosen),
        key=lambda item: (-priority(item), key(item)),
    )
    return taken + rest[: limit - len(taken)]
