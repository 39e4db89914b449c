"""Consumer handlers: what a module registers, and how a handler says "not now".

A handler is an async callable ``handle(event, transaction)``. ``transaction`` is the open
database transaction the delivery completes in (for PostgreSQL, the psycopg AsyncConnection
inside it): write the effect through it and return. Raise ``RetryAfter`` to try again later,
``Reject`` to dead-letter the event now; any other exception is retried on the retry schedule and
dead-lettered at the consumer's attempt cap. Only an exception's class name is ever kept.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.domain.events.domain_events import EVENT_TYPE

CONSUMER_CODE = EVENT_TYPE  # `<module>.<name>`, as an event type
REJECT_CODE = re.compile(r"^[a-z][a-z0-9_]{0,99}$")

Handle = Callable[[DeliveredEvent, Any], Awaitable[None]]


class RetryAfter(Exception):
    """Raised by a handler: try this delivery again in ``seconds`` (an attempt is spent)."""

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise ValueError("RetryAfter needs a positive number of seconds")
        super().__init__(f"retry after {seconds} s")
        self.seconds = float(seconds)


class Reject(Exception):
    """Raised by a handler: this event can never be handled; dead-letter it with ``code``."""

    def __init__(self, code: str) -> None:
        if not REJECT_CODE.match(code):
            raise ValueError("a rejection code is a lowercase word of at most 100 characters")
        super().__init__(code)
        self.code = code


def _codes(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen(kw_only=True)
class ConsumerHandler:
    """``handle`` for ``consumer``'s events of ``event_types``, versions ``min..max``."""

    consumer: str
    event_types: frozenset[str] = attrs.field(converter=_codes)
    min_version: int = 1
    max_version: int = 1
    handle: Handle = attrs.field(eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not CONSUMER_CODE.match(self.consumer):
            raise ValueError(f"consumer: expected module.name, got {self.consumer!r}")
        if not self.event_types or not all(EVENT_TYPE.match(t) for t in self.event_types):
            raise ValueError("event_types: expected at least one module.event_name")
        if not 1 <= self.min_version <= self.max_version:
            raise ValueError(f"versions: the range {self.min_version}..{self.max_version} is empty")

    def accepts(self, event_type: str, contract_version: int) -> bool:
        """Whether this handler takes that type at that version."""
        return (
            event_type in self.event_types
            and self.min_version <= contract_version <= self.max_version
        )


@attrs.define
class ConsumerRegistry:
    """The handlers a process runs, by consumer; two handlers never take the same event."""

    _handlers: dict[str, list[ConsumerHandler]] = attrs.field(factory=dict, init=False)

    def add(self, handler: ConsumerHandler) -> None:
        """Register ``handler``; raises ValueError when it overlaps one already registered."""
        known = self._handlers.setdefault(handler.consumer, [])
        for other in known:
            shared = handler.event_types & other.event_types
            if shared and (
                handler.min_version <= other.max_version
                and other.min_version <= handler.max_version
            ):
                raise ValueError(
                    f"{handler.consumer}: two handlers for {min(shared)} at one version"
                )
        known.append(handler)

    def register(
        self,
        consumer: str,
        *,
        event_types: Iterable[str],
        versions: tuple[int, int] = (1, 1),
    ) -> Callable[[Handle], Handle]:
        """Decorator form of ``add``: ``@registry.register("shop.fulfilment", event_types=...)``."""

        def decorate(handle: Handle) -> Handle:
            self.add(
                ConsumerHandler(
                    consumer=consumer,
                    event_types=frozenset(event_types),
                    min_version=versions[0],
                    max_version=versions[1],
                    handle=handle,
                )
            )
            return handle

        return decorate

    @property
    def consumers(self) -> tuple[str, ...]:
        """The codes of every consumer with a handler, sorted."""
        return tuple(sorted(self._handlers))

    def handler(self, consumer: str, event_type: str, version: int) -> ConsumerHandler | None:
        """The handler of ``consumer`` for that type and version, or None."""
        for candidate in self._handlers.get(consumer, ()):
            if candidate.accepts(event_type, version):
                return candidate
        return None
