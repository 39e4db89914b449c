"""The notifications' operator views on the wire (``outboxctl notifications … --json``): the
catalogue, an intent's frozen snapshots, the snapshots a staff request took, and opt-outs.
A destination is always masked; variables never hold a secret (the snapshot refuses one)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from outbox.application.notifications.ports import OptOut, TakenSnapshot
from outbox.domain.notifications.catalogue import Category
from outbox.domain.notifications.snapshots import Snapshot
from outbox.entrypoints.wire import Out


class CategoryView(Out, frozen=True):
    """One category of the catalogue: its channels, template and locales."""

    code: str
    channels: list[str]
    template: str
    locales: list[str]
    fallback_locale: str
    description: str

    @classmethod
    def of(cls, category: Category) -> CategoryView:
        """The body for ``category``."""
        channels = [channel.value for channel in category.channels]
        return cls.built(category, channels=channels, locales=sorted(category.locales))


class CategoriesView(Out, frozen=True):
    """The catalogue."""

    items: list[CategoryView]


class SnapshotView(Out, frozen=True):
    """One channel's frozen delivery of an intent, and its message's state."""

    id: UUID
    channel: str
    destination: str
    template: str
    locale: str
    variables: dict[str, str]
    decision: str
    message_id: UUID | None
    message_state: str | None
    created_at: datetime


class IntentView(Out, frozen=True):
    """An intent and its snapshots."""

    intent_id: UUID
    intent_key: str
    category: str
    recipient_id: UUID
    source: str
    deliveries: list[SnapshotView]

    @classmethod
    def of(cls, snapshots: Sequence[Snapshot], states: Sequence[str | None]) -> IntentView:
        """The body for an intent's ``snapshots`` and their messages' ``states``."""
        first = snapshots[0]
        deliveries = [
            SnapshotView.built(
                s,
                destination=s.masked_destination,
                variables=dict(s.variables),
                message_state=state,
            )
            for s, state in zip(snapshots, states, strict=True)
        ]
        return cls.built(first, source=first.source.value, deliveries=deliveries)


class TakenView(Out, frozen=True):
    """A snapshot a request took (``created``) or found taken before."""

    id: UUID
    intent_id: UUID
    channel: str
    decision: str
    message_id: UUID | None
    created: bool


class TakenListView(Out, frozen=True):
    """What a staff request took."""

    items: list[TakenView]

    @classmethod
    def of(cls, taken: Sequence[TakenSnapshot]) -> TakenListView:
        """The body for ``taken``."""
        return cls(items=[TakenView.built(t, id=t.snapshot_id) for t in taken])


class OptOutView(Out, frozen=True):
    """One opt-out of a category on a channel."""

    category: str
    channel: str
    opted_out_at: datetime


class OptOutsView(Out, frozen=True):
    """A recipient's opt-outs."""

    recipient_id: UUID
    items: list[OptOutView]

    @classmethod
    def of(cls, recipient_id: UUID, rows: Sequence[OptOut]) -> OptOutsView:
        """The body for ``rows``."""
        return cls(recipient_id=recipient_id, items=[OptOutView.built(row) for row in rows])
