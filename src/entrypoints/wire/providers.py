"""Provider pauses on the wire: the staff routes and ``outboxctl providers … --json``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from outbox.application.operator.console_views import ProviderPause
from outbox.entrypoints.wire import Out


class ProviderPauseView(Out, frozen=True):
    """A paused provider: no worker sends through it until it is resumed."""

    provider: str
    paused_by: UUID
    reason: str
    paused_at: datetime


class ProviderPausesView(Out, frozen=True):
    """Every paused provider, by name."""

    items: list[ProviderPauseView]

    @classmethod
    def of(cls, rows: Sequence[ProviderPause]) -> ProviderPausesView:
        """The body for ``rows``."""
        return cls(items=[ProviderPauseView.built(row) for row in rows])


class ProviderChangeView(Out, frozen=True):
    """What a pause or a resumption did: ``changed`` is false when there was nothing to do
    (already paused, or not paused)."""

    provider: str
    paused: bool
    changed: bool
