"""A per-process circuit breaker for providers whose whole account is suspended.

When a provider answers PROVIDER_SUSPENDED, it is paused until a probe time; messages
for it are released back to pending (no attempt spent) until then. After the pause one
message is let through as a probe: if it is accepted the provider resumes, if it is
suspended again the pause starts over. Each worker process keeps its own breaker; see
docs/operations.md for why that is enough.
"""

from __future__ import annotations

from datetime import datetime

import attrs


@attrs.define
class _Pause:
    until: datetime
    probing: bool = False


@attrs.define
class ProviderBreaker:
    """Remembers which providers are paused, until when, and whether a probe is in flight."""

    _pauses: dict[str, _Pause] = attrs.field(factory=dict, alias="_pauses")

    def admit(self, provider: str, now: datetime) -> datetime | None:
        """Return None if a send to ``provider`` may go ahead now, else when to try again.

        Once the pause has run out, exactly one caller is admitted as the probe; others
        wait for its answer.
        """
        pause = self._pauses.get(provider)
        if pause is None:
            return None
        if now < pause.until or pause.probing:
            return pause.until
        pause.probing = True
        return None

    def trip(self, provider: str, until: datetime) -> bool:
        """Pause ``provider`` until ``until``; return True if it was not paused before."""
        newly = provider not in self._pauses
        self._pauses[provider] = _Pause(until=until)
        return newly

    def succeed(self, provider: str) -> bool:
        """Record an accepted send; return True if this resumed a paused provider."""
        return self._pauses.pop(provider, None) is not None

    def settle(self, provider: str) -> None:
        """Record a probe that ended in anything but acceptance or suspension: probe again."""
        pause = self._pauses.get(provider)
        if pause is not None:
            pause.probing = False

    def paused(self) -> dict[str, datetime]:
        """The paused providers and when each is probed next."""
        return {name: pause.until for name, pause in self._pauses.items()}
