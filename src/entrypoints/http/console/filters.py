"""The messages list's filters: read from a query string, written back into links and forms.

The destination never travels: the search form posts it, and the list's links carry only
its digest (``dest``), which the list matches and never shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlencode
from uuid import UUID

import attrs

from outbox.application.delivery.message_filters import MessageFilter, digest_of_destination
from outbox.application.errors import InvalidField
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import State
from outbox.domain.purposes import Purpose

FIELDS = ("state", "purpose", "failure", "provider", "since", "until", "id", "dest")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_LOCAL = "%Y-%m-%dT%H:%M"


@attrs.frozen(kw_only=True)
class ListFilter:
    """The filter fields as the page has them (text), and the MessageFilter they mean."""

    state: str | None = None
    purpose: str | None = None
    failure: str | None = None  # the dead letter's failure class
    provider: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    id: str | None = None
    dest: str | None = None

    @property
    def since_text(self) -> str:
        """``since`` for a datetime-local input."""
        return self.since.strftime(_LOCAL) if self.since else ""

    @property
    def until_text(self) -> str:
        """``until`` for a datetime-local input."""
        return self.until.strftime(_LOCAL) if self.until else ""

    def where(self) -> MessageFilter:
        """The MessageFilter these fields mean."""
        return MessageFilter(
            state=State(self.state) if self.state else None,
            purpose=Purpose(self.purpose) if self.purpose else None,
            reason=FailureClass(self.failure) if self.failure else None,
            provider=self.provider,
            since=self.since,
            until=self.until,
            message_id=UUID(self.id) if self.id else None,
            destination_digest=self.dest,
        )

    def fields(self) -> list[tuple[str, str]]:
        """The non-empty fields as name, text pairs (hidden inputs, query strings)."""
        values = {
            "state": self.state,
            "purpose": self.purpose,
            "failure": self.failure,
            "provider": self.provider,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "id": self.id,
            "dest": self.dest,
        }
        return [(name, value) for name, value in values.items() if value]

    def query(self) -> str:
        """The fields as a query string."""
        return urlencode(self.fields())


def _choice(raw: str | None, allowed: frozenset[str], name: str) -> str | None:
    value = (raw or "").strip()
    if not value:
        return None
    if value not in allowed:
        raise InvalidField(name, "not one of the listed values")
    return value


def form_time(raw: str | None, name: str) -> datetime | None:
    """A time from a form or query (``datetime-local`` or ISO 8601), UTC when it names no
    zone; None when empty."""
    value = (raw or "").strip()
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidField(name, "a date and time, such as 2026-01-31T12:00") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def parse_filter(values: Mapping[str, str | None]) -> ListFilter:
    """The filter the fields name; raises InvalidField naming the first bad one.

    ``destination`` (from the search form only) is replaced by its digest.
    """
    message_id = (values.get("id") or "").strip() or None
    if message_id is not None:
        try:
            message_id = str(UUID(message_id))
        except ValueError:
            raise InvalidField("id", "a message id (a UUID)") from None
    dest = (values.get("dest") or "").strip() or None
    if dest is not None and _DIGEST.fullmatch(dest) is None:
        raise InvalidField("dest", "a destination digest")
    destination = (values.get("destination") or "").strip()
    if destination:
        dest = digest_of_destination(destination)
    provider = (values.get("provider") or "").strip() or None
    if provider is not None and not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", provider):
        raise InvalidField("provider", "a provider's name")
    return ListFilter(
        state=_choice(values.get("state"), frozenset(s.value for s in State), "state"),
        purpose=_choice(values.get("purpose"), frozenset(p.value for p in Purpose), "purpose"),
        failure=_choice(values.get("failure"), frozenset(r.value for r in FailureClass), "failure"),
        provider=provider,
        since=form_time(values.get("since"), "since"),
        until=form_time(values.get("until"), "until"),
        id=message_id,
        dest=dest,
    )
