"""The HTTP API and the reference Identity module, wired from settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.identity_transactions import PostgresIdentityTransactions
from outbox.adapters.postgres.rate_limiter import PostgresRateLimiter
from outbox.adapters.postgres.readiness import PostgresReadinessProbe
from outbox.application.check_readiness import CheckReadiness
from outbox.application.identity.accept_invitation import AcceptInvitation
from outbox.application.identity.authenticate_bearer import AuthenticateBearer
from outbox.application.identity.challenge_answers import ChallengeAnswers
from outbox.application.identity.challenge_issuer import ChallengeIssuer
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecovery
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethod
from outbox.application.identity.confirm_sign_up import ConfirmSignUp
from outbox.application.identity.confirm_step_up import ConfirmStepUp
from outbox.application.identity.create_organization import CreateOrganization
from outbox.application.identity.invite_member import InviteMember
from outbox.application.identity.ports import IdentityTransactions
from outbox.application.identity.redeem_magic_link import RedeemMagicLink
from outbox.application.identity.request_limits import RequestLimits
from outbox.application.identity.request_magic_link import RequestMagicLink
from outbox.application.identity.request_password_recovery import RequestPasswordRecovery
from outbox.application.identity.request_sign_in_method import RequestSignInMethod
from outbox.application.identity.request_sign_up import RequestSignUp
from outbox.application.identity.request_step_up import RequestStepUp
from outbox.application.identity.revoke_invitation import RevokeInvitation
from outbox.application.identity.revoke_sessions import RevokeSessions
from outbox.application.identity.security_notices import SecurityNotices
from outbox.application.identity.services import IdentityServices
from outbox.application.identity.sign_in import SessionStarter, SignIn
from outbox.application.identity.sign_out import SignOut
from outbox.application.ports import Clock, Ids, Sealer, SecretHasher, SecretSource, Telemetry
from outbox.entrypoints.bootstrap.database import DatabaseAccess, readiness_role
from outbox.entrypoints.bootstrap.parts import ProcessParts
from outbox.entrypoints.settings.identity import IdentitySettings
from outbox.entrypoints.settings.tree import Settings

# --- The HTTP API and the reference Identity module ----------------------------------------
# build_identity_services wires the identity use cases from already-open parts (tests pass
# their own clock, secrets and hasher); api_identity_services takes them from the process's
# shared parts and the API pool (see processes.py, which opens and closes both).


class _Common(TypedDict):
    """The parts every identity use case takes."""

    transactions: IdentityTransactions
    clock: Clock
    telemetry: Telemetry


def build_identity_services(
    *,
    pool: AsyncConnectionPool[AsyncConnection],
    sealer: Sealer,
    hasher: SecretHasher,
    clock: Clock,
    ids: Ids,
    secret_source: SecretSource,
    telemetry: Telemetry,
    identity: IdentitySettings,
    trace_context: Callable[[], str | None] | None = None,
    readiness_role: str | None = None,
    staff: bool = False,
) -> IdentityServices:
    """Every identity use case over the API pool (role ``identity_service``).

    ``trace_context`` (tracing on) stores the request's trace context with each message;
    ``readiness_role`` is the role /readyz checks the pool's login may act as. With
    ``staff`` the pool is the admin listener's (role ``staff_service``): its sessions and
    elevations are staff ones, the only ones the staff functions accept.
    """
    transactions = PostgresIdentityTransactions(pool, trace_context=trace_context, staff=staff)
    limits = RequestLimits(limiter=PostgresRateLimiter(pool), policy=identity.rate_limits)
    issuer = ChallengeIssuer(
        secrets=secret_source,
        hasher=hasher,
        sealer=sealer,
        ids=ids,
        policy=identity.challenges,
    )
    notices = SecurityNotices(ids=ids)
    answers = ChallengeAnswers(
        hasher=hasher, telemetry=telemetry, notices=notices, policy=identity.challenges
    )
    sessions = SessionStarter(secrets=secret_source, ids=ids, lifetime=identity.session_lifetime)
    common = _Common(transactions=transactions, clock=clock, telemetry=telemetry)
    return IdentityServices(
        request_sign_up=RequestSignUp(issuer=issuer, limits=limits, ids=ids, **common),
        confirm_sign_up=ConfirmSignUp(answers=answers, hasher=hasher, limits=limits, **common),
        sign_in=SignIn(sessions=sessions, hasher=hasher, limits=limits, notices=notices, **common),
        authenticate=AuthenticateBearer(transactions=transactions, clock=clock),
        sign_out=SignOut(**common),
        revoke_sessions=RevokeSessions(ids=ids, **common),
        request_sign_in_method=RequestSignInMethod(issuer=issuer, limits=limits, **common),
        confirm_sign_in_method=ConfirmSignInMethod(answers=answers, limits=limits, **common),
        request_password_recovery=RequestPasswordRecovery(issuer=issuer, limits=limits, **common),
        confirm_password_recovery=ConfirmPasswordRecovery(
            answers=answers, hasher=hasher, limits=limits, **common
        ),
        request_step_up=RequestStepUp(issuer=issuer, limits=limits, **common),
        confirm_step_up=ConfirmStepUp(
            answers=answers,
            secrets=secret_source,
            limits=limits,
            ids=ids,
            lifetime=identity.elevation_lifetime,
            **common,
        ),
        create_organization=CreateOrganization(ids=ids, limits=limits, **common),
        invite_member=InviteMember(
            secrets=secret_source,
            sealer=sealer,
            limits=limits,
            ids=ids,
            invitation_limits=identity.invitations,
            **common,
        ),
        revoke_invitation=RevokeInvitation(**common),
        accept_invitation=AcceptInvitation(limits=limits, **common),
        request_magic_link=RequestMagicLink(
            secrets=secret_source,
            sealer=sealer,
            limits=limits,
            ids=ids,
            lifetime=identity.magic_link_lifetime,
            **common,
        ),
        redeem_magic_link=RedeemMagicLink(sessions=sessions, limits=limits, **common),
        check_readiness=CheckReadiness(
            probe=PostgresReadinessProbe(pool, role=readiness_role), telemetry=telemetry
        ),
        telemetry=telemetry,
    )


def api_identity_services(
    settings: Settings,
    parts: ProcessParts,
    pool: AsyncConnectionPool[AsyncConnection],
    access: DatabaseAccess = DatabaseAccess.API,
) -> IdentityServices:
    """The identity services of a listener, over its pool and the process's shared parts:
    the public API's (``access`` API) or the admin listener's staff sign-in (ADMIN)."""
    return build_identity_services(
        pool=pool,
        sealer=parts.sealer,
        hasher=parts.hasher,
        clock=parts.clock,
        ids=parts.ids,
        secret_source=parts.secret_source,
        telemetry=parts.telemetry,
        identity=settings.identity,
        trace_context=parts.tracing.current_traceparent if parts.tracing else None,
        readiness_role=readiness_role(settings, access),
        staff=access is DatabaseAccess.ADMIN,
    )
