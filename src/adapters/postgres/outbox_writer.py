"""The producer's side of the queue (OutboxWriter), inside the caller's own transaction."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.types.json import Jsonb

from outbox.adapters.postgres.error_translation import translated_errors
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message

ENQUEUE = """
SELECT outbox.enqueue_message(
    p_id => %s::uuid,
    p_purpose => %s::text,
    p_channel => %s::text,
    p_destination => %s::text,
    p_subject_id => %s::uuid,
    p_template => %s::text,
    p_params => %s::jsonb,
    p_locale => %s::text,
    p_sealed_secret => %s::text,
    p_expires_at => %s::timestamptz,
    p_priority => %s::integer,
    p_not_before => %s::timestamptz,
    p_trace_context => %s::text
)
"""
CANCEL_BY_SUBJECT = "SELECT outbox.cancel_by_subject(%s::uuid, %s::text)"


def enqueue_params(message: Message, trace_context: str | None = None) -> tuple[object, ...]:
    """ENQUEUE's parameters for ``message``; ``trace_context`` when it names none itself."""
    return (
        message.id,
        message.purpose.value,
        message.channel.value,
        message.destination,
        message.subject_id,
        message.template,
        Jsonb(dict(message.params)),
        message.locale,
        message.sealed_secret,
        message.expires_at,
        int(message.priority),
        message.available_at if message.is_delayed else None,
        message.trace_context or trace_context,
    )


class PostgresOutboxWriter:
    """OutboxWriter bound to one connection; its calls join whatever transaction is open there.

    The message's own timestamps are not sent: the database clock sets created-at and
    available-at. A delayed message (``not_before``) sends its available-at as the time before
    which it must not go; the database takes the later of that and its own now. Raises
    DuplicateMessage, InvalidRequest, PermissionDenied or StoreUnavailable for the matching
    database errors.

    ``trace_context`` answers the current W3C traceparent (tracing on); it is stored with
    a message that names none of its own.
    """

    def __init__(
        self, conn: AsyncConnection, *, trace_context: Callable[[], str | None] | None = None
    ) -> None:
        self._conn = conn
        self._trace_context = trace_context

    async def enqueue(self, message: Message) -> None:
        """Insert a pending message and its envelope; supersede older ones of its subject."""
        # The current trace is read only for a message that names none of its own.
        traced = message.trace_context or self._current_trace_context()
        with translated_errors():
            await self._conn.execute(ENQUEUE, enqueue_params(message, traced))

    def _current_trace_context(self) -> str | None:
        return self._trace_context() if self._trace_context is not None else None

    async def cancel_by_subject(self, *, subject_id: UUID, reason: FailureClass) -> int:
        """Withdraw every live message of ``subject_id`` with ``reason``; return how many."""
        with translated_errors():
            cursor = await self._conn.execute(CANCEL_BY_SUBJECT, (subject_id, reason.value))
            row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0
