"""A tenant business fact and what a producer appends (the seed's OX-E1)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from outbox.domain.errors import DomainError

EVENT_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$")
AGGREGATE_TYPE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_KEY = 200


class InvalidDomainEvent(DomainError):
    """An event a producer may not append as given; the message names the field."""


def _event_type(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not EVENT_TYPE.match(value):
        raise InvalidDomainEvent(f"{attribute.name}: expected module.event_name, got {value!r}")


def _aggregate_type(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not AGGREGATE_TYPE.match(value):
        raise InvalidDomainEvent(f"{attribute.name}: expected a lowercase word, got {value!r}")


def _bounded(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not 1 <= len(value) <= MAX_KEY:
        raise InvalidDomainEvent(f"{attribute.name}: expected 1 to {MAX_KEY} characters")


def _positive(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise InvalidDomainEvent(f"{attribute.name}: expected a version from 1, got {value}")


@attrs.frozen(kw_only=True)
class NewDomainEvent:
    """What a producer appends, inside its own transaction, with its business change.

    The producer module is not here: the database takes it from the calling role.
    """

    organization_id: UUID
    event_type: str = attrs.field(validator=_event_type)
    contract_version: int = attrs.field(validator=_positive)
    aggregate_type: str = attrs.field(validator=_aggregate_type)
    aggregate_id: str = attrs.field(validator=_bounded)
    idempotency_key: str = attrs.field(validator=_bounded)
    payload: Mapping[str, Any]
    occurred_at: datetime
    trace_context: str | None = None

    @property
    def module(self) -> str:
        """The module whose event type this is (``identity`` for ``identity.account_verified``)."""
        return self.event_type.split(".", 1)[0]
