"""Reissue a dead-lettered one-time code: a new code for the same open challenge.

The code is minted, hashed and sealed here; the store replaces the challenge's hash, enqueues
the new message and audits, all in one transaction, so the old code stops working exactly
when the new one is on its way. The plaintext code never leaves this call.

Nothing changes when no provider sends the message's channel (the new code would dead-letter
at once while the old one stopped working); when its provider is paused, the receipt says the
new code waits for it.
"""

from __future__ import annotations

import attrs

from outbox.application.delivery.copy_routes import CopyRouter
from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.operations import RequeueCommand, reported_dead_letter_copy
from outbox.application.delivery.views import CopyReceipt, MessageDetail
from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.operator.ports import OperatorStore
from outbox.application.ports import Telemetry
from outbox.application.staff import check_idempotency_key, check_reason
from outbox.domain.delivery.dead_letters import Refusal, is_delivery_failure
from outbox.domain.delivery.messages import State

ReissueCommand = RequeueCommand  # the same request: a new message for a dead letter


def _early_refusal(detail: MessageDetail) -> Refusal | None:
    """What the dead letter alone rules out; the store checks it all again under its locks."""
    if detail.state is not State.DEAD_LETTERED:
        return Refusal.NOT_DEAD_LETTERED
    if not detail.purpose.is_reissuable:
        return Refusal.NOT_REISSUABLE
    if detail.dead_letter_reason is not None and not is_delivery_failure(detail.dead_letter_reason):
        return Refusal.NOT_A_DELIVERY_FAILURE
    return None


@attrs.frozen(kw_only=True)
class ReissueDeadLetter:
    """Mints, hashes and seals a new code, then lets the store swap it in atomically."""

    store: OperatorStore
    issuer: ChallengeIssuer
    telemetry: Telemetry
    router: CopyRouter = attrs.field(factory=CopyRouter)

    async def __call__(self, command: ReissueCommand) -> CopyReceipt:
        """The new message's receipt; raises StaffRequired, StepUpRequired, MessageNotFound,
        DeadLetterRefused (NoProvider when no provider sends its channel),
        IdempotencyKeyReused, RequestInProgress or InvalidField (a malformed key)."""
        key = check_idempotency_key(command.idempotency_key)
        if command.reason is not None:
            command = attrs.evolve(command, reason=check_reason(command.reason))
        return await reported_dead_letter_copy(
            self._reissue(command, key),
            "reissue",
            command.actor,
            command.message_id,
            self.telemetry,
        )

    async def _reissue(self, command: ReissueCommand, key: str | None) -> CopyReceipt:
        detail = await self.store.message(actor=command.actor, message_id=command.message_id)
        if detail is None:
            raise MessageNotFound(str(command.message_id))
        refusal = _early_refusal(detail)
        if refusal is not None:
            raise DeadLetterRefused(refusal)
        waits_for = await self.router.waits_for(actor=command.actor, channel=detail.channel)
        new_id = self.issuer.ids.new_id()
        code, code_hash = await self.issuer.new_code()
        sealed = self.issuer.sealer.seal(message_id=new_id, purpose=detail.purpose, plaintext=code)
        receipt = await self.store.reissue(
            actor=command.actor,
            message_id=command.message_id,
            new_message_id=new_id,
            sealed_secret=sealed,
            code_hash=code_hash,
            idempotency_key=key or str(new_id),
            reason=command.reason,
        )
        return attrs.evolve(receipt, waits_for=waits_for)
