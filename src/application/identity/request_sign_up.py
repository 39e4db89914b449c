"""Sign up: open a sign-up challenge and enqueue its code in one transaction.

No password is taken here: it is chosen at the confirmation, by whoever holds the code, so
only someone who controls the address decides the password its account ends with (docs/identity.md,
the pre-hijacking attack).
"""

from __future__ import annotations

import attrs

from outbox.application.identity.challenge_issuer import ChallengeIssuer, ChallengeReceipt
from outbox.application.identity.errors import RateLimited
from outbox.application.identity.inputs import parse_identifier
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Ids, Telemetry
from outbox.domain.destinations import mask
from outbox.domain.identity.identities import Identity, LoginIdentifier
from outbox.domain.purposes import Purpose

ROUTE = "sign_up"


@attrs.frozen(kw_only=True)
class RequestSignUpCommand:
    """An identifier (email or E.164 phone) to sign up."""

    identifier: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequestSignUp:
    """Registers an unverified identity and sends a code; again while open, it resends.

    A resend keeps the challenge, with a new code, and withdraws the older unsent message;
    whoever asks, nothing of theirs is kept on the pending account. An identifier that is
    already verified gets the same answer and no message, so the route does not tell who has
    an account.
    """

    transactions: IdentityTransactions
    issuer: ChallengeIssuer
    limits: RequestLimits
    clock: Clock
    ids: Ids
    telemetry: Telemetry

    async def __call__(self, command: RequestSignUpCommand) -> ChallengeReceipt:
        """Open or resend the challenge; raises InvalidField or RateLimited."""
        identifier = parse_identifier(command.identifier)
        now = self.clock.now()
        await self.limits.client(ROUTE, command.client_address, now)
        wait = await self.limits.destination(identifier, now)
        if wait is not None:
            raise RateLimited(wait)
        # Drawn and hashed up front, so a taken identifier costs the same work (no timing tell).
        drawn = await self.issuer.new_code()
        async with self.transactions.begin() as uow:
            account = await uow.identity.find_account(identifier.value)
            if account is not None and account.identifier.is_verified:
                # The same event, with the same fields, as a new sign-up: neither counters
                # nor log lines tell who has an account.
                self.telemetry.event(
                    "identity.sign_up.requested", destination=mask(identifier.value)
                )
                return ChallengeReceipt(challenge_expires_at=now + self.issuer.policy.lifetime)
            if account is None:
                identity = Identity(id=self.ids.new_id(), created_at=now)
                await uow.identity.add_identity(identity)
                await uow.identity.save_login_identifier(
                    LoginIdentifier(
                        value=identifier.value,
                        channel=identifier.channel,
                        identity_id=identity.id,
                        created_at=now,
                    )
                )
                identity_id = identity.id
            else:
                identity_id = account.identity_id
            challenge = await self.issuer.issue(
                uow,
                purpose=Purpose.SIGN_UP,
                identity_id=identity_id,
                identifier=identifier,
                now=now,
                drawn=drawn,
            )
            await uow.commit()
        self.telemetry.event("identity.sign_up.requested", destination=mask(identifier.value))
        return ChallengeReceipt(challenge_expires_at=challenge.expires_at)
