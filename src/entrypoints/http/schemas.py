"""Request and response bodies (msgspec), mapped by hand to commands and results."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import msgspec
from msgspec import Meta

from outbox.entrypoints.wire import Out

Identifier = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=320,
        description="An email address or an E.164 phone number (+ and 7 to 15 digits).",
        examples=["alice@example.com", "+34612345678"],
    ),
]
Email = Annotated[str, Meta(min_length=1, max_length=320, examples=["bob@example.com"])]
Password = Annotated[
    str,
    Meta(
        min_length=8,
        max_length=256,
        description="8 to 256 characters, not only spaces, and not easy to guess (a common"
        " word, a keyboard run, the address itself: 400 naming the field).",
    ),
]
Code = Annotated[
    str, Meta(min_length=1, max_length=32, description="The one-time code that was sent.")
]
Token = Annotated[str, Meta(min_length=1, max_length=512, description="The token from the link.")]


class Body(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """Base of every request body: camelCase, unknown fields refused."""


class SignUpRequest(Body, frozen=True):
    """Sign up an identifier; the password is chosen at the confirmation."""

    identifier: Identifier


class SignUpConfirmationRequest(Body, frozen=True):
    """Confirm a sign-up with the code the identifier received, and choose the password."""

    identifier: Identifier
    code: Code
    password: Password


class ConfirmationRequest(Body, frozen=True):
    """Confirm an identifier with the code it received."""

    identifier: Identifier
    code: Code


class SignInRequest(Body, frozen=True):
    """Sign in with a verified identifier and its password."""

    identifier: Identifier
    password: Annotated[str, Meta(min_length=1, max_length=256)]


class SignInMethodRequest(Body, frozen=True):
    """Add an identifier to the signed-in identity."""

    identifier: Identifier


class PasswordRecoveryRequest(Body, frozen=True):
    """Ask for a recovery code."""

    identifier: Identifier


class PasswordRecoveryConfirmationRequest(Body, frozen=True):
    """Set a new password with the recovery code."""

    identifier: Identifier
    code: Code
    new_password: Password


class StepUpConfirmationRequest(Body, frozen=True):
    """Confirm a step-up with its code."""

    code: Code


class OrganizationRequest(Body, frozen=True):
    """Create an organization."""

    name: Annotated[str, Meta(min_length=1, max_length=200)]


class InvitationRequest(Body, frozen=True):
    """Invite an email address."""

    email: Email


class TokenRequest(Body, frozen=True):
    """Use a token from a link."""

    token: Token


class MagicLinkRequest(Body, frozen=True):
    """Ask for a sign-in link."""

    email: Email


class ChallengeAccepted(Out, frozen=True):
    """A code or link was queued (or not, indistinguishably); only its expiry is told."""

    challenge_expires_at: datetime


class SessionCreated(Out, frozen=True):
    """A bearer token, shown once."""

    token: str
    expires_at: datetime


class ElevationCreated(Out, frozen=True):
    """A short-lived elevation token for sensitive actions, shown once."""

    elevation_token: str
    expires_at: datetime


class OrganizationCreated(Out, frozen=True):
    """The new organization."""

    id: UUID
    name: str


class InvitationCreated(Out, frozen=True):
    """The new invitation; its token only travels by email."""

    id: UUID
    expires_at: datetime


class InvitationAccepted(Out, frozen=True):
    """The organization joined."""

    organization_id: UUID


class Health(Out, frozen=True):
    """Liveness or readiness."""

    status: str
    pending_migrations: list[str] = msgspec.field(default_factory=list)
    # When not ready: the role that is missing, and what an operator should do.
    missing_role: str | None = None
    hint: str | None = None
