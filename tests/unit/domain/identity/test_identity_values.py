"""Identifiers, passwords, tokens, sessions, invitations, magic links and rate limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from outbox.domain.identity.errors import TokenNotUsable, WeakPassword
from outbox.domain.identity.invitations import Invitation, InvitationState
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Permission, found_organization
from outbox.domain.identity.passwords import check_password
from outbox.domain.identity.rate_limits import RateLimit
from outbox.domain.identity.sessions import Elevation, Session
from outbox.domain.identity.tokens import token_digest

NOW = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)


@pytest.mark.parametrize("password", ["short", "x" * 257, " " * 9])
def test_weak_passwords_are_refused(password: str) -> None:
    with pytest.raises(WeakPassword):
        check_password(password)


def test_token_digest_is_sha256_hex() -> None:
    expected = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert expected == token_digest("hello")


def test_a_session_ends_at_expiry_or_revocation() -> None:
    session = Session.start(
        id=UUID(int=1),
        identity_id=UUID(int=2),
        token_digest="d",
        now=NOW,
        lifetime=timedelta(hours=1),
    )
    assert session.is_active(NOW + timedelta(minutes=59))
    assert not session.is_active(NOW + timedelta(hours=1))


def test_an_elevation_never_outlives_its_session() -> None:
    elevation = Elevation.grant(
        id=UUID(int=3),
        session_id=UUID(int=1),
        identity_id=UUID(int=2),
        session_expires_at=NOW + timedelta(minutes=2),
        token_digest="e",
        now=NOW,
        lifetime=timedelta(minutes=5),
    )
    assert NOW + timedelta(minutes=2) == elevation.expires_at


def test_an_expired_elevation_still_serves_reads_within_their_window() -> None:
    elevation = Elevation.grant(
        id=UUID(int=3),
        session_id=UUID(int=1),
        identity_id=UUID(int=2),
        session_expires_at=NOW + timedelta(hours=12),
        token_digest="e",
        now=NOW,
        lifetime=timedelta(minutes=5),
    )
    mine = {"session_id": UUID(int=1), "identity_id": UUID(int=2)}
    later = NOW + timedelta(minutes=6)
    window = timedelta(hours=8)

    assert not elevation.elevates(**mine, now=later)  # a command needs a fresh one
    assert elevation.elevates(**mine, now=later, reads_for=window)
    assert not elevation.elevates(**mine, now=NOW + timedelta(hours=9), reads_for=window)
    assert not elevation.elevates(
        session_id=UUID(int=9), identity_id=UUID(int=2), now=later, reads_for=window
    )


def invitation() -> Invitation:
    return Invitation.issue(
        id=UUID(int=1),
        organization_id=UUID(int=2),
        email="g@example.com",
        token_digest="t",
        invited_by=UUID(int=3),
        now=NOW,
        lifetime=timedelta(days=7),
    )


def test_an_invitation_is_accepted_once() -> None:
    accepted = invitation().accept(identity_id=UUID(int=9), now=NOW)
    assert InvitationState.ACCEPTED == accepted.state
    assert UUID(int=9) == accepted.accepted_by
    with pytest.raises(TokenNotUsable):
        accepted.accept(identity_id=UUID(int=9), now=NOW)
    with pytest.raises(TokenNotUsable):
        accepted.revoke(NOW)


def test_an_expired_or_revoked_invitation_cannot_be_accepted() -> None:
    with pytest.raises(TokenNotUsable):
        invitation().accept(identity_id=UUID(int=9), now=NOW + timedelta(days=7))
    with pytest.raises(TokenNotUsable):
        invitation().revoke(NOW).accept(identity_id=UUID(int=9), now=NOW)


def test_a_magic_link_is_redeemed_once_and_resent_only_while_open() -> None:
    link = MagicLink.issue(
        id=UUID(int=1),
        identity_id=UUID(int=2),
        email="a@example.com",
        token_digest="t1",
        now=NOW,
        lifetime=timedelta(minutes=15),
    )
    resent = link.resend(
        token_digest="t2", now=NOW + timedelta(minutes=5), lifetime=timedelta(minutes=15)
    )
    assert NOW + timedelta(minutes=20) == resent.expires_at
    redeemed = resent.redeem(NOW + timedelta(minutes=6))
    with pytest.raises(TokenNotUsable):
        redeemed.redeem(NOW + timedelta(minutes=6))
    with pytest.raises(TokenNotUsable):
        redeemed.resend(token_digest="t3", now=NOW, lifetime=timedelta(minutes=15))


def test_the_founder_holds_every_permission() -> None:
    organization, membership = found_organization(
        organization_id=UUID(int=1), name="  Acme ", founder=UUID(int=2), now=NOW
    )
    assert "Acme" == organization.name
    assert membership.allows(Permission.MANAGE_ACCOUNT)
    with pytest.raises(ValueError, match="name"):
        found_organization(organization_id=UUID(int=1), name=" ", founder=UUID(int=2), now=NOW)


def test_rate_limit_windows_are_aligned_and_say_how_long_to_wait() -> None:
    rule = RateLimit(limit=2, window=timedelta(minutes=1))
    assert datetime(2026, 1, 1, 12, 0, tzinfo=UTC) == rule.window_start(NOW)
    assert rule.retry_after(hits=2, now=NOW) is None
    assert timedelta(seconds=30) == rule.retry_after(hits=3, now=NOW)
    with pytest.raises(ValueError, match="at least one"):
        RateLimit(limit=0, window=timedelta(minutes=1))
