"""Reissue or requeue every dead letter a filter matches: a preview count, then one repair
(and one audit row) per message.

The request's idempotency key names the whole form; each message's repair gets a key of its
own derived from it, so a retried form replays what it did and repairs only what it had not.
The preview fixes where the matches end (``as_of``, just after the newest one counted), and
the form carries it: a retry never reaches messages created after the preview.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.application.delivery.copy_routes import ChannelRoutes, CopyRouter
from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.message_filters import MessageFilter
from outbox.application.delivery.operations import (
    RequeueCommand,
    StaffSearch,
)
from outbox.application.delivery.views import CopyReceipt, MessagePage, MessageSummary
from outbox.application.errors import InvalidField
from outbox.application.operator.reissue_dead_letter import ReissueCommand, ReissueDeadLetter
from outbox.application.ports import Clock
from outbox.application.staff import StaffActor, check_idempotency_key, check_reason
from outbox.domain.delivery.dead_letters import is_delivery_failure
from outbox.domain.delivery.messages import State

MAX_MATCHES = 1000  # one form repairs at most this many; narrow the filter for more
PAGE = 500
KEY_ROOM = 200  # the form's key leaves room for ":" and a message id within 255


class BulkAction(enum.StrEnum):
    """Which repair a bulk form asks for."""

    REISSUE = "reissue"
    REQUEUE = "requeue"

    def fits(
        self,
        item: MessageSummary,
        *,
        repaired_before: datetime | None = None,
        routes: ChannelRoutes | None = None,
    ) -> bool:
        """Whether this repair would change ``item``, a dead letter: a code that failed on its
        way is reissued, a notification requeued, and neither twice, nor on a channel that
        ``routes`` say no provider sends (the repair refuses the rest, so a preview counts
        only these and a form repairs only these).

        ``repaired_before`` (a form being sent): a repair made since then is the form's own
        earlier try, which the form's key replays; one made before it leaves ``item`` alone.
        """
        if item.repair is not None and (
            repaired_before is None or item.repair.at < repaired_before
        ):
            return False
        if routes is not None and not routes.sends(item.channel):
            return False
        if self is BulkAction.REQUEUE:
            return item.purpose.is_requeueable
        reason = item.dead_letter_reason
        return item.purpose.is_reissuable and (reason is None or is_delivery_failure(reason))


@attrs.frozen(kw_only=True)
class MatchQuery:
    """The dead letters that meet ``where`` (its state is always dead-lettered) and, if
    given, go to ``destination``, created before ``as_of`` (None: now)."""

    actor: StaffActor
    where: MessageFilter = attrs.field(factory=MessageFilter)
    destination: str | None = attrs.field(default=None, repr=False)
    as_of: datetime | None = None
    action: BulkAction | None = None  # count and repair only what it would change
    previewed_at: datetime | None = None  # the preview's time (a repair since is this form's)


@attrs.frozen(kw_only=True)
class MatchPreview:
    """How many dead letters the action would repair (at most MAX_MATCHES + 1), read at
    ``as_of``; ``matched`` counts every dead letter the filter matches, those the action
    leaves alone included (already repaired, or of another purpose)."""

    count: int
    as_of: datetime
    matched: int = 0
    previewed_at: datetime | None = None  # when it was counted: the form carries it back
    # Of ``count``, how many would go to a provider staff paused (they wait for its resume),
    # and which providers those are.
    waiting: int = 0
    paused: tuple[str, ...] = ()

    @property
    def left_alone(self) -> int:
        """How many matches the action would not change."""
        return max(0, self.matched - self.count)

    @property
    def too_many(self) -> bool:
        """Whether the filter matches more than one form may repair."""
        return self.count > MAX_MATCHES


@attrs.frozen(kw_only=True)
class BulkRepairCommand:
    """Repair every match of ``query`` with ``action``, for ``reason``, once per key."""

    query: MatchQuery
    action: BulkAction
    reason: str
    idempotency_key: str


@attrs.frozen(kw_only=True)
class ItemOutcome:
    """What became of one matched dead letter: its copy, or why it was refused."""

    dead_letter_id: UUID
    new_message_id: UUID | None = None
    replayed: bool = False
    refusal: str | None = None
    waits_for: str | None = None  # the paused provider its copy waits for


@attrs.frozen(kw_only=True)
class BulkResult:
    """Every matched dead letter's outcome, in the order they were listed (newest first)."""

    action: BulkAction
    items: tuple[ItemOutcome, ...]

    @property
    def repaired(self) -> int:
        """How many got a new message now (replays not counted)."""
        return sum(1 for i in self.items if i.new_message_id and not i.replayed)

    @property
    def replayed(self) -> int:
        """How many had been repaired by an earlier try of the same form."""
        return sum(1 for i in self.items if i.replayed)

    @property
    def refused(self) -> int:
        """How many were refused (the reasons are on the items)."""
        return sum(1 for i in self.items if i.refusal is not None)

    @property
    def waiting(self) -> int:
        """How many copies wait for a paused provider to be resumed."""
        return sum(1 for i in self.items if i.waits_for is not None)

    @property
    def paused(self) -> tuple[str, ...]:
        """The paused providers those copies wait for."""
        return tuple(sorted({i.waits_for for i in self.items if i.waits_for is not None}))


@attrs.frozen(kw_only=True)
class RepairMatchingMessages:
    """Lists the matches page by page, then repairs each through the one-item use case."""

    search: Callable[[StaffSearch], Awaitable[MessagePage]]
    reissue: ReissueDeadLetter
    requeue: Callable[[RequeueCommand], Awaitable[CopyReceipt]]
    clock: Clock
    router: CopyRouter = attrs.field(factory=CopyRouter)  # the repairs' own, to count alike

    async def preview(self, query: MatchQuery) -> MatchPreview:
        """The count; raises InvalidField, StaffRequired or StepUpRequired.

        ``as_of`` is just after the newest match's creation (the database's clock, not this
        process's), so the form reaches exactly what was counted and nothing newer.
        """
        now = self.clock.now()
        matches = await self._matches(query)
        if not matches:
            return MatchPreview(count=0, as_of=query.as_of or now, previewed_at=now)
        newest = max(item.created_at for item in matches)
        routes = self.router.routes
        fitting = [
            i for i in matches if query.action is None or query.action.fits(i, routes=routes)
        ]
        paused = await self.router.paused(query.actor) if fitting else frozenset[str]()
        waiting = [
            provider
            for i in fitting
            if (provider := routes.provider_for(i.channel)) is not None and provider in paused
        ]
        return MatchPreview(
            count=len(fitting),
            matched=len(matches),
            as_of=newest + timedelta(microseconds=1),
            previewed_at=now,
            waiting=len(waiting),
            paused=tuple(sorted(set(waiting))),
        )

    async def __call__(self, command: BulkRepairCommand) -> BulkResult:
        """Every outcome; raises InvalidField (reason, key, too many matches), StaffRequired or
        StepUpRequired before anything is repaired."""
        reason = check_reason(command.reason)
        key = check_idempotency_key(command.idempotency_key, field="idempotency_key")
        if key is None or len(key) > KEY_ROOM:
            raise InvalidField("idempotency_key", f"1 to {KEY_ROOM} visible ASCII characters")
        if command.query.as_of is None:
            raise InvalidField("as_of", "preview first: the form carries the preview's time")
        matches = await self._matches(command.query)
        if len(matches) > MAX_MATCHES:
            raise InvalidField("filter", f"matches more than {MAX_MATCHES}; narrow it")
        since = command.query.previewed_at
        routes = self.router.routes
        ids = [
            item.id
            for item in matches
            if command.action.fits(item, repaired_before=since, routes=routes)
        ]
        if len(ids) > MAX_MATCHES:
            raise InvalidField("filter", f"matches more than {MAX_MATCHES}; narrow it")
        actor = command.query.actor
        repair = self._repairer(command.action, actor, reason)
        items = [
            await _outcome(message_id, repair(message_id, f"{key}:{message_id}"))
            for message_id in ids
        ]
        return BulkResult(action=command.action, items=tuple(items))

    def _repairer(
        self, action: BulkAction, actor: StaffActor, reason: str
    ) -> Callable[[UUID, str], Awaitable[CopyReceipt]]:
        def reissue(message_id: UUID, key: str) -> Awaitable[CopyReceipt]:
            return self.reissue(
                ReissueCommand(
                    actor=actor, message_id=message_id, idempotency_key=key, reason=reason
                )
            )

        def requeue(message_id: UUID, key: str) -> Awaitable[CopyReceipt]:
            return self.requeue(
                RequeueCommand(
                    actor=actor, message_id=message_id, idempotency_key=key, reason=reason
                )
            )

        return reissue if action is BulkAction.REISSUE else requeue

    async def _matches(self, query: MatchQuery) -> list[MessageSummary]:
        """The matching dead letters, newest first, at most MAX_MATCHES + 1."""
        until = query.where.until
        if query.as_of is not None and (until is None or query.as_of < until):
            until = query.as_of
        where = attrs.evolve(query.where, state=State.DEAD_LETTERED, until=until)
        found: list[MessageSummary] = []
        after: UUID | None = None
        while len(found) <= MAX_MATCHES:
            page = await self.search(
                StaffSearch(
                    actor=query.actor,
                    where=where,
                    destination=query.destination,
                    after=after,
                    limit=PAGE,
                )
            )
            found.extend(page.items)
            if not page.has_older:
                break
            after = page.older_cursor
        return found[: MAX_MATCHES + 1]


async def _outcome(message_id: UUID, repairing: Awaitable[CopyReceipt]) -> ItemOutcome:
    try:
        receipt = await repairing
    except DeadLetterRefused as refused:
        return ItemOutcome(dead_letter_id=message_id, refusal=refused.refusal.value)
    except MessageNotFound:
        return ItemOutcome(dead_letter_id=message_id, refusal="not_found")
    return ItemOutcome(
        dead_letter_id=message_id,
        new_message_id=receipt.message_id,
        replayed=receipt.replayed,
        waits_for=receipt.waits_for,
    )
