"""Confirm a sign-up: the right code verifies the identifier and sets the chosen password, and
the account's ``identity.account_verified`` event is appended in the same transaction.

The password is chosen here, by whoever holds the code the address received, never at the
sign-up request: a stranger who signs the same address up cannot choose the password the
owner's account ends with (the pre-hijacking attack).
"""

from __future__ import annotations

import asyncio

import attrs

from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.errors import IdentifierTaken
from outbox.application.identity.inputs import (
    check_strength,
    parse_identifier,
    parse_password,
)
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, SecretHasher, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.identity.account_events import account_verified
from outbox.domain.purposes import Purpose

ROUTE = "sign_up_confirmation"


@attrs.frozen(kw_only=True)
class ConfirmSignUpCommand:
    """The identifier signed up with, the code it received and the account's password."""

    identifier: str = attrs.field(repr=False)
    code: str = attrs.field(repr=False)
    password: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class ConfirmSignUp:
    """Verifies the identifier and sets its password; unsent messages are cancelled
    (``challenge_consumed``)."""

    transactions: IdentityTransactions
    answers: ChallengeAnswers
    hasher: SecretHasher
    limits: RequestLimits
    clock: Clock
    telemetry: Telemetry

    async def __call__(self, command: ConfirmSignUpCommand) -> None:
        """Confirm; raises InvalidField, InvalidCode, IdentifierTaken or RateLimited."""
        identifier = parse_identifier(command.identifier)
        password = parse_password(command.password)
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        await check_strength(password, "password", hints=(identifier.value,))
        # Hashed before the transaction, so no row lock is held through the Argon2id work.
        password_hash = await asyncio.to_thread(self.hasher.hash, password)
        async with self.transactions.begin() as uow:
            challenge = await uow.identity.find_challenge(
                purpose=Purpose.SIGN_UP, identity_id=None, identifier=identifier.value
            )
            consumed = await self.answers.consume(uow, challenge, command.code, now)
            account = await uow.identity.find_account(identifier.value)
            if account is None or account.identity_id != consumed.identity_id:
                raise IdentifierTaken
            await uow.identity.save_login_identifier(account.identifier.verify(now))
            await uow.identity.save_password(
                identity_id=consumed.identity_id, password_hash=password_hash, now=now
            )
            await uow.events.append(
                account_verified(
                    identity_id=consumed.identity_id,
                    challenge_id=consumed.id,
                    channel=account.identifier.channel,
                    now=now,
                )
            )
            await uow.commit()
        self.telemetry.event(
            "identity.sign_up.confirmed",
            identity_id=str(consumed.identity_id),
            destination=mask(identifier.value),
        )
