"""Every identity use case wired to fakes, with the fakes in reach for assertions."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

import attrs

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.application.check_readiness import CheckReadiness
from outbox.application.events.consumer_ports import DeliveredEvent
from outbox.application.identity.accept_invitation import AcceptInvitation, AcceptInvitationCommand
from outbox.application.identity.authenticate_bearer import AuthenticateBearer
from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecovery
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethod
from outbox.application.identity.confirm_sign_up import ConfirmSignUp, ConfirmSignUpCommand
from outbox.application.identity.confirm_step_up import ConfirmStepUp, ConfirmStepUpCommand
from outbox.application.identity.create_organization import (
    CreateOrganization,
    CreateOrganizationCommand,
)
from outbox.application.identity.invite_member import InviteMember
from outbox.application.identity.principal import Principal
from outbox.application.identity.redeem_magic_link import RedeemMagicLink
from outbox.application.identity.request_limits import RateLimitPolicy, RequestLimits
from outbox.application.identity.request_magic_link import RequestMagicLink
from outbox.application.identity.request_password_recovery import RequestPasswordRecovery
from outbox.application.identity.request_sign_in_method import RequestSignInMethod
from outbox.application.identity.request_sign_up import RequestSignUp, RequestSignUpCommand
from outbox.application.identity.request_step_up import RequestStepUp, RequestStepUpCommand
from outbox.application.identity.revoke_invitation import RevokeInvitation
from outbox.application.identity.revoke_sessions import RevokeSessions
from outbox.application.identity.security_notice_consumer import SendSecurityNotices
from outbox.application.identity.security_notices import SecurityNotices
from outbox.application.identity.services import IdentityServices
from outbox.application.identity.sign_in import SessionStarter, SignIn, SignInCommand
from outbox.application.identity.sign_out import SignOut
from outbox.domain.delivery.messages import Message
from outbox.domain.events.domain_events import NewDomainEvent
from outbox.domain.identity.rate_limits import Backoff
from outbox.domain.purposes import Purpose
from tests.fakes.clock import FixedClock
from tests.fakes.identity import (
    InMemoryIdentityTransactions,
    InMemoryRateLimiter,
    SequentialSecrets,
    StaticReadiness,
)
from tests.fakes.ids import SequentialIds
from tests.fakes.telemetry import RecordingTelemetry

CLIENT = "198.51.100.7"


def delivered_event(event_id: UUID, event: NewDomainEvent, sequence: int = 1) -> DeliveredEvent:
    """``event`` as its first delivery to a consumer."""
    return DeliveredEvent(
        delivery_id=event_id,
        event_id=event_id,
        organization_id=event.organization_id,
        event_type=event.event_type,
        contract_version=event.contract_version,
        aggregate_type=event.aggregate_type,
        aggregate_id=event.aggregate_id,
        append_sequence=sequence,
        publication_sequence=sequence,
        replay_round=0,
        payload=event.payload,
        occurred_at=event.occurred_at,
        attempt=1,
    )


UNPACED = Backoff(first_wait=timedelta(0), max_wait=timedelta(0))
PASSWORD = "correct horse battery"


@attrs.define
class World:
    """Fakes plus one instance of every use case built on them."""

    clock: FixedClock = attrs.field(factory=FixedClock)
    ids: SequentialIds = attrs.field(factory=SequentialIds)
    secrets: SequentialSecrets = attrs.field(factory=SequentialSecrets)
    telemetry: RecordingTelemetry = attrs.field(factory=RecordingTelemetry)
    limiter: InMemoryRateLimiter = attrs.field(factory=InMemoryRateLimiter)
    # Unpaced, so a test may ask twice in one instant; tests of the pace set one.
    policy: RateLimitPolicy = attrs.field(factory=lambda: RateLimitPolicy(per_destination=UNPACED))
    hasher: Argon2idHasher = attrs.field(
        factory=lambda: Argon2idHasher(Argon2Parameters.cheapest())
    )
    sealer: EnvelopeSealer = attrs.field(
        factory=lambda: EnvelopeSealer(Keyring((SealKey("test", bytes(range(32))),)))
    )
    readiness: StaticReadiness = attrs.field(factory=StaticReadiness)
    db: InMemoryIdentityTransactions = attrs.field(init=False)
    consumed: set[UUID] = attrs.field(factory=set)  # events the notice consumer has handled

    def __attrs_post_init__(self) -> None:
        self.db = InMemoryIdentityTransactions(clock=self.clock)

    # -- building blocks -------------------------------------------------------------------

    @property
    def limits(self) -> RequestLimits:
        return RequestLimits(limiter=self.limiter, policy=self.policy)

    @property
    def issuer(self) -> ChallengeIssuer:
        return ChallengeIssuer(
            secrets=self.secrets, hasher=self.hasher, sealer=self.sealer, ids=self.ids
        )

    @property
    def notices(self) -> SecurityNotices:
        return SecurityNotices(ids=self.ids)

    @property
    def answers(self) -> ChallengeAnswers:
        return ChallengeAnswers(hasher=self.hasher, telemetry=self.telemetry, notices=self.notices)

    @property
    def sessions(self) -> SessionStarter:
        return SessionStarter(secrets=self.secrets, ids=self.ids)

    def _common(self) -> dict[str, object]:
        return {"transactions": self.db, "clock": self.clock, "telemetry": self.telemetry}

    # -- use cases -------------------------------------------------------------------------

    @property
    def request_sign_up(self) -> RequestSignUp:
        return RequestSignUp(issuer=self.issuer, limits=self.limits, ids=self.ids, **self._common())

    @property
    def confirm_sign_up(self) -> ConfirmSignUp:
        return ConfirmSignUp(
            answers=self.answers, hasher=self.hasher, limits=self.limits, **self._common()
        )

    @property
    def sign_in(self) -> SignIn:
        return SignIn(
            sessions=self.sessions,
            hasher=self.hasher,
            limits=self.limits,
            notices=self.notices,
            **self._common(),
        )

    @property
    def authenticate(self) -> AuthenticateBearer:
        return AuthenticateBearer(transactions=self.db, clock=self.clock)

    @property
    def sign_out(self) -> SignOut:
        return SignOut(**self._common())

    @property
    def revoke_sessions(self) -> RevokeSessions:
        return RevokeSessions(ids=self.ids, **self._common())

    @property
    def request_sign_in_method(self) -> RequestSignInMethod:
        return RequestSignInMethod(issuer=self.issuer, limits=self.limits, **self._common())

    @property
    def confirm_sign_in_method(self) -> ConfirmSignInMethod:
        return ConfirmSignInMethod(answers=self.answers, limits=self.limits, **self._common())

    @property
    def request_password_recovery(self) -> RequestPasswordRecovery:
        return RequestPasswordRecovery(issuer=self.issuer, limits=self.limits, **self._common())

    @property
    def confirm_password_recovery(self) -> ConfirmPasswordRecovery:
        return ConfirmPasswordRecovery(
            answers=self.answers,
            hasher=self.hasher,
            limits=self.limits,
            **self._common(),
        )

    @property
    def request_step_up(self) -> RequestStepUp:
        return RequestStepUp(issuer=self.issuer, limits=self.limits, **self._common())

    @property
    def confirm_step_up(self) -> ConfirmStepUp:
        return ConfirmStepUp(
            answers=self.answers,
            secrets=self.secrets,
            limits=self.limits,
            ids=self.ids,
            **self._common(),
        )

    @property
    def create_organization(self) -> CreateOrganization:
        return CreateOrganization(ids=self.ids, limits=self.limits, **self._common())

    @property
    def invite_member(self) -> InviteMember:
        return InviteMember(
            secrets=self.secrets,
            sealer=self.sealer,
            limits=self.limits,
            ids=self.ids,
            **self._common(),
        )

    @property
    def revoke_invitation(self) -> RevokeInvitation:
        return RevokeInvitation(**self._common())

    @property
    def accept_invitation(self) -> AcceptInvitation:
        return AcceptInvitation(limits=self.limits, **self._common())

    @property
    def request_magic_link(self) -> RequestMagicLink:
        return RequestMagicLink(
            secrets=self.secrets,
            sealer=self.sealer,
            limits=self.limits,
            ids=self.ids,
            **self._common(),
        )

    @property
    def redeem_magic_link(self) -> RedeemMagicLink:
        return RedeemMagicLink(sessions=self.sessions, limits=self.limits, **self._common())

    def services(self) -> IdentityServices:
        """Every use case, as the HTTP app takes them."""
        return IdentityServices(
            request_sign_up=self.request_sign_up,
            confirm_sign_up=self.confirm_sign_up,
            sign_in=self.sign_in,
            authenticate=self.authenticate,
            sign_out=self.sign_out,
            revoke_sessions=self.revoke_sessions,
            request_sign_in_method=self.request_sign_in_method,
            confirm_sign_in_method=self.confirm_sign_in_method,
            request_password_recovery=self.request_password_recovery,
            confirm_password_recovery=self.confirm_password_recovery,
            request_step_up=self.request_step_up,
            confirm_step_up=self.confirm_step_up,
            create_organization=self.create_organization,
            invite_member=self.invite_member,
            revoke_invitation=self.revoke_invitation,
            accept_invitation=self.accept_invitation,
            request_magic_link=self.request_magic_link,
            redeem_magic_link=self.redeem_magic_link,
            check_readiness=CheckReadiness(probe=self.readiness, telemetry=self.telemetry),
            telemetry=self.telemetry,
        )

    async def consume_events(self) -> int:
        """Deliver every committed event not delivered yet to the identity.security_notices
        handler, each in a committed transaction of its own; return how many."""
        handle = SendSecurityNotices(notices=self.notices, clock=self.clock)
        delivered = 0
        for sequence, (event_id, event) in enumerate(self.db.tables.domain_events.items(), 1):
            if event_id in self.consumed:
                continue
            async with self.db.begin() as uow:
                await handle(uow, delivered_event(event_id, event, sequence))
                await uow.commit()
            self.consumed.add(event_id)
            delivered += 1
        return delivered

    # -- reading what was sent -------------------------------------------------------------

    def messages(self, purpose: Purpose | None = None) -> list[Message]:
        """Every committed message (of ``purpose``), oldest first."""
        found = [m for m in self.db.tables.messages.values() if purpose in (None, m.purpose)]
        return sorted(found, key=lambda m: m.id)

    def secret_of(self, message: Message) -> str:
        """Open the message's envelope, as the worker would."""
        assert message.sealed_secret is not None
        return self.sealer.open(
            message_id=message.id, purpose=message.purpose, envelope=message.sealed_secret
        )

    def last_secret(self, purpose: Purpose) -> str:
        """The secret of the newest message of ``purpose``."""
        return self.secret_of(self.messages(purpose)[-1])

    # -- shortcuts -------------------------------------------------------------------------

    async def signed_up(self, identifier: str = "alice@example.com") -> Principal:
        """An account with a verified identifier, signed in."""
        await self.request_sign_up(
            RequestSignUpCommand(identifier=identifier, client_address=CLIENT)
        )
        await self.confirm_sign_up(
            ConfirmSignUpCommand(
                identifier=identifier,
                code=self.last_secret(Purpose.SIGN_UP),
                password=PASSWORD,
                client_address=CLIENT,
            )
        )
        grant = await self.sign_in(
            SignInCommand(identifier=identifier, password=PASSWORD, client_address=CLIENT)
        )
        return await self.authenticate(grant.token)

    async def elevated(self, principal: Principal) -> str:
        """Step ``principal``'s session up; return the elevation token."""
        await self.request_step_up(RequestStepUpCommand(principal=principal, client_address=CLIENT))
        grant = await self.confirm_step_up(
            ConfirmStepUpCommand(
                principal=principal,
                code=self.last_secret(Purpose.STEP_UP),
                client_address=CLIENT,
            )
        )
        return grant.token

    async def organization(self, founder: Principal, name: str = "Acme") -> UUID:
        """A new organization founded by ``founder``."""
        created = await self.create_organization(
            CreateOrganizationCommand(identity_id=founder.identity_id, name=name)
        )
        return created.id

    async def accept(self, principal: Principal, token: str) -> UUID:
        """Accept an invitation token as ``principal``."""
        return await self.accept_invitation(
            AcceptInvitationCommand(
                identity_id=principal.identity_id, token=token, client_address=CLIENT
            )
        )
