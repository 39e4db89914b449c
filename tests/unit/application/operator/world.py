"""Every operator use case wired to fakes, with the fakes in reach for assertions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.application.delivery.operations import MessageOperations, RequeueCommand
from outbox.application.delivery.views import (
    CopyReceipt,
    MessageSummary,
    ReceiptView,
    SuppressionChange,
    SuppressionView,
)
from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.operator.grant_staff import GrantStaff
from outbox.application.operator.reissue_dead_letter import ReissueDeadLetter
from outbox.application.operator.require_elevation import RequireElevation
from outbox.application.operator.resolve_staff_member import ResolveStaffMember
from outbox.application.operator.revoke_staff import RevokeStaff
from outbox.application.staff import StaffActor
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge
from outbox.domain.purposes import Purpose
from tests.contract.operator_harness import challenge, dead_letter
from tests.fakes.identity import InMemoryIdentityTransactions, SequentialSecrets
from tests.fakes.ids import SequentialIds
from tests.fakes.message_log import InMemoryMessageLog
from tests.fakes.operator_store import InMemoryBacklogGauge, InMemoryOperatorStore, StaffRow
from tests.fakes.telemetry import RecordingTelemetry

SEALER = EnvelopeSealer(Keyring((SealKey("test", bytes(range(32))),)))
STAFF = "staff@example.com"
PERSON = "person@example.com"


@attrs.define
class OperatorWorld:
    """The in-memory operator store and identity tables, and every operator use case."""

    store: InMemoryOperatorStore = attrs.field(factory=InMemoryOperatorStore)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    secrets: SequentialSecrets = attrs.field(factory=SequentialSecrets)
    telemetry: RecordingTelemetry = attrs.field(factory=RecordingTelemetry)
    hasher: Argon2idHasher = attrs.field(
        factory=lambda: Argon2idHasher(Argon2Parameters.cheapest())
    )
    identity: InMemoryIdentityTransactions = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.identity = InMemoryIdentityTransactions(clock=self.store.outbox.clock)

    def now(self) -> datetime:
        """The fakes' shared clock."""
        return self.store.now()

    @property
    def issuer(self) -> ChallengeIssuer:
        return ChallengeIssuer(
            secrets=self.secrets, hasher=self.hasher, sealer=SEALER, ids=self.ids
        )

    @property
    def reissue(self) -> ReissueDeadLetter:
        return ReissueDeadLetter(store=self.store, issuer=self.issuer, telemetry=self.telemetry)

    @property
    def messages(self) -> MessageOperations:
        return messages_over(self.store, ids=self.ids, telemetry=self.telemetry)

    @property
    def requeue(self) -> Callable[[RequeueCommand], Awaitable[CopyReceipt]]:
        return self.messages.requeue_dead_letter

    @property
    def grant_staff(self) -> GrantStaff:
        return GrantStaff(store=self.store, telemetry=self.telemetry)

    @property
    def revoke_staff(self) -> RevokeStaff:
        return RevokeStaff(store=self.store, telemetry=self.telemetry)

    @property
    def resolve_staff_member(self) -> ResolveStaffMember:
        return ResolveStaffMember(store=self.store)

    @property
    def require_elevation(self) -> RequireElevation:
        return RequireElevation(transactions=self.identity, clock=self.store.outbox.clock)

    def staff(self, email: str = STAFF) -> StaffActor:
        """A staff member, stepped up: their identity and a fresh elevation's digest."""
        identity_id = self.ids.new_id()
        self.store.emails[email] = identity_id
        self.store.staff[identity_id] = StaffRow(granted_at=self.now())
        return self.elevated(identity_id)

    def elevated(self, identity_id: UUID) -> StaffActor:
        """``identity_id`` with a fresh elevation (the fake store's side of a step-up)."""
        digest = f"{len(self.store.elevations):064x}"
        self.store.elevations[digest] = (identity_id, self.now(), self.now() + timedelta(minutes=5))
        return StaffActor(identity_id=identity_id, elevation_digest=digest)

    def open_challenge(self, *, code: str = "111111", **changes: object) -> Challenge:
        """An open sign-up challenge of PERSON whose current code is ``code``."""
        opened = attrs.evolve(
            challenge(self, self.ids.new_id(), **changes),
            code_hash=self.hasher.hash(code),
        )
        self.store.challenges[opened.id] = opened
        return opened

    def dead_letter(
        self,
        *,
        subject_id: UUID | None = None,
        purpose: Purpose = Purpose.SIGN_UP,
        reason: FailureClass = FailureClass.REJECTED,
        ago: timedelta = timedelta(seconds=30),
    ) -> Message:
        """A dead letter, stored."""
        letter = dead_letter(
            self,
            purpose=purpose,
            subject_id=subject_id,
            reason=reason,
            ago=ago,
            destination=PERSON,
        )
        self.store.outbox.messages[letter.id] = letter
        return letter


def messages_over(
    store: InMemoryOperatorStore,
    *,
    ids: SequentialIds | None = None,
    telemetry: RecordingTelemetry | None = None,
) -> MessageOperations:
    """The queue's operator use cases over the in-memory store and its message log."""
    return MessageOperations(
        store=store,
        log=InMemoryMessageLog(store),
        search=_NoSearch(),
        suppressions=_NoSuppressions(),
        gauge=InMemoryBacklogGauge(store),
        ids=ids or SequentialIds(),
        telemetry=telemetry or RecordingTelemetry(),
    )


class _NoSearch:
    """The staff search; the unit tests of the search use the contract harness instead."""

    async def messages(self, **_: object) -> Sequence[MessageSummary]:
        return ()


class _NoSuppressions:
    """No receipts and no suppressions (their use cases are tested on PostgreSQL)."""

    async def suppressions(self, **_: object) -> Sequence[SuppressionView]:
        return ()

    async def add(self, **_: object) -> SuppressionChange:
        raise NotImplementedError

    async def lift(self, **_: object) -> SuppressionChange | None:
        return None

    async def receipts(self, **_: object) -> Sequence[ReceiptView]:
        return ()
