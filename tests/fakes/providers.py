"""A delivery provider that records what it was asked to send and follows a script of failures."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import attrs

from outbox.application.delivery.errors import DeliveryFailed
from outbox.application.delivery.ports import Delivery
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass


@attrs.define
class RecordingProvider:
    """Accepts every delivery unless a failure is queued for it; keeps ``sent`` and ``tried``.

    ``script`` holds what the next sends do, in order: a DeliveryFailure to refuse with,
    an Exception to raise as is, or None to accept. ``failures_for`` refuses a
    destination every time. ``delay`` makes every send take that long;
    ``before_send`` is called with each delivery first (to make the world change mid-send).
    """

    provider_name: str = "recording"
    sent: list[Delivery] = attrs.field(factory=list)
    tried: list[Delivery] = attrs.field(factory=list)
    script: deque[DeliveryFailure | Exception | None] = attrs.field(factory=deque)
    failures_for: dict[str, DeliveryFailure] = attrs.field(factory=dict)
    delay: float = 0.0
    before_send: Callable[[Delivery], None] | None = None

    @property
    def name(self) -> str:
        """The provider's name."""
        return self.provider_name

    def fail_next(self, *steps: DeliveryFailure | Exception | None) -> None:
        """Queue what the next sends do."""
        self.script.extend(steps)

    def refuse(self, failure_class: FailureClass, code: str = "") -> DeliveryFailure:
        """A failure of ``failure_class``, for scripts."""
        return DeliveryFailure(failure_class=failure_class, code=code)

    async def send(self, delivery: Delivery) -> str:
        """Record the delivery, then accept it or fail as scripted."""
        self.tried.append(delivery)
        if self.before_send is not None:
            self.before_send(delivery)
        if self.delay:
            await asyncio.sleep(self.delay)
        step = self.script.popleft() if self.script else None
        if step is None:
            step = self.failures_for.get(delivery.destination)
        if isinstance(step, DeliveryFailure):
            raise DeliveryFailed(step)
        if isinstance(step, Exception):
            raise step
        self.sent.append(delivery)
        return f"{self.provider_name}-{len(self.sent)}"
