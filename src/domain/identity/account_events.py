"""The domain events the identity module appends about an account.

An account is not a tenant: its events belong to the platform organization (the nil UUID).
The aggregate is the identity; the idempotency key is derived from the change itself (the
challenge that was answered, the revocation's own id), so the same change can never be
appended twice. A payload carries ids, the change and times only: never an identifier's
value, a code, a token or a destination. The one exception is the masked identifier of an
added sign-in method, which the owner's notice shows (``+34***78``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.destinations import mask
from outbox.domain.errors import DomainError
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.identity.identities import LoginIdentifier
from outbox.domain.identity.security_changes import SecurityChange

PLATFORM_ORGANIZATION = UUID(int=0)
AGGREGATE_TYPE = "identity"
CONTRACT_VERSION = 1


class AccountEvent(enum.StrEnum):
    """The identity module's event types; each is published at contract version 1."""

    ACCOUNT_VERIFIED = "identity.account_verified"
    SIGN_IN_METHOD_ADDED = "identity.sign_in_method_added"
    PASSWORD_RESET = "identity.password_reset"  # noqa: S105 - an event type, not a password
    SESSIONS_REVOKED = "identity.sessions_revoked"

    @property
    def change(self) -> str:
        """The event's name without its module (``account_verified``)."""
        return self.value.split(".", 1)[1]


def _event(
    kind: AccountEvent,
    *,
    identity_id: UUID,
    change_id: UUID,
    now: datetime,
    payload: dict[str, Any],
) -> NewDomainEvent:
    return NewDomainEvent(
        organization_id=PLATFORM_ORGANIZATION,
        event_type=kind.value,
        contract_version=CONTRACT_VERSION,
        aggregate_type=AGGREGATE_TYPE,
        aggregate_id=str(identity_id),
        idempotency_key=f"{kind.change}:{change_id}",
        payload={
            "identity_id": str(identity_id),
            "change": kind.change,
            "occurred_at": now.isoformat(),
            **payload,
        },
        occurred_at=now,
    )


def account_verified(
    *, identity_id: UUID, challenge_id: UUID, channel: Channel, now: datetime
) -> NewDomainEvent:
    """The sign-up challenge ``challenge_id`` was answered: the account's first identifier is
    verified and its password set."""
    return _event(
        AccountEvent.ACCOUNT_VERIFIED,
        identity_id=identity_id,
        change_id=challenge_id,
        now=now,
        payload={"challenge_id": str(challenge_id), "channel": channel.value},
    )


def sign_in_method_added(
    *,
    identity_id: UUID,
    challenge_id: UUID,
    channel: Channel,
    masked_identifier: str,
    now: datetime,
) -> NewDomainEvent:
    """A new identifier, verified at ``now``, was attached to the account."""
    return _event(
        AccountEvent.SIGN_IN_METHOD_ADDED,
        identity_id=identity_id,
        change_id=challenge_id,
        now=now,
        payload={
            "challenge_id": str(challenge_id),
            "channel": channel.value,
            "identifier": masked_identifier,
        },
    )


def password_reset(
    *, identity_id: UUID, challenge_id: UUID, sessions_revoked: int, now: datetime
) -> NewDomainEvent:
    """A password recovery was confirmed: a new password, and every session ended."""
    return _event(
        AccountEvent.PASSWORD_RESET,
        identity_id=identity_id,
        change_id=challenge_id,
        now=now,
        payload={"challenge_id": str(challenge_id), "sessions_revoked": sessions_revoked},
    )


def sessions_revoked(
    *, identity_id: UUID, revocation_id: UUID, session_id: UUID, count: int, now: datetime
) -> NewDomainEvent:
    """Every session of the account was ended from session ``session_id``."""
    return _event(
        AccountEvent.SESSIONS_REVOKED,
        identity_id=identity_id,
        change_id=revocation_id,
        now=now,
        payload={
            "revocation_id": str(revocation_id),
            "session_id": str(session_id),
            "sessions_revoked": count,
        },
    )


class UnreadableAccountEvent(DomainError):
    """A delivered event is not an identity account event this code can read; names why."""


@attrs.frozen(kw_only=True)
class AccountChange:
    """What a delivered account event says happened, as its owner's notice tells it.

    ``told_before_only``: only the identifiers verified before the change hear of it (an added
    method's own identifier, verified at the change, is not the one to warn).
    """

    identity_id: UUID
    change: SecurityChange
    occurred_at: datetime
    masked_identifier: str | None = None
    told_before_only: bool = False

    def tells(self, login: LoginIdentifier) -> bool:
        """Whether ``login``, a verified identifier of the account now, hears of the change.

        An added method is told to the identifiers verified before it: the new one was verified
        at the change itself, so one verified in the same instant is told unless its mask is
        the new one's (the payload holds no more of it than the mask).
        """
        if login.verified_at is None:
            return False
        if not self.told_before_only or login.verified_at < self.occurred_at:
            return True
        return login.verified_at == self.occurred_at and mask(login.value) != (
            self.masked_identifier
        )


def read_account_event(
    *, event_type: str, contract_version: int, payload: Mapping[str, Any], occurred_at: datetime
) -> AccountChange:
    """The change an account event of contract version 1 carries.

    Raises UnreadableAccountEvent for another type or version, or a payload without the
    account's id (or, for an added method, its masked identifier).
    """
    try:
        kind = AccountEvent(event_type)
    except ValueError:
        raise UnreadableAccountEvent("event_type: not an identity account event") from None
    if contract_version != CONTRACT_VERSION:
        raise UnreadableAccountEvent(f"contract_version: {contract_version} is not read here")
    try:
        identity_id = UUID(str(payload["identity_id"]))
    except (KeyError, ValueError):
        raise UnreadableAccountEvent("payload.identity_id: expected a UUID") from None
    if kind is not AccountEvent.SIGN_IN_METHOD_ADDED:
        return AccountChange(
            identity_id=identity_id, change=SecurityChange(kind.change), occurred_at=occurred_at
        )
    masked = payload.get("identifier")
    if not isinstance(masked, str) or not masked:
        raise UnreadableAccountEvent("payload.identifier: expected the masked identifier")
    return AccountChange(
        identity_id=identity_id,
        change=SecurityChange.SIGN_IN_METHOD_ADDED,
        occurred_at=occurred_at,
        masked_identifier=masked,
        told_before_only=True,
    )
