"""Confirm a password recovery: the right code sets the new password, ends all sessions and
appends ``identity.password_reset``; the identity.security_notices consumer tells every
verified identifier of the account."""

from __future__ import annotations

import asyncio

import attrs

from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.inputs import (
    check_strength,
    parse_identifier,
    parse_password,
)
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, SecretHasher, Telemetry
from outbox.domain.identity.account_events import password_reset
from outbox.domain.purposes import Purpose

ROUTE = "password_recovery_confirmation"


@attrs.frozen(kw_only=True)
class ConfirmPasswordRecoveryCommand:
    """The identifier, the code it received and the new password."""

    identifier: str = attrs.field(repr=False)
    code: str = attrs.field(repr=False)
    new_password: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ConfirmPasswordRecovery:
    """Sets the password, revokes every session, and cancels unsent messages.

    An unknown identifier fails exactly like a wrong code, after the same hashing work.
    """

    transactions: IdentityTransactions
    answers: ChallengeAnswers
    hasher: SecretHasher
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: ConfirmPasswordRecoveryCommand) -> None:
        """Confirm; raises InvalidField, InvalidCode or RateLimited."""
        identifier = parse_identifier(command.identifier)
        new_password = parse_password(command.new_password, "newPassword")
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        await check_strength(new_password, "newPassword", hints=(identifier.value,))
        password_hash = await asyncio.to_thread(self.hasher.hash, new_password)
        async with self.transactions.begin() as uow:
            challenge = await uow.identity.find_challenge(
                purpose=Purpose.PASSWORD_RECOVERY, identity_id=None, identifier=identifier.value
            )
            consumed = await self.answers.consume(uow, challenge, command.code, now)
            await uow.identity.save_password(
                identity_id=consumed.identity_id, password_hash=password_hash, now=now
            )
            revoked = await uow.identity.revoke_sessions(identity_id=consumed.identity_id, now=now)
            await uow.events.append(
                password_reset(
                    identity_id=consumed.identity_id,
                    challenge_id=consumed.id,
                    sessions_revoked=revoked,
                    now=now,
                )
            )
            await uow.commit()
        self.telemetry.event(
            "identity.password_recovery.completed",
            identity_id=str(consumed.identity_id),
            sessions_revoked=revoked,
        )
