"""The development provider: prints each rendered message and accepts it."""

from __future__ import annotations

import sys
from typing import TextIO

from outbox.application.delivery.ports import Delivery

_RULE = "-" * 72


class ConsoleProvider:
    """Writes every delivery to a text stream (stdout by default) and counts it as published.

    Development only: the printed text carries the one-time code or link, which is the
    point locally and must never happen in staging or production (the configuration
    refuses it there).
    """

    def __init__(self, *, stream: TextIO | None = None) -> None:
        self._stream = stream

    @property
    def name(self) -> str:
        """``console``."""
        return "console"

    async def send(self, delivery: Delivery) -> str:
        """Print the delivery and return a fake provider id derived from the message id."""
        content = delivery.content
        lines = [
            _RULE,
            f"outbox console delivery · {delivery.channel.value} · message {delivery.message_id}",
            f"To: {delivery.destination}",
        ]
        if content.subject:
            lines.append(f"Subject: {content.subject}")
        lines += ["", content.text]
        if content.html is not None:
            lines += ["", f"[HTML part: {len(content.html)} characters, not shown]"]
        lines.append(_RULE)
        stream = self._stream if self._stream is not None else sys.stdout
        stream.write("\n".join(lines) + "\n")
        stream.flush()
        return f"console-{delivery.message_id}"

    async def aclose(self) -> None:
        """Nothing to release."""
