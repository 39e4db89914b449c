"""Pause or resume a provider for every worker, audited, with a reason."""

from __future__ import annotations

import re

import attrs

from outbox.application.errors import InvalidField
from outbox.application.operator.console_ports import ProviderPauseStore
from outbox.application.ports import Telemetry
from outbox.application.staff import StaffActor, check_reason
from outbox.domain.delivery.providers import PROVIDER_NAMES

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")


def check_provider(name: str) -> str:
    """The provider's name, stripped; raises InvalidField for anything but the name of a
    provider this package sends through (pausing a name no worker uses would pause nothing)."""
    stripped = name.strip()
    if _NAME.fullmatch(stripped) is None:
        raise InvalidField("provider", "a provider's name: lower-case letters, digits, - and _")
    if stripped not in PROVIDER_NAMES:
        known = ", ".join(sorted(PROVIDER_NAMES))
        raise InvalidField("provider", f"no provider {stripped!r}: expected one of {known}")
    return stripped


@attrs.frozen(kw_only=True)
class ProviderCommand:
    """Who pauses or resumes which provider, and why."""

    actor: StaffActor
    provider: str
    reason: str


@attrs.frozen(kw_only=True)
class PauseProvider:
    """Stops every worker sending through a provider; its messages wait, no attempt spent."""

    store: ProviderPauseStore
    telemetry: Telemetry

    async def __call__(self, command: ProviderCommand) -> bool:
        """Whether it was newly paused; raises InvalidField, StaffRequired or StepUpRequired."""
        provider, reason = check_provider(command.provider), check_reason(command.reason)
        changed = await self.store.pause(actor=command.actor, provider=provider, reason=reason)
        self.telemetry.event(
            "operator.provider.paused",
            level="warning",
            provider=provider,
            actor_id=str(command.actor.identity_id),
            changed=changed,
        )
        return changed


@attrs.frozen(kw_only=True)
class ResumeProvider:
    """Lets every worker send through a paused provider again."""

    store: ProviderPauseStore
    telemetry: Telemetry

    async def __call__(self, command: ProviderCommand) -> bool:
        """Whether it was paused; raises InvalidField, StaffRequired or StepUpRequired."""
        provider, reason = check_provider(command.provider), check_reason(command.reason)
        changed = await self.store.resume(actor=command.actor, provider=provider, reason=reason)
        self.telemetry.event(
            "operator.provider.resumed",
            provider=provider,
            actor_id=str(command.actor.identity_id),
            changed=changed,
        )
        return changed
