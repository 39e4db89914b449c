"""Intents and their frozen snapshots (the seed's OX-E3).

An intent asks for one notification of a catalogue category to one recipient, under a key
that names what caused it (``identity.account_verified:<event id>``): the same key and
recipient never notify twice. Taking its snapshot decides, once, everything a send needs:
per channel of the category the recipient has an address on, the destination, the template,
the locale and the consent policy. A channel the recipient opted out of is recorded as
``suppressed_by_consent`` and sends nothing. The snapshot never changes afterwards; the
worker sends what it says and never re-derives policy.

Variables are what the template shows; never a secret (no code, link, token or password: the
renderer reserves ``code`` and ``link``, and a notification carries no secret at all).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from uuid import UUID

import attrs

from outbox.domain.channels import Channel
from outbox.domain.destinations import mask, normalize
from outbox.domain.errors import DomainError
from outbox.domain.notifications.catalogue import VARIABLE_NAME, Category

INTENT_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
MAX_VARIABLES = 20
MAX_VALUE = 500
# Names a secret would go by; a notification's variables may never carry one. The first two
# are the renderer's own (the opened secret and its link); the others are refused anywhere in
# a name (``reset_token``).
SECRET_NAMES = frozenset({"code", "link"})
SECRET_WORDS = ("token", "password", "secret")
# A value may not carry a link: a scheme, "www.", or a host name in any script (the same rule
# notifications.take_snapshot applies; the ideographic full stops count as dots).
LINK = re.compile(
    r"[^\W\d_][\w+.-]*:/|www[.\u3002\uff0e\uff61]|[\w-][.\u3002\uff0e\uff61][^\W\d_]{2,}",
    re.IGNORECASE,
)


class InvalidIntent(DomainError):
    """An intent breaks a rule; the message names the field."""


class IntentSource(enum.StrEnum):
    """What asked for the notification."""

    EVENT = "event"  # a domain event, through a consumer
    STAFF = "staff"  # a staff member or the API


class Decision(enum.StrEnum):
    """What the snapshot decided for one channel."""

    SEND = "send"
    SUPPRESSED_BY_CONSENT = "suppressed_by_consent"


def _variables(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(value))


def check_variables(variables: Mapping[str, object]) -> None:
    """Raise InvalidIntent unless ``variables`` are at most 20 named strings, none a secret."""
    if len(variables) > MAX_VARIABLES:
        raise InvalidIntent(f"variables: at most {MAX_VARIABLES}")
    for name, value in variables.items():
        if not VARIABLE_NAME.match(name):
            raise InvalidIntent(f"variables: {name[:64]!r} is not a lowercase name")
        if name in SECRET_NAMES or any(word in name for word in SECRET_WORDS):
            raise InvalidIntent(f"variables.{name}: a notification carries no secret")
        if not isinstance(value, str) or len(value) > MAX_VALUE or LINK.search(value):
            raise InvalidIntent(
                f"variables.{name}: expected text of at most {MAX_VALUE} characters, without a link"
            )


@attrs.frozen(kw_only=True)
class Intent:
    """One notification of ``category`` for ``recipient_id``, asked for under ``key``."""

    key: str
    category: str
    recipient_id: UUID
    source: IntentSource = IntentSource.EVENT
    variables: Mapping[str, str] = attrs.field(factory=dict, converter=_variables)

    def __attrs_post_init__(self) -> None:
        if not INTENT_KEY.match(self.key):
            raise InvalidIntent("key: expected 1 to 200 of A-Z a-z 0-9 . _ : -")
        check_variables(self.variables)


@attrs.frozen(kw_only=True)
class Address:
    """One verified destination of a recipient."""

    channel: Channel
    value: str


@attrs.frozen(kw_only=True)
class Recipient:
    """Who a notification goes to, as the recipient directory resolves them."""

    id: UUID
    addresses: tuple[Address, ...]
    preferred_locale: str | None = None


@attrs.frozen(kw_only=True)
class PlannedDelivery:
    """What a snapshot of one channel will hold, before consent is applied."""

    snapshot_id: UUID
    channel: Channel
    destination: str = attrs.field(repr=False)
    masked_destination: str
    template: str
    locale: str
    variables: Mapping[str, str] = attrs.field(converter=_variables)


def plan(
    intent: Intent, category: Category, recipient: Recipient, *, ids: Sequence[UUID]
) -> tuple[PlannedDelivery, ...]:
    """One planned delivery per channel of ``category`` the recipient has an address on (the
    first one the directory lists), in the category's channel order, numbered from ``ids``.

    Raises InvalidIntent when the intent is for another category or recipient.
    """
    if intent.category != category.code:
        raise InvalidIntent("category: the intent names another category")
    if intent.recipient_id != recipient.id:
        raise InvalidIntent("recipient_id: the directory resolved another recipient")
    unknown = sorted(set(intent.variables) - category.variables)
    if unknown:
        allowed = ", ".join(sorted(category.variables)) or "none"
        raise InvalidIntent(
            f"variables: {category.code} carries no variable {unknown[0]!r} (allowed: {allowed})"
        )
    locale = category.locale_for(recipient.preferred_locale)
    first: dict[Channel, str] = {}
    for address in recipient.addresses:
        if category.offers(address.channel) and address.channel not in first:
            first[address.channel] = normalize(address.channel, address.value)
    chosen = [channel for channel in category.channels if channel in first]
    if len(ids) < len(chosen):
        raise ValueError("plan: one id per channel is needed")
    return tuple(
        PlannedDelivery(
            snapshot_id=snapshot_id,
            channel=channel,
            destination=first[channel],
            masked_destination=mask(first[channel]),
            template=category.template,
            locale=locale,
            variables=intent.variables,
        )
        for snapshot_id, channel in zip(ids, chosen, strict=False)
    )


def decide(*, opted_out: bool) -> Decision:
    """The consent policy: an opt-out of the category on the channel suppresses it."""
    return Decision.SUPPRESSED_BY_CONSENT if opted_out else Decision.SEND


@attrs.frozen(kw_only=True)
class Snapshot:
    """A frozen decision for one (intent, channel): immutable once taken.

    ``message_id`` is the outbox message that delivers it (the snapshot's own id), None when
    the snapshot suppressed it.
    """

    id: UUID
    intent_id: UUID
    intent_key: str
    category: str
    recipient_id: UUID
    source: IntentSource
    channel: Channel
    masked_destination: str
    template: str
    locale: str
    variables: Mapping[str, str] = attrs.field(converter=_variables)
    decision: Decision
    created_at: datetime

    @property
    def message_id(self) -> UUID | None:
        """The outbox message of this delivery, None when it was suppressed."""
        return self.id if self.decision is Decision.SEND else None
