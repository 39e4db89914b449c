"""Which messages an operator asks for: the filters of ``outboxctl messages list``."""

from __future__ import annotations

import hashlib
from datetime import datetime
from uuid import UUID

import attrs

from outbox.application.errors import InvalidField
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.destinations import channel_of, normalize
from outbox.domain.errors import InvalidDestination
from outbox.domain.purposes import Purpose


def destination_digest(destination: str) -> str:
    """The SHA-256 (hex) of a destination as stored: what a search sends instead of it."""
    return hashlib.sha256(destination.encode("utf-8")).hexdigest()


def digest_of_destination(destination: str | None) -> str | None:
    """The digest of a searched destination in the one spelling messages store it in.

    Raises InvalidField for a value that is neither an e-mail address nor an E.164 number.
    """
    if destination is None:
        return None
    value = destination.strip()
    try:
        return destination_digest(normalize(channel_of(value), value))
    except InvalidDestination:
        raise InvalidField(
            "destination", "must be an e-mail address or an E.164 phone number"
        ) from None


@attrs.frozen(kw_only=True)
class MessageFilter:
    """Every condition a listed message meets; None means any.

    ``since`` is inclusive and ``until`` exclusive, both on the creation time; ``provider``
    matches a message any of whose attempts went through it; ``destination_digest`` is
    ``destination_digest`` of the exact destination.
    """

    state: State | None = None
    purpose: Purpose | None = None
    reason: FailureClass | None = None
    provider: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    message_id: UUID | None = None
    destination_digest: str | None = attrs.field(default=None, repr=False)
