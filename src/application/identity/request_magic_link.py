"""Magic link: a sign-in link for a known email, one answer for every email."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from outbox.application.identity.challenge_issuer import ChallengeReceipt
from outbox.application.identity.inputs import parse_email
from outbox.application.identity.ports import IdentityTransactions, MagicLinkTarget
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.ports import Clock, Ids, Sealer, SecretSource, Telemetry
from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.destinations import mask
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.tokens import token_digest
from outbox.domain.purposes import Purpose

ROUTE = "magic_link"


@attrs.frozen(kw_only=True)
class RequestMagicLinkCommand:
    """The email address to send a sign-in link to."""

    email: str = attrs.field(repr=False)
    client_address: str = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class RequestMagicLink:
    """Issues (or resends) a magic link when the email is a verified account.

    Anti-enumeration exactly as for password recovery: the same statements, work and
    receipt for known and unknown emails; failures after the lookup are logged and hidden.
    """

    transactions: IdentityTransactions
    secrets: SecretSource
    sealer: Sealer
    limits: RequestLimits
    clock: Clock
    ids: Ids
    telemetry: Telemetry
    lifetime: timedelta = timedelta(minutes=15)
    locale: str = "en"

    async def __call__(self, command: RequestMagicLinkCommand) -> ChallengeReceipt:
        """The receipt; raises InvalidField, RateLimited (client address) or StoreUnavailable."""
        identifier = parse_email(command.email)
        email = identifier.value
        now = self.clock.now()
        receipt = ChallengeReceipt(challenge_expires_at=now + self.lifetime)
        await self.limits.client(ROUTE, command.client_address, now)
        if await self.limits.destination(identifier, now) is not None:
            self.telemetry.event(
                "identity.magic_link.destination_limited", level="warning", destination=mask(email)
            )
            return receipt
        token = self.secrets.token()
        async with self.transactions.begin() as uow:
            target = await uow.identity.find_magic_link_target(email)
            try:
                link = self._link(target, email, token_digest(token), now)
                message = self._message(link, token, now)
                await uow.identity.open_magic_link_if_known(
                    identity_id=target.identity_id, link=link, message=message
                )
                await uow.commit()
            except Exception as error:
                if target.identity_id is None:
                    raise
                self.telemetry.event(
                    "identity.magic_link.failed",
                    level="error",
                    error=type(error).__name__,
                    code=str(getattr(error, "code", "") or ""),
                )
                return receipt
        # One event, with the same fields, for known and unknown emails alike.
        self.telemetry.event("identity.magic_link.requested", destination=mask(email))
        return receipt

    def _link(self, target: MagicLinkTarget, email: str, digest: str, now: datetime) -> MagicLink:
        """The open link resent with a new token, or a new one (never saved when unknown)."""
        if target.link is not None and target.link.is_open(now):
            return target.link.resend(token_digest=digest, now=now, lifetime=self.lifetime)
        link_id = self.ids.new_id()
        return MagicLink.issue(
            id=link_id,
            identity_id=target.identity_id or link_id,
            email=email,
            token_digest=digest,
            now=now,
            lifetime=self.lifetime,
        )

    def _message(self, link: MagicLink, token: str, now: datetime) -> Message:
        message_id = self.ids.new_id()
        return Message.enqueue(
            id=message_id,
            purpose=Purpose.MAGIC_LINK,
            channel=Channel.EMAIL,
            destination=link.email,
            subject_id=link.id,
            template=Purpose.MAGIC_LINK.value,
            params={"expires_in_minutes": str(int(self.lifetime.total_seconds() // 60))},
            locale=self.locale,
            sealed_secret=self.sealer.seal(
                message_id=message_id, purpose=Purpose.MAGIC_LINK, plaintext=token
            ),
            expires_at=link.expires_at,
            now=now,
        )
