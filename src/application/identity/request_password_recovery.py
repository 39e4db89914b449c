"""Password recovery: a code for a known identifier, one answer for every identifier."""

from __future__ import annotations

from datetime import datetime

import attrs

from outbox.application.identity.challenge_issuer import ChallengeIssuer, ChallengeReceipt
from outbox.application.identity.inputs import parse_identifier
from outbox.application.identity.ports import IdentityTransactions, RecoveryTarget
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.identity.challenges import Challenge
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.purposes import Purpose

ROUTE = "password_recovery"


@attrs.frozen(kw_only=True)
class RequestPasswordRecoveryCommand:
    """The identifier whose password was forgotten."""

    identifier: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequestPasswordRecovery:
    """Opens (or resends) a recovery challenge when the identifier is a verified account.

    Known and unknown identifiers run the same statements after the same hashing and
    sealing work and get the same receipt. A failure after the lookup (challenge insert,
    enqueue, commit of a transaction that wrote) is logged and hidden behind that receipt;
    a failure before it propagates the same way for both. The per-destination
    limit is silent: a 429 would tell that the account exists.
    """

    transactions: IdentityTransactions
    issuer: ChallengeIssuer
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: RequestPasswordRecoveryCommand) -> ChallengeReceipt:
        """The receipt; raises InvalidField, RateLimited (client address) or StoreUnavailable."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        receipt = ChallengeReceipt(challenge_expires_at=now + self.issuer.policy.lifetime)
        await self.limits.client(ROUTE, command.client_address, now)
        if await self.limits.destination(identifier, now) is not None:
            self.telemetry.event(
                "identity.password_recovery.destination_limited",
                level="warning",
                destination=mask(identifier.value),
            )
            return receipt
        code, code_hash = await self.issuer.new_code()
        async with self.transactions.begin() as uow:
            target = await uow.identity.find_recovery_target(identifier.value)
            try:
                challenge = self._challenge(target, identifier, code_hash, now)
                message = self.issuer.message(challenge=challenge, code=code, now=now)
                await uow.identity.open_recovery_if_known(
                    identity_id=target.identity_id, challenge=challenge, message=message
                )
                await uow.commit()
            except Exception as error:
                if target.identity_id is None:
                    raise
                self.telemetry.event(
                    "identity.password_recovery.failed",
                    level="error",
                    error=type(error).__name__,
                    code=str(getattr(error, "code", "") or ""),
                )
                return receipt
        # One event, with the same fields, for known and unknown identifiers alike: neither
        # its counter nor its log line tells whether the account exists.
        self.telemetry.event(
            "identity.password_recovery.requested", destination=mask(identifier.value)
        )
        return receipt

    def _challenge(
        self, target: RecoveryTarget, identifier: Identifier, code_hash: str, now: datetime
    ) -> Challenge:
        """The open challenge resent, or a new one (for an unknown identifier, never saved)."""
        policy = self.issuer.policy
        if target.challenge is not None and target.challenge.is_open(now):
            return target.challenge.resend(code_hash=code_hash, now=now, policy=policy)
        challenge_id = self.issuer.ids.new_id()
        return Challenge.open(
            id=challenge_id,
            purpose=Purpose.PASSWORD_RECOVERY,
            identity_id=target.identity_id or challenge_id,
            identifier=identifier.value,
            channel=identifier.channel,
            code_hash=code_hash,
            now=now,
            policy=policy,
        )
