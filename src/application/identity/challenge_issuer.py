"""Issuing one-time codes: open or resend a challenge and enqueue its sealed code."""

from __future__ import annotations

import asyncio
from datetime import datetime
from uuid import UUID

import attrs

from outbox.application.identity.ports import IdentityStore, IdentityUnitOfWork
from outbox.application.ports import Ids, Sealer, SecretHasher, SecretSource
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge, ChallengePolicy
from outbox.domain.identity.identifiers import Identifier
from outbox.domain.purposes import Purpose


@attrs.frozen(kw_only=True)
class ChallengeReceipt:
    """What a code-sending route answers: when the challenge expires, and nothing else."""

    challenge_expires_at: datetime


@attrs.frozen(kw_only=True)
class ChallengeIssuer:
    """Draws and hashes codes, opens or resends challenges, and builds their sealed messages."""

    secrets: SecretSource
    hasher: SecretHasher
    sealer: Sealer
    ids: Ids
    policy: ChallengePolicy = attrs.field(factory=ChallengePolicy)
    locale: str = "en"

    async def new_code(self) -> tuple[str, str]:
        """A fresh code and its Argon2id hash (hashed off the event loop)."""
        code = self.secrets.code(self.policy.code_digits)
        return code, await asyncio.to_thread(self.hasher.hash, code)

    async def open_or_resend(
        self,
        store: IdentityStore,
        *,
        purpose: Purpose,
        identity_id: UUID,
        identifier: Identifier,
        code_hash: str,
        now: datetime,
        match_identifier: bool = True,
    ) -> Challenge:
        """The open challenge with a new code (a resend), or a new one.

        ``match_identifier`` False finds the identity's challenge whatever its destination.
        An expired challenge still marked open is closed first so the new one takes its place.
        """
        current = await store.find_challenge(
            purpose=purpose,
            identity_id=identity_id,
            identifier=identifier.value if match_identifier else None,
        )
        if current is not None and current.is_open(now):
            return current.resend(code_hash=code_hash, now=now, policy=self.policy)
        if current is not None:
            await store.save_challenge(current.close(now))
        return Challenge.open(
            id=self.ids.new_id(),
            purpose=purpose,
            identity_id=identity_id,
            identifier=identifier.value,
            channel=identifier.channel,
            code_hash=code_hash,
            now=now,
            policy=self.policy,
        )

    def message(self, *, challenge: Challenge, code: str, now: datetime) -> Message:
        """The outbox message carrying ``code`` sealed under its own id and purpose."""
        message_id = self.ids.new_id()
        return Message.enqueue(
            id=message_id,
            purpose=challenge.purpose,
            channel=challenge.channel,
            destination=challenge.identifier,
            subject_id=challenge.id,
            template=challenge.purpose.value,
            params={"expires_in_minutes": str(int(self.policy.lifetime.total_seconds() // 60))},
            locale=self.locale,
            sealed_secret=self.sealer.seal(
                message_id=message_id, purpose=challenge.purpose, plaintext=code
            ),
            expires_at=challenge.expires_at,
            now=now,
        )

    async def issue(
        self,
        uow: IdentityUnitOfWork,
        *,
        purpose: Purpose,
        identity_id: UUID,
        identifier: Identifier,
        now: datetime,
        match_identifier: bool = True,
        drawn: tuple[str, str] | None = None,
    ) -> Challenge:
        """Open or resend the challenge and enqueue its code, both in ``uow``'s transaction.

        ``drawn`` is a (code, hash) pair drawn earlier with ``new_code``; a new one otherwise.
        """
        code, code_hash = drawn or await self.new_code()
        challenge = await self.open_or_resend(
            uow.identity,
            purpose=purpose,
            identity_id=identity_id,
            identifier=identifier,
            code_hash=code_hash,
            now=now,
            match_identifier=match_identifier,
        )
        await uow.identity.save_challenge(challenge)
        await uow.outbox.enqueue(self.message(challenge=challenge, code=code, now=now))
        return challenge
