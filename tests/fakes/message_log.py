"""An in-memory MessageLog over the in-memory operator store (the contract suite runs the
same cases against outbox.find_messages and its siblings)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

import attrs

from outbox.application.delivery.message_filters import MessageFilter, destination_digest
from outbox.application.delivery.views import AttemptView, MessageSummary, Repair, RepairAction
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.domain.delivery.failures import MAX_DETAIL, FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.destinations import mask
from tests.fakes.operator_store import (
    MAX_PAGE,
    InMemoryOperatorStore,
    attempt_columns,
    attempt_detail,
)


@attrs.define
class InMemoryMessageLog:
    """The database operator's reads of ``operator``'s messages, attempts and audit."""

    operator: InMemoryOperatorStore

    async def messages(
        self, *, where: MessageFilter, after: UUID | None, before: UUID | None, limit: int
    ) -> Sequence[MessageSummary]:
        """Up to ``limit`` matching messages, newest first, on one side of the cursor."""
        self._require_database_operator()
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidRequest("limit: must be between 1 and 1001")
        if after is not None and before is not None:
            raise InvalidRequest("after, before: give at most one cursor")
        everything = self.operator.outbox.messages
        rows = sorted(
            (m for m in everything.values() if self._matches(m, where)),
            key=lambda m: (m.created_at, m.id),
            reverse=True,
        )
        cursor = after or before
        if cursor is not None:
            found = everything.get(cursor)
            if found is None:
                raise InvalidRequest("cursor: no message has this id")
            key = (found.created_at, found.id)
            if after is not None:
                rows = [m for m in rows if (m.created_at, m.id) < key][:limit]
            else:
                rows = [m for m in reversed(rows) if (m.created_at, m.id) > key][:limit][::-1]
        return [self._summary(m) for m in rows[:limit]]

    async def repairs(self, dead_letter_ids: Sequence[UUID]) -> Mapping[UUID, Repair]:
        """The newest reissue or requeue of each dead letter that had one."""
        self._require_database_operator()
        return {
            dead_id: repair
            for dead_id in dead_letter_ids
            if (repair := self._repair(dead_id)) is not None
        }

    async def history(self, message_id: UUID) -> Sequence[AttemptView]:
        """The message's attempts, oldest first, with each provider's detail."""
        self._require_database_operator()
        views = []
        for attempt in self.operator.outbox.attempts:
            if attempt.message_id != message_id:
                continue
            outcome, failure, code, receipt, retry_at = attempt_columns(attempt.outcome)
            detail = attempt_detail(attempt.outcome)
            views.append(
                AttemptView(
                    attempt=attempt.attempt,
                    counted=attempt.counted,
                    outcome=outcome,
                    failure_class=None if failure is None else FailureClass(failure),
                    code=code,
                    detail=detail[:MAX_DETAIL],
                    provider=attempt.provider,
                    provider_message_id=receipt,
                    recorded_at=attempt.recorded_at,
                    retry_at=retry_at,
                )
            )
        return views

    def _matches(self, message: Message, where: MessageFilter) -> bool:
        providers = {
            a.provider for a in self.operator.outbox.attempts if a.message_id == message.id
        }
        return (
            where.state in (None, message.state)
            and where.purpose in (None, message.purpose)
            and (where.reason is None or where.reason is message.dead_letter_reason)
            and (where.provider is None or where.provider in providers)
            and (where.since is None or message.created_at >= where.since)
            and (where.until is None or message.created_at < where.until)
            and where.message_id in (None, message.id)
            and (
                where.destination_digest is None
                or where.destination_digest == destination_digest(message.destination)
            )
        )

    def _summary(self, message: Message) -> MessageSummary:
        attempts = [a for a in self.operator.outbox.attempts if a.message_id == message.id]
        return MessageSummary(
            id=message.id,
            purpose=message.purpose,
            channel=message.channel,
            destination=mask(message.destination),
            state=message.state,
            attempts=message.attempts,
            created_at=message.created_at,
            dead_letter_reason=message.dead_letter_reason,
            provider=attempts[-1].provider if attempts else "",
            repair=self._repair(message.id),
        )

    def _repair(self, message_id: UUID) -> Repair | None:
        repairs = [
            Repair(action=RepairAction(a.action), message_id=copy_id, at=a.occurred_at)
            for a in self.operator.audit
            if a.message_id == message_id
            and a.action in ("reissue", "requeue")
            and (copy_id := a.new_message_id) is not None
        ]
        return repairs[-1] if repairs else None

    def _require_database_operator(self) -> None:
        if not self.operator.database_operator:
            raise PermissionDenied("42501")
