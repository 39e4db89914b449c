"""What every context's operator reads and repairs share: who acts as staff, the errors a
staff-gated store raises, keyset pages, and the checks of a repair's reason and key."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Generic, Protocol, TypeVar
from uuid import UUID

import attrs

from outbox.application.errors import ApplicationError, InvalidField, PermissionDenied
from outbox.application.ports import Telemetry

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_REASON = 500
MAX_KEY = 255
# Visible ASCII only: a key travels in an HTTP header and is stored in the audit table.
_KEY = re.compile(rf"[\x21-\x7e]{{1,{MAX_KEY}}}", re.ASCII)
_REASON = re.compile(rf"[^\x00-\x1f\x7f]{{1,{MAX_REASON}}}")


# A stepped-up staff session reads (the console's pages, GET staff routes it asks as reads)
# for this long after its step-up; every command needs a fresh one. The database keeps the
# same window (outbox.require_read_elevation, 0042).
READ_WINDOW = timedelta(hours=8)


@attrs.frozen(kw_only=True)
class StaffActor:
    """The acting staff member and the proof the store hands the database with each call.

    ``elevation_digest`` is the SHA-256 (hex) of the elevation token of a fresh step-up that
    the staff member presented (the staff routes); the database itself checks that it names an
    unexpired elevation of this very member. None means the database operator acts in the
    member's name (``outboxctl ... --staff EMAIL``), which only a connection that may
    administer the database is allowed to do.
    """

    identity_id: UUID
    elevation_digest: str | None = attrs.field(default=None, repr=False)


class StaffRequired(PermissionDenied):
    """The acting identity is not an active staff member (SQLSTATE 42501 at the database).

    With no identity at all, the caller is not the database operator.
    """


class StepUpRequired(ApplicationError):
    """The staff action needs a fresh step-up: an active elevation token of this session."""


class IdempotencyKeyReused(ApplicationError):
    """The idempotency key already named a different request of the same staff member."""


class RequestInProgress(ApplicationError):
    """A request with the same idempotency key is being handled right now; retry later."""


def check_idempotency_key(raw: str | None, field: str = "Idempotency-Key") -> str | None:
    """The key, or None when absent; raises InvalidField naming ``field`` for a bad one."""
    if raw is None:
        return None
    if _KEY.fullmatch(raw) is None:
        raise InvalidField(field, f"1 to {MAX_KEY} visible ASCII characters")
    return raw


def check_reason(reason: str) -> str:
    """The reason, stripped; raises InvalidField for an empty, long or multi-line one.

    It is kept in the audit: a ticket or a sentence, never a payload, a secret or an address.
    """
    stripped = reason.strip()
    if _REASON.fullmatch(stripped) is None:
        raise InvalidField("reason", f"1 to {MAX_REASON} characters on one line")
    return stripped


def check_page(limit: int, after: UUID | None, before: UUID | None) -> None:
    """Raise InvalidField for a limit out of range or two cursors."""
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidField("limit", f"must be between 1 and {MAX_LIMIT}")
    if after is not None and before is not None:
        raise InvalidField("before", "give either after or before, not both")


class _Keyed(Protocol):
    @property
    def id(self) -> UUID: ...


_Item = TypeVar("_Item", bound=_Keyed)
_Receipt = TypeVar("_Receipt")
_Refusal = TypeVar("_Refusal", bound=ApplicationError)


@attrs.frozen(kw_only=True)
class KeysetPage(Generic[_Item]):
    """A keyset page, newest first, and whether rows lie on either side of it."""

    items: tuple[_Item, ...]
    has_older: bool
    has_newer: bool

    @property
    def older_cursor(self) -> UUID | None:
        """The ``after`` cursor of the next (older) page, if there is one."""
        return self.items[-1].id if self.has_older and self.items else None

    @property
    def newer_cursor(self) -> UUID | None:
        """The ``before`` cursor of the previous (newer) page, if there is one."""
        return self.items[0].id if self.has_newer and self.items else None

    @classmethod
    def of(
        cls, rows: Sequence[_Item], *, limit: int, after: UUID | None, before: UUID | None
    ) -> KeysetPage[_Item]:
        """The page from up to ``limit + 1`` rows read on one side of the cursor (the extra
        row, when it came, says the list goes on that way)."""
        more = len(rows) > limit
        if before is None:
            return cls(items=tuple(rows[:limit]), has_older=more, has_newer=after is not None)
        # Going back, the extra row is the newest one: beyond the page's top edge.
        return cls(items=tuple(rows[1:] if more else rows), has_older=True, has_newer=more)


async def reported_repair(
    repairing: Awaitable[_Receipt],
    *,
    telemetry: Telemetry,
    action: str,
    actor: StaffActor,
    dead_letter_id: UUID,
    refused: tuple[type[_Refusal], str, Callable[[_Refusal], str]],
    done: Callable[[_Receipt], tuple[str, dict[str, str | bool | None]]],
) -> _Receipt:
    """Await ``repairing`` and report it: done, refused, or refused to a non-staff caller.

    ``refused`` is the refusal error, the event it is reported as, and how its refusal reads;
    ``done`` gives the event reported on success and its fields. The errors are re-raised as
    they came.
    """
    actor_id = str(actor.identity_id)
    refusal, refused_event, refusal_of = refused
    try:
        receipt = await repairing
    except StaffRequired:
        telemetry.event(
            "security.staff_required", level="warning", action=action, actor_id=actor_id
        )
        raise
    except refusal as error:
        telemetry.event(
            refused_event,
            actor_id=actor_id,
            dead_letter_id=str(dead_letter_id),
            refusal=refusal_of(error),
        )
        raise
    event, fields = done(receipt)
    telemetry.event(event, level="info", actor_id=actor_id, **fields)
    return receipt
