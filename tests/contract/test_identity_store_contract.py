"""The identity store, unit of work and rate limiter behave alike in memory and in PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from uuid import UUID

import attrs
import psycopg
import pytest
from uuid_utils.compat import uuid7

from outbox.application.errors import PermissionDenied
from outbox.application.identity.errors import IdentifierTaken
from outbox.application.identity.ports import MagicLinkTarget, RecoveryTarget
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message
from outbox.domain.identity.challenges import Challenge, ChallengePolicy, ChallengeState
from outbox.domain.identity.code_budgets import Audience, CodeBudget
from outbox.domain.identity.identities import Identity, LoginIdentifier
from outbox.domain.identity.invitations import (
    Invitation,
    InvitationOutcome,
    InvitationRefusal,
    InvitationState,
)
from outbox.domain.identity.magic_links import MagicLink
from outbox.domain.identity.organizations import Membership, Permission, found_organization
from outbox.domain.identity.rate_limits import Backoff, RateLimit
from outbox.domain.identity.sessions import Elevation, Session
from outbox.domain.purposes import Purpose
from tests.contract.identity_harness import (
    IdentityHarness,
    MemoryIdentityHarness,
    postgres_identity_harness,
)

HASH = "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaA"
ENVELOPE = "v1.test.c2VhbGVk.c2VhbGVk"
POLICY = ChallengePolicy()


@pytest.fixture
async def postgres_harness(database_url: str) -> AsyncIterator[IdentityHarness]:
    """The adapters on the contract suite's shared database, identity tables emptied first."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            "TRUNCATE identity.identities, identity.rate_limit_counters,"
            " identity.destination_paces CASCADE"
        )
    async for found in postgres_identity_harness(database_url):
        yield found


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def harness(request: pytest.FixtureRequest) -> IdentityHarness:
    """The ports under test: the fakes, or the PostgreSQL adapters."""
    if request.param == "memory":
        return MemoryIdentityHarness()
    found: IdentityHarness = request.getfixturevalue("postgres_harness")
    return found


def digest(n: int) -> str:
    return f"{n:064x}"


async def account(
    harness: IdentityHarness, value: str = "a@example.com", *, verified: bool = True
) -> UUID:
    now = harness.now()
    identity = Identity(id=uuid7(), created_at=now)
    async with harness.transactions.begin() as uow:
        await uow.identity.add_identity(identity)
        await uow.identity.save_login_identifier(
            LoginIdentifier(
                value=value,
                channel=Channel.EMAIL if "@" in value else Channel.SMS,
                identity_id=identity.id,
                created_at=now,
                verified_at=now if verified else None,
            )
        )
        await uow.identity.save_password(identity_id=identity.id, password_hash=HASH, now=now)
        await uow.commit()
    return identity.id


def challenge(
    harness: IdentityHarness,
    identity_id: UUID,
    purpose: Purpose = Purpose.SIGN_UP,
    identifier: str = "a@example.com",
) -> Challenge:
    return Challenge.open(
        id=uuid7(),
        purpose=purpose,
        identity_id=identity_id,
        identifier=identifier,
        channel=Channel.EMAIL,
        code_hash=HASH,
        now=harness.now(),
        policy=POLICY,
    )


def message_for(harness: IdentityHarness, purpose: Purpose, subject: UUID) -> Message:
    return Message.enqueue(
        id=uuid7(),
        purpose=purpose,
        channel=Channel.EMAIL,
        destination="a@example.com",
        subject_id=subject,
        template=purpose.value,
        now=harness.now(),
        sealed_secret=ENVELOPE,
        expires_at=harness.now() + timedelta(minutes=10),
    )


async def test_an_account_round_trips_and_an_unknown_one_is_none(harness: IdentityHarness) -> None:
    identity_id = await account(harness, verified=False)

    async with harness.transactions.begin() as uow:
        found = await uow.identity.find_account("a@example.com")
        missing = await uow.identity.find_account("b@example.com")

    assert missing is None
    assert found is not None
    assert (identity_id, HASH, False) == (
        found.identity_id,
        found.password_hash,
        found.identifier.is_verified,
    )


async def test_an_unverified_identifier_is_taken_over_a_verified_one_refused(
    harness: IdentityHarness,
) -> None:
    await account(harness, "pending@example.com", verified=False)
    await account(harness, "held@example.com", verified=True)
    newcomer = await account(harness, "new@example.com")
    now = harness.now()

    async with harness.transactions.begin() as uow:
        await uow.identity.save_login_identifier(
            LoginIdentifier(
                value="pending@example.com",
                channel=Channel.EMAIL,
                identity_id=newcomer,
                created_at=now,
                verified_at=now,
            )
        )
        await uow.commit()
    async with harness.transactions.begin() as uow:
        with pytest.raises(IdentifierTaken):
            await uow.identity.save_login_identifier(
                LoginIdentifier(
                    value="held@example.com",
                    channel=Channel.EMAIL,
                    identity_id=newcomer,
                    created_at=now,
                )
            )
    async with harness.transactions.begin() as uow:
        taken = await uow.identity.find_account("pending@example.com")
        verified = await uow.identity.find_verified_identifiers(newcomer)

    assert taken is not None
    assert newcomer == taken.identity_id
    assert ["new@example.com", "pending@example.com"] == [v.value for v in verified]


async def test_verified_identifiers_list_emails_first(harness: IdentityHarness) -> None:
    identity_id = await account(harness, "+34612345678")
    now = harness.now()
    async with harness.transactions.begin() as uow:
        await uow.identity.save_login_identifier(
            LoginIdentifier(
                value="late@example.com",
                channel=Channel.EMAIL,
                identity_id=identity_id,
                created_at=now + timedelta(seconds=1),
                verified_at=now,
            )
        )
        await uow.commit()
        await uow.identity.find_verified_identifiers(identity_id)

    async with harness.transactions.begin() as uow:
        found = await uow.identity.find_verified_identifiers(identity_id)

    assert ["late@example.com", "+34612345678"] == [f.value for f in found]


async def test_the_newest_open_challenge_is_found_by_its_keys(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    first = challenge(harness, identity_id)
    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(first)
        await uow.identity.save_challenge(
            challenge(harness, identity_id, Purpose.STEP_UP, "other@example.com")
        )
        await uow.commit()
    resent = first.resend(code_hash=HASH + "x", now=harness.now(), policy=POLICY)

    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(resent)
        by_identifier = await uow.identity.find_challenge(
            purpose=Purpose.SIGN_UP, identity_id=None, identifier="a@example.com"
        )
        by_identity = await uow.identity.find_challenge(
            purpose=Purpose.STEP_UP, identity_id=identity_id, identifier=None
        )
        other_purpose = await uow.identity.find_challenge(
            purpose=Purpose.PASSWORD_RECOVERY, identity_id=identity_id, identifier=None
        )
        await uow.identity.save_challenge(resent.close(harness.now()))
        closed = await uow.identity.find_challenge(
            purpose=Purpose.SIGN_UP, identity_id=None, identifier="a@example.com"
        )

    assert resent == by_identifier
    assert by_identity is not None
    assert "other@example.com" == by_identity.identifier
    assert other_purpose is None
    assert closed is None


async def test_leaving_without_commit_keeps_nothing_commit_keeps_both(
    harness: IdentityHarness,
) -> None:
    identity_id = await account(harness)
    opened = challenge(harness, identity_id)

    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(opened)
        await uow.outbox.enqueue(message_for(harness, Purpose.SIGN_UP, opened.id))
    async with harness.transactions.begin() as uow:
        assert (
            await uow.identity.find_challenge(
                purpose=Purpose.SIGN_UP, identity_id=identity_id, identifier=None
            )
            is None
        )
    assert [] == await harness.messages(opened.id)

    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(opened)
        await uow.outbox.enqueue(message_for(harness, Purpose.SIGN_UP, opened.id))
        await uow.commit()
    assert [("pending", None)] == await harness.messages(opened.id)


async def test_an_elevation_is_granted_once_per_consumed_step_up(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    now = harness.now()
    session = Session.start(
        id=uuid7(),
        identity_id=identity_id,
        token_digest=digest(1),
        now=now,
        lifetime=timedelta(hours=1),
    )
    opened = challenge(harness, identity_id, Purpose.STEP_UP)
    consumed = challenge(harness, identity_id, Purpose.STEP_UP).answer(
        correct=True, now=now, policy=POLICY
    )
    async with harness.transactions.begin() as uow:
        await uow.identity.add_session(session)
        await uow.identity.save_challenge(opened)
        await uow.identity.save_challenge(consumed)
        await uow.commit()

    def elevation(token: int) -> Elevation:
        return Elevation.grant(
            id=uuid7(),
            session_id=session.id,
            identity_id=identity_id,
            session_expires_at=session.expires_at,
            token_digest=digest(token),
            now=now,
            lifetime=timedelta(minutes=5),
        )

    for refused in (opened.id, uuid7()):
        with pytest.raises(PermissionDenied):
            async with harness.transactions.begin() as uow:
                await uow.identity.add_elevation(elevation(2), challenge_id=refused)
    async with harness.transactions.begin() as uow:
        await uow.identity.add_elevation(elevation(3), challenge_id=consumed.id)
        await uow.commit()
    with pytest.raises(PermissionDenied):
        async with harness.transactions.begin() as uow:
            await uow.identity.add_elevation(elevation(4), challenge_id=consumed.id)
    async with harness.transactions.begin() as uow:
        assert await uow.identity.find_elevation(digest(2)) is None
        assert await uow.identity.find_elevation(digest(3)) is not None
        assert await uow.identity.find_elevation(digest(4)) is None


async def test_sessions_and_elevations_round_trip_and_revoke(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    now = harness.now()
    session = Session.start(
        id=uuid7(),
        identity_id=identity_id,
        token_digest=digest(1),
        now=now,
        lifetime=timedelta(hours=1),
    )
    elevation = Elevation.grant(
        id=uuid7(),
        session_id=session.id,
        identity_id=identity_id,
        session_expires_at=session.expires_at,
        token_digest=digest(2),
        now=now,
        lifetime=timedelta(minutes=5),
    )
    step_up = challenge(harness, identity_id, Purpose.STEP_UP).answer(
        correct=True, now=now, policy=POLICY
    )
    async with harness.transactions.begin() as uow:
        await uow.identity.add_session(session)
        await uow.identity.save_challenge(step_up)
        await uow.identity.add_elevation(elevation, challenge_id=step_up.id)
        await uow.commit()

    async with harness.transactions.begin() as uow:
        assert session == await uow.identity.find_session(digest(1))
        assert elevation == await uow.identity.find_elevation(digest(2))
        assert await uow.identity.find_session(digest(3)) is None
        assert 1 == await uow.identity.revoke_sessions(identity_id=identity_id, now=now)
        assert 0 == await uow.identity.revoke_sessions(identity_id=identity_id, now=now)
        revoked = await uow.identity.find_session(digest(1))
    assert revoked is not None
    assert not revoked.is_active(now)


async def test_organizations_memberships_and_invitations_round_trip(
    harness: IdentityHarness,
) -> None:
    founder = await account(harness)
    member = await account(harness, "m@example.com")
    now = harness.now()
    organization, founding = found_organization(
        organization_id=uuid7(), name="Acme", founder=founder, now=now
    )
    invitation = Invitation.issue(
        id=uuid7(),
        organization_id=organization.id,
        email="g@example.com",
        token_digest=digest(7),
        invited_by=founder,
        now=now,
        lifetime=timedelta(days=7),
    )
    async with harness.transactions.begin() as uow:
        await uow.identity.add_organization(organization, founding)
        await uow.identity.save_membership(
            Membership(organization_id=organization.id, identity_id=member, created_at=now)
        )
        await uow.identity.save_invitation(invitation)
        await uow.commit()

    async with harness.transactions.begin() as uow:
        assert organization == await uow.identity.find_organization(organization.id)
        found = await uow.identity.find_membership(
            organization_id=organization.id, identity_id=founder
        )
        plain = await uow.identity.find_membership(
            organization_id=organization.id, identity_id=member
        )
        assert invitation == await uow.identity.find_invitation(invitation.id)
        assert invitation == await uow.identity.find_invitation_by_token(digest(7))
        await uow.identity.save_invitation(invitation.revoke(now))
        revoked = await uow.identity.find_invitation(invitation.id)

    assert revoked is not None
    assert InvitationState.REVOKED is revoked.state
    assert found is not None
    assert frozenset({Permission.MANAGE_ACCOUNT}) == found.permissions
    assert plain is not None
    assert frozenset() == plain.permissions


async def _issue(
    harness: IdentityHarness, organization: UUID, inviter: UUID, email: str, *, pending_max: int = 9
) -> tuple[Invitation, InvitationOutcome]:
    invitation = Invitation.issue(
        id=uuid7(),
        organization_id=organization,
        email=email,
        token_digest=f"{uuid7().int:064x}",
        invited_by=inviter,
        now=harness.now(),
        lifetime=timedelta(days=7),
    )
    async with harness.transactions.begin() as uow:
        outcome = await uow.identity.enqueue_invitation(
            invitation=invitation,
            message=message_for(harness, Purpose.INVITATION, invitation.id),
            pending_max=pending_max,
            per_organization=RateLimit(limit=3, window=timedelta(hours=1)),
            per_address=RateLimit(limit=2, window=timedelta(days=1)),
        )
        await uow.commit()
    return invitation, outcome


async def test_an_invitation_is_issued_within_its_limits_or_refused_writing_nothing(
    harness: IdentityHarness,
) -> None:
    founder = await account(harness)
    stranger = await account(harness, "s@example.com")
    organization, founding = found_organization(
        organization_id=uuid7(), name="Acme", founder=founder, now=harness.now()
    )
    async with harness.transactions.begin() as uow:
        await uow.identity.add_organization(organization, founding)
        await uow.commit()

    first, issued = await _issue(harness, organization.id, founder, "g@example.com")
    second, reissued = await _issue(harness, organization.id, founder, "g@example.com")
    _, per_address = await _issue(harness, organization.id, founder, "g@example.com")
    _, pending = await _issue(harness, organization.id, founder, "h@example.com", pending_max=1)
    await _issue(harness, organization.id, founder, "h@example.com")
    _, per_organization = await _issue(harness, organization.id, founder, "i@example.com")
    _, foreign = await _issue(harness, organization.id, stranger, "j@example.com")

    assert InvitationOutcome() == issued
    assert InvitationOutcome(withdrawn=first.id) == reissued
    assert InvitationRefusal.ADDRESS_RATE is per_address.refusal
    assert per_address.retry_after is not None
    assert timedelta(hours=23) < per_address.retry_after <= timedelta(days=1)
    assert InvitationOutcome(refusal=InvitationRefusal.PENDING_LIMIT) == pending
    assert InvitationRefusal.ORGANIZATION_RATE is per_organization.refusal
    assert per_organization.retry_after is not None
    assert timedelta(minutes=59) < per_organization.retry_after <= timedelta(hours=1)
    assert InvitationOutcome(refusal=InvitationRefusal.PERMISSION) == foreign
    assert [("dead_lettered", "invitation_revoked")] == await harness.messages(first.id)
    assert [("pending", None)] == await harness.messages(second.id)


async def test_recovery_opens_only_for_a_verified_identifier(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    await account(harness, "pending@example.com", verified=False)
    first = challenge(harness, identity_id, Purpose.PASSWORD_RECOVERY)
    second = challenge(harness, identity_id, Purpose.PASSWORD_RECOVERY)

    async with harness.transactions.begin() as uow:
        unknown = await uow.identity.find_recovery_target("nobody@example.com")
        unverified = await uow.identity.find_recovery_target("pending@example.com")
        await uow.identity.open_recovery_if_known(
            identity_id=None,
            challenge=first,
            message=message_for(harness, Purpose.PASSWORD_RECOVERY, first.id),
        )
        await uow.identity.open_recovery_if_known(
            identity_id=identity_id,
            challenge=first,
            message=message_for(harness, Purpose.PASSWORD_RECOVERY, first.id),
        )
        await uow.commit()
    async with harness.transactions.begin() as uow:
        known = await uow.identity.find_recovery_target("a@example.com")
        await uow.identity.open_recovery_if_known(
            identity_id=identity_id,
            challenge=second,
            message=message_for(harness, Purpose.PASSWORD_RECOVERY, second.id),
        )
        await uow.commit()
    async with harness.transactions.begin() as uow:
        after = await uow.identity.find_recovery_target("a@example.com")

    assert RecoveryTargetView(None, None) == view(unknown)
    assert RecoveryTargetView(None, None) == view(unverified)
    assert RecoveryTargetView(identity_id, first.id) == view(known)
    assert RecoveryTargetView(identity_id, second.id) == view(after)
    assert [("pending", None)] == await harness.messages(first.id)


@attrs.frozen
class RecoveryTargetView:
    identity_id: UUID | None
    challenge_id: UUID | None


def view(target: RecoveryTarget | MagicLinkTarget) -> RecoveryTargetView:
    found = target.challenge if isinstance(target, RecoveryTarget) else target.link
    return RecoveryTargetView(target.identity_id, found.id if found else None)


async def test_magic_links_open_only_for_a_verified_email(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    now = harness.now()
    link = MagicLink.issue(
        id=uuid7(),
        identity_id=identity_id,
        email="a@example.com",
        token_digest=digest(9),
        now=now,
        lifetime=timedelta(minutes=15),
    )

    async with harness.transactions.begin() as uow:
        unknown = await uow.identity.find_magic_link_target("nobody@example.com")
        await uow.identity.open_magic_link_if_known(
            identity_id=identity_id,
            link=link,
            message=message_for(harness, Purpose.MAGIC_LINK, link.id),
        )
        await uow.commit()
    async with harness.transactions.begin() as uow:
        known = await uow.identity.find_magic_link_target("a@example.com")
        by_token = await uow.identity.find_magic_link_by_token(digest(9))
        await uow.identity.save_magic_link(link.redeem(now))
        await uow.commit()
    async with harness.transactions.begin() as uow:
        spent = await uow.identity.find_magic_link_target("a@example.com")

    assert RecoveryTargetView(None, None) == view(unknown)
    assert RecoveryTargetView(identity_id, link.id) == view(known)
    assert link == by_token
    assert RecoveryTargetView(identity_id, None) == view(spent)
    assert [("pending", None)] == await harness.messages(link.id)


async def test_the_rate_limiter_counts_per_key_and_window(harness: IdentityHarness) -> None:
    now = harness.now()
    later = now + timedelta(minutes=1)

    counts = [
        await harness.limiter.hit(key=digest(1), window_start=now, window_end=later),
        await harness.limiter.hit(key=digest(1), window_start=now, window_end=later),
        await harness.limiter.hit(key=digest(2), window_start=now, window_end=later),
        await harness.limiter.hit(
            key=digest(1), window_start=later, window_end=later + timedelta(minutes=1)
        ),
    ]

    assert [1, 2, 1, 1] == counts


async def test_the_pace_spaces_sends_and_forgets_after_a_quiet_streak(
    harness: IdentityHarness,
) -> None:
    backoff = Backoff()
    start = harness.now()
    minutes = [0, 0.5, 1, 2, 3, 7, 11, 12, 17, 40]

    answers = [
        await harness.limiter.pace(key=digest(1), now=start + timedelta(minutes=m), backoff=backoff)
        for m in minutes
    ]
    other = await harness.limiter.pace(key=digest(2), now=start, backoff=backoff)

    waits = [None if a is None else a.total_seconds() for a in answers]
    # Sends at 0, 1, 3, 7 and 12 minutes wait 1, 2, 4, 5 and 5; 40 starts a new streak.
    assert [None, 30.0, None, 60.0, None, None, 60.0, None, None, None] == waits
    assert other is None


async def test_a_challenge_answer_round_trips(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    opened = challenge(harness, identity_id)
    answered = opened.answer(correct=False, now=harness.now(), policy=POLICY)
    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(opened)
        await uow.identity.save_challenge(answered)
        await uow.commit()

    async with harness.transactions.begin() as uow:
        found = await uow.identity.find_challenge(
            purpose=Purpose.SIGN_UP, identity_id=identity_id, identifier="a@example.com"
        )

    assert found is not None
    assert (1, ChallengeState.OPEN) == (found.failed_attempts, found.state)


async def test_signing_out_revokes_that_session_only_and_once(harness: IdentityHarness) -> None:
    identity_id = await account(harness)
    now = harness.now()
    first, second = (
        Session.start(
            id=uuid7(),
            identity_id=identity_id,
            token_digest=digest(n),
            now=now,
            lifetime=timedelta(hours=1),
        )
        for n in (31, 32)
    )
    async with harness.transactions.begin() as uow:
        await uow.identity.add_session(first)
        await uow.identity.add_session(second)
        await uow.commit()

    async with harness.transactions.begin() as uow:
        assert 1 == await uow.identity.revoke_session(session_id=first.id, now=now)
        assert 0 == await uow.identity.revoke_session(session_id=first.id, now=now)
        assert 0 == await uow.identity.revoke_session(session_id=uuid7(), now=now)
        await uow.commit()

    async with harness.transactions.begin() as uow:
        ended = await uow.identity.find_session(digest(31))
        kept = await uow.identity.find_session(digest(32))
    assert ended is not None
    assert now == ended.revoked_at
    assert kept is not None
    assert kept.is_active(now)


async def test_a_code_budget_starts_empty_and_round_trips_per_audience_and_day(
    harness: IdentityHarness,
) -> None:
    identity_id = await account(harness)
    now = harness.now()
    today = CodeBudget.day_of(now)

    async with harness.transactions.begin() as uow:
        fresh = await uow.identity.hold_code_budget(
            identity_id=identity_id, audience=Audience.ANYONE, day=today
        )
        await uow.identity.save_code_budget(fresh.spend(now=now, limit=1))
        await uow.commit()

    async with harness.transactions.begin() as uow:
        spent = await uow.identity.hold_code_budget(
            identity_id=identity_id, audience=Audience.ANYONE, day=today
        )
        other_audience = await uow.identity.hold_code_budget(
            identity_id=identity_id, audience=Audience.SESSION, day=today
        )
        tomorrow = await uow.identity.hold_code_budget(
            identity_id=identity_id, audience=Audience.ANYONE, day=today + timedelta(days=1)
        )
    assert (0, None) == (fresh.wrong_codes, fresh.exhausted_at)
    assert (1, now) == (spent.wrong_codes, spent.exhausted_at)
    assert (0, None) == (other_audience.wrong_codes, other_audience.exhausted_at)
    assert (0, None) == (tomorrow.wrong_codes, tomorrow.exhausted_at)


async def test_a_locked_challenge_withdraws_its_messages(harness: IdentityHarness) -> None:
    """cancel_by_subject takes challenge_locked as it takes challenge_consumed."""
    identity_id = await account(harness)
    opened = challenge(harness, identity_id)
    async with harness.transactions.begin() as uow:
        await uow.identity.save_challenge(opened)
        await uow.outbox.enqueue(message_for(harness, opened.purpose, opened.id))
        await uow.commit()

    async with harness.transactions.begin() as uow:
        cancelled = await uow.outbox.cancel_by_subject(
            subject_id=opened.id, reason=FailureClass.CHALLENGE_LOCKED
        )
        await uow.commit()

    assert 1 == cancelled
    assert [("dead_lettered", "challenge_locked")] == await harness.messages(opened.id)
