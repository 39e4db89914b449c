"""Reading a tenant event back from the relay's message: its headers and JSON body."""

from __future__ import annotations

import json
from collections.abc import Mapping
from uuid import UUID

from outbox.application.events.inbox_ports import InboxEvent

PREFIX = "Outbox-"


def parse_inbox_event(
    *,
    subject: str,
    headers: Mapping[str, str],
    data: bytes,
    stream_sequence: int,
    attempt: int,
) -> InboxEvent | None:
    """The event the relay published, or None when the message is not one of its events."""
    try:
        payload = json.loads(data) if data else {}
        return InboxEvent(
            event_id=UUID(headers["Nats-Msg-Id"]),
            subject=subject,
            organization_id=headers[f"{PREFIX}Organization"],
            event_type=headers[f"{PREFIX}Event-Type"],
            contract_version=int(headers[f"{PREFIX}Contract-Version"]),
            aggregate_type=headers.get(f"{PREFIX}Aggregate-Type", ""),
            aggregate_id=headers.get(f"{PREFIX}Aggregate-Id", ""),
            append_sequence=int(headers.get(f"{PREFIX}Append-Sequence", "0")),
            payload=payload if isinstance(payload, dict) else {"value": payload},
            headers=dict(headers),
            data=data,
            stream_sequence=stream_sequence,
            attempt=attempt,
        )
    except (KeyError, ValueError, UnicodeDecodeError):
        return None
