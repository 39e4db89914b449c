"""Where a new copy of a dead letter would go: refused when no provider sends its channel,
waiting while staff have that provider paused.

A reissue replaces the person's code and a requeue makes a new message; either is worth doing
only if some worker will send it. The channel → provider map is configuration
(``OUTBOX_CHANNEL_*``, which the admin listener and ``outboxctl`` read as the worker does);
the pauses are in the database.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from outbox.application.delivery.errors import DeadLetterRefused
from outbox.application.staff import StaffActor
from outbox.domain.channels import Channel
from outbox.domain.delivery.dead_letters import Refusal


class NoProvider(DeadLetterRefused):
    """No provider sends ``channel``: a copy would dead-letter at once, so none is made."""

    def __init__(self, channel: Channel) -> None:
        super().__init__(Refusal.NO_PROVIDER)
        self.channel = channel


class PausedProviderReads(Protocol):
    """The providers staff paused, read through the staff gate."""

    async def paused_providers(self, *, actor: StaffActor | None) -> frozenset[str]:
        """Every paused provider's name, read as ``actor`` (None: the database operator);
        raises StaffRequired or StepUpRequired for a caller the database refuses."""
        ...


@attrs.frozen
class ChannelRoutes:
    """Which provider sends each channel, as the settings say.

    A channel mapped to None has no provider; a channel absent is one the settings do not
    name (a process that does not send, in production, without ``OUTBOX_CHANNEL_*``): it is
    not refused, since nothing here knows better.
    """

    providers: Mapping[Channel, str | None] = attrs.field(factory=dict)

    def sends(self, channel: Channel) -> bool:
        """Whether a message on ``channel`` may be sent (False only when the settings say no
        provider sends it)."""
        return channel not in self.providers or self.providers[channel] is not None

    def provider_for(self, channel: Channel) -> str | None:
        """The provider that sends ``channel``, if the settings name one."""
        return self.providers.get(channel)


@attrs.frozen(kw_only=True)
class CopyRouter:
    """Decides what will become of a copy on a channel before it is made."""

    routes: ChannelRoutes = attrs.field(factory=ChannelRoutes)
    pauses: PausedProviderReads | None = None  # None: pauses are not read (tests, fakes)

    async def paused(self, actor: StaffActor | None) -> frozenset[str]:
        """The paused providers' names (none when pauses are not read)."""
        if self.pauses is None:
            return frozenset()
        return await self.pauses.paused_providers(actor=actor)

    async def waits_for(self, *, actor: StaffActor | None, channel: Channel) -> str | None:
        """The paused provider a copy on ``channel`` would wait for, None when it goes out as
        usual; raises NoProvider when no provider sends ``channel``, and StaffRequired or
        StepUpRequired for a caller the database refuses."""
        if not self.routes.sends(channel):
            raise NoProvider(channel)
        provider = self.routes.provider_for(channel)
        if provider is None:
            return None
        return provider if provider in await self.paused(actor) else None
