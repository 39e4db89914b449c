"""How long final messages are kept before the retention sweep deletes them."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from outbox.domain.delivery.messages import Message, State


@attrs.frozen(kw_only=True)
class RetentionPolicy:
    """Published rows live 30 days after publication, dead letters 90 days after dead-lettering."""

    published: timedelta = timedelta(days=30)
    dead_lettered: timedelta = timedelta(days=90)

    def is_due(self, message: Message, now: datetime) -> bool:
        """Whether ``message`` (and its attempt history) may be deleted at ``now``."""
        if message.state is State.PUBLISHED and message.published_at is not None:
            return message.published_at + self.published <= now
        if message.state is State.DEAD_LETTERED and message.dead_lettered_at is not None:
            return message.dead_lettered_at + self.dead_lettered <= now
        return False

    def published_cutoff(self, now: datetime) -> datetime:
        """Published before this instant means due for deletion."""
        return now - self.published

    def dead_lettered_cutoff(self, now: datetime) -> datetime:
        """Dead-lettered before this instant means due for deletion."""
        return now - self.dead_lettered
