"""Rows of the identity functions, to and from domain objects."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from outbox.domain.channels import Channel
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge, ChallengeState
from outbox.domain.identity.invitations import Invitation, InvitationState
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Membership, Permission
from outbox.domain.purposes import Purpose

Row = tuple[Any, ...]  # one row as psycopg returns it


def challenge_from(row: Row) -> Challenge:
    """A challenge from a row of its columns, in table order."""
    return Challenge(
        id=row[0],
        purpose=Purpose(row[1]),
        identity_id=row[2],
        identifier=row[3],
        channel=Channel(row[4]),
        code_hash=row[5],
        failed_attempts=row[6],
        state=ChallengeState(row[7]),
        created_at=row[8],
        expires_at=row[9],
        ended_at=row[10],
    )


def invitation_from(row: Row) -> Invitation:
    """An invitation from a row of its columns, in table order."""
    return Invitation(
        id=row[0],
        organization_id=row[1],
        email=row[2],
        token_digest=row[3],
        invited_by=row[4],
        state=InvitationState(row[5]),
        created_at=row[6],
        expires_at=row[7],
        ended_at=row[8],
        accepted_by=row[9],
    )


def link_from(row: Row) -> MagicLink:
    """A magic link from a row of its columns, in table order."""
    return MagicLink(
        id=row[0],
        identity_id=row[1],
        email=row[2],
        token_digest=row[3],
        created_at=row[4],
        expires_at=row[5],
        redeemed_at=row[6],
    )


def membership_from(row: Row) -> Membership:
    """A membership from a row of its columns, in table order."""
    return Membership(
        organization_id=row[0],
        identity_id=row[1],
        permissions=frozenset(Permission(p) for p in row[2]),
        created_at=row[3],
    )


def challenge_params(challenge: Challenge) -> tuple[Any, ...]:
    """The arguments of identity.save_challenge."""
    return (
        challenge.id,
        challenge.purpose.value,
        challenge.identity_id,
        challenge.identifier,
        challenge.channel.value,
        challenge.code_hash,
        challenge.failed_attempts,
        challenge.state.value,
        challenge.created_at,
        challenge.expires_at,
        challenge.ended_at,
    )


def link_params(link: MagicLink) -> tuple[Any, ...]:
    """The arguments of identity.save_magic_link."""
    return (
        link.id,
        link.identity_id,
        link.email,
        link.token_digest,
        link.created_at,
        link.expires_at,
        link.redeemed_at,
    )


def message_params(message: Message) -> tuple[Any, ...]:
    """The message arguments of the *_if_known functions."""
    return (
        message.id,
        message.template,
        Jsonb(dict(message.params)),
        message.locale,
        message.sealed_secret,
    )
