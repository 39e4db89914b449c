"""Opt a recipient out of a category (on some or every channel of it), or back in."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import attrs

from outbox.application.errors import InvalidRequest
from outbox.application.notifications.ports import ConsentStore, OptOut
from outbox.domain.channels import Channel
from outbox.domain.notifications.catalogue import Catalogue, Category


@attrs.frozen(kw_only=True)
class ChangeConsent:
    """Consent changes, checked against the catalogue."""

    catalogue: Catalogue
    store: ConsentStore

    def _channels(self, category: Category, channels: Sequence[Channel]) -> tuple[Channel, ...]:
        for channel in channels:
            if not category.offers(channel):
                raise InvalidRequest(f"channel: {category.code} is not sent by {channel.value}")
        return tuple(channels) or category.channels

    async def opt_out(
        self, recipient_id: UUID, category: str, channels: Sequence[Channel] = ()
    ) -> int:
        """Opt out of ``category`` on ``channels`` (default: all of its channels); how many
        opt-outs were new. Raises UnknownCategory, or InvalidRequest for a channel it lacks."""
        known = self.catalogue.category(category)
        return await self.store.opt_out(recipient_id, known.code, self._channels(known, channels))

    async def opt_in(
        self, recipient_id: UUID, category: str, channels: Sequence[Channel] = ()
    ) -> int:
        """Lift the opt-outs of ``category`` on ``channels`` (default: all); how many."""
        known = self.catalogue.category(category)
        return await self.store.opt_in(recipient_id, known.code, self._channels(known, channels))

    async def opt_outs(self, recipient_id: UUID) -> Sequence[OptOut]:
        """The recipient's opt-outs."""
        return await self.store.opt_outs(recipient_id)
