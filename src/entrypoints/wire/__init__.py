"""What the operator views look like on the wire: one msgspec schema per view, answered by the
staff routes and printed by ``outboxctl … --json`` alike (camelCase keys, RFC 3339 times, ids
as strings). Destinations are always masked and no body carries a payload or a secret."""

from __future__ import annotations

from typing import Any, Self
from uuid import UUID

import msgspec

from outbox.application.staff import KeysetPage


class Out(msgspec.Struct, frozen=True, rename="camel"):
    """Base of every response body: camelCase."""

    @classmethod
    def built(cls, source: object, /, **given: Any) -> Self:
        """The body whose fields are ``source``'s attributes of the same names, but for those
        ``given`` (a renamed field, a nested body)."""
        return cls(
            **{
                field.name: given[field.name]
                if field.name in given
                else getattr(source, field.name)
                for field in msgspec.structs.fields(cls)
            }
        )


class PageInfo(Out, frozen=True):
    """Whether rows lie beyond the page; pass ``endCursor`` as ``after`` (``--after``) for the
    next (older) page and ``startCursor`` as ``before`` (``--before``) for the previous one."""

    has_next_page: bool
    has_previous_page: bool
    start_cursor: UUID | None
    end_cursor: UUID | None

    @classmethod
    def of(cls, page: KeysetPage[Any]) -> PageInfo:
        """Where ``page`` goes on."""
        return cls(
            has_next_page=page.has_older,
            has_previous_page=page.has_newer,
            start_cursor=page.newer_cursor,
            end_cursor=page.older_cursor,
        )


def fields_of(view: Out) -> dict[str, Any]:
    """``view``'s fields by their wire names, values as they are (for a table's rows)."""
    return {field.encode_name: getattr(view, field.name) for field in msgspec.structs.fields(view)}


class SequencePageInfo(Out, frozen=True):
    """Whether older rows may follow; pass ``endCursor`` as ``before`` (``--before``) for
    them (a sequence number)."""

    has_next_page: bool
    end_cursor: str | None
