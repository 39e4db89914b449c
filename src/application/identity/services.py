"""The identity use cases an entry point serves, built once by the composition root."""

from __future__ import annotations

import attrs

from outbox.application.check_readiness import CheckReadiness
from outbox.application.identity.accept_invitation import AcceptInvitation
from outbox.application.identity.authenticate_bearer import AuthenticateBearer
from outbox.application.identity.confirm_password_recovery import ConfirmPasswordRecovery
from outbox.application.identity.confirm_sign_in_method import ConfirmSignInMethod
from outbox.application.identity.confirm_sign_up import ConfirmSignUp
from outbox.application.identity.confirm_step_up import ConfirmStepUp
from outbox.application.identity.create_organization import CreateOrganization
from outbox.application.identity.invite_member import InviteMember
from outbox.application.identity.redeem_magic_link import RedeemMagicLink
from outbox.application.identity.request_magic_link import RequestMagicLink
from outbox.application.identity.request_password_recovery import RequestPasswordRecovery
from outbox.application.identity.request_sign_in_method import RequestSignInMethod
from outbox.application.identity.request_sign_up import RequestSignUp
from outbox.application.identity.request_step_up import RequestStepUp
from outbox.application.identity.revoke_invitation import RevokeInvitation
from outbox.application.identity.revoke_sessions import RevokeSessions
from outbox.application.identity.sign_in import SignIn
from outbox.application.identity.sign_out import SignOut
from outbox.application.ports import Telemetry


@attrs.frozen(kw_only=True)
class IdentityServices:
    """Every identity use case, plus readiness and telemetry for the entry point itself."""

    request_sign_up: RequestSignUp
    confirm_sign_up: ConfirmSignUp
    sign_in: SignIn
    authenticate: AuthenticateBearer
    sign_out: SignOut
    revoke_sessions: RevokeSessions
    request_sign_in_method: RequestSignInMethod
    confirm_sign_in_method: ConfirmSignInMethod
    request_password_recovery: RequestPasswordRecovery
    confirm_password_recovery: ConfirmPasswordRecovery
    request_step_up: RequestStepUp
    confirm_step_up: ConfirmStepUp
    create_organization: CreateOrganization
    invite_member: InviteMember
    revoke_invitation: RevokeInvitation
    accept_invitation: AcceptInvitation
    request_magic_link: RequestMagicLink
    redeem_magic_link: RedeemMagicLink
    check_readiness: CheckReadiness
    telemetry: Telemetry
