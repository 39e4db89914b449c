"""Every transition of the message lifecycle, one rule per test."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID

import attrs
import pytest

from outbox.domain.channels import Channel
from outbox.domain.delivery.errors import InvalidMessage, InvalidTransition, LeaseLost
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Lease, Message, State
from outbox.domain.delivery.outcomes import DeadLetter, Outcome, Published, Release, Retry
from outbox.domain.purposes import Purpose
from tests.fakes.clock import EPOCH

LEASE = timedelta(seconds=60)
LIFETIME = timedelta(minutes=10)
SECRET = "v1.sealed-envelope"
SUBJECT = UUID(int=0xA)
MESSAGE_ID = UUID(int=1)
TOKEN = UUID(int=0x100)
OTHER_TOKEN = UUID(int=0x200)


def enqueue(
    purpose: Purpose = Purpose.SIGN_UP,
    *,
    now: datetime = EPOCH,
    expires_at: datetime | None = EPOCH + LIFETIME,
) -> Message:
    """A freshly enqueued message of ``purpose`` with what that purpose requires."""
    secret = SECRET if purpose.carries_secret else None
    return Message.enqueue(
        id=MESSAGE_ID,
        purpose=purpose,
        channel=Channel.EMAIL,
        destination="alice@example.com",
        subject_id=None if purpose is Purpose.NOTIFICATION else SUBJECT,
        template=f"{purpose}.code",
        now=now,
        params={"name": "Alice"},
        locale="es",
        sealed_secret=secret,
        expires_at=expires_at,
    )


def leased(purpose: Purpose = Purpose.SIGN_UP, *, token: UUID = TOKEN) -> Message:
    """A message claimed at EPOCH under ``token`` for one lease period."""
    return enqueue(purpose).claim(owner="worker-1", token=token, now=EPOCH, duration=LEASE)


def published() -> Message:
    return leased().record(token=TOKEN, outcome=Published(), now=EPOCH + timedelta(seconds=1))


def dead_lettered(purpose: Purpose = Purpose.SIGN_UP) -> Message:
    return leased(purpose).record(
        token=TOKEN,
        outcome=DeadLetter(reason=FailureClass.REJECTED, code="550"),
        now=EPOCH + timedelta(seconds=1),
    )


# --- enqueue ---------------------------------------------------------------------------


def test_enqueue_creates_a_pending_message_available_now() -> None:
    message = enqueue()

    assert State.PENDING == message.state
    assert EPOCH == message.available_at
    assert EPOCH == message.created_at
    assert 0 == message.attempts
    assert message.lease is None
    assert SECRET == message.sealed_secret
    assert EPOCH + LIFETIME == message.expires_at
    assert {"name": "Alice"} == dict(message.params)
    assert "es" == message.locale
    assert message.is_live


@pytest.mark.parametrize("purpose", [p for p in Purpose if p.carries_secret])
def test_enqueue_refuses_a_secret_purpose_without_a_sealed_secret(purpose: Purpose) -> None:
    with pytest.raises(InvalidMessage):
        Message.enqueue(
            id=MESSAGE_ID,
            purpose=purpose,
            channel=Channel.EMAIL,
            destination="alice@example.com",
            subject_id=SUBJECT,
            template="t",
            now=EPOCH,
        )


def test_enqueue_refuses_a_notification_carrying_a_secret() -> None:
    with pytest.raises(InvalidMessage):
        Message.enqueue(
            id=MESSAGE_ID,
            purpose=Purpose.NOTIFICATION,
            channel=Channel.EMAIL,
            destination="alice@example.com",
            subject_id=None,
            template="t",
            now=EPOCH,
            sealed_secret=SECRET,
        )


@pytest.mark.parametrize("purpose", [p for p in Purpose if p is not Purpose.NOTIFICATION])
def test_enqueue_refuses_a_subject_purpose_without_its_subject(purpose: Purpose) -> None:
    with pytest.raises(InvalidMessage):
        Message.enqueue(
            id=MESSAGE_ID,
            purpose=purpose,
            channel=Channel.EMAIL,
            destination="alice@example.com",
            subject_id=None,
            template="t",
            now=EPOCH,
            sealed_secret=SECRET,
        )


def test_enqueue_accepts_a_plain_notification_without_subject_or_secret() -> None:
    message = enqueue(Purpose.NOTIFICATION, expires_at=None)

    assert message.subject_id is None
    assert message.sealed_secret is None
    assert message.expires_at is None


@pytest.mark.parametrize("expires_at", [EPOCH, EPOCH - timedelta(seconds=1)])
def test_enqueue_refuses_a_message_born_expired(expires_at: datetime) -> None:
    with pytest.raises(InvalidMessage):
        enqueue(expires_at=expires_at)


def test_enqueue_refuses_a_message_without_a_template() -> None:
    with pytest.raises(InvalidMessage):
        Message.enqueue(
            id=MESSAGE_ID,
            purpose=Purpose.NOTIFICATION,
            channel=Channel.EMAIL,
            destination="alice@example.com",
            subject_id=None,
            template="",
            now=EPOCH,
        )


def test_message_params_are_a_read_only_copy_of_the_callers_mapping() -> None:
    params = {"name": "Alice"}
    message = Message.enqueue(
        id=MESSAGE_ID,
        purpose=Purpose.NOTIFICATION,
        channel=Channel.EMAIL,
        destination="alice@example.com",
        subject_id=None,
        template="t",
        now=EPOCH,
        params=params,
    )
    params["name"] = "Mallory"

    assert "Alice" == message.params["name"]
    with pytest.raises(TypeError):
        message.params["name"] = "Mallory"  # type: ignore[index]


def test_message_repr_shows_neither_destination_nor_secret() -> None:
    text = repr(enqueue())

    assert "alice@example.com" not in text
    assert SECRET not in text


# --- claim -----------------------------------------------------------------------------


def test_claim_leases_a_due_pending_message_without_spending_an_attempt() -> None:
    message = enqueue().claim(owner="worker-1", token=TOKEN, now=EPOCH, duration=LEASE)

    assert State.LEASED == message.state
    assert Lease(owner="worker-1", token=TOKEN, expires_at=EPOCH + LEASE) == message.lease
    assert 0 == message.attempts
    assert message.holds(TOKEN, EPOCH)


def test_claim_refuses_a_pending_message_that_is_not_due_yet() -> None:
    retried = leased().record(
        token=TOKEN,
        outcome=Retry(
            available_at=EPOCH + timedelta(seconds=30), failure_class=FailureClass.UNAVAILABLE
        ),
        now=EPOCH,
    )

    assert not retried.is_claimable(EPOCH + timedelta(seconds=29))
    with pytest.raises(InvalidTransition):
        retried.claim(
            owner="w", token=OTHER_TOKEN, now=EPOCH + timedelta(seconds=29), duration=LEASE
        )
    assert retried.is_claimable(EPOCH + timedelta(seconds=30))


def test_claim_refuses_a_message_under_a_live_lease() -> None:
    message = leased()

    with pytest.raises(InvalidTransition):
        message.claim(owner="worker-2", token=OTHER_TOKEN, now=EPOCH + LEASE / 2, duration=LEASE)


@pytest.mark.parametrize("after", [LEASE, LEASE + timedelta(seconds=1)])
def test_claim_takes_over_a_message_whose_lease_ran_out(after: timedelta) -> None:
    now = EPOCH + after
    message = leased().claim(owner="worker-2", token=OTHER_TOKEN, now=now, duration=LEASE)

    assert Lease(owner="worker-2", token=OTHER_TOKEN, expires_at=now + LEASE) == message.lease
    assert message.holds(OTHER_TOKEN, now)
    assert not message.holds(TOKEN, now)


def test_claim_refuses_an_expired_message() -> None:
    message = enqueue()

    with pytest.raises(InvalidTransition):
        message.claim(owner="w", token=TOKEN, now=EPOCH + LIFETIME, duration=LEASE)


@pytest.mark.parametrize("final", [published, dead_lettered])
def test_claim_refuses_a_final_message(final: Callable[[], Message]) -> None:
    message = final()

    assert not message.is_claimable(EPOCH + timedelta(days=1))
    with pytest.raises(InvalidTransition):
        message.claim(owner="w", token=OTHER_TOKEN, now=EPOCH + LEASE * 2, duration=LEASE)


def test_lease_is_live_until_its_expiry_instant() -> None:
    lease = Lease(owner="w", token=TOKEN, expires_at=EPOCH)

    assert lease.is_live(EPOCH - timedelta(microseconds=1))
    assert not lease.is_live(EPOCH)


# --- record ----------------------------------------------------------------------------


def test_record_published_publishes_spends_the_attempt_and_drops_the_secret() -> None:
    now = EPOCH + timedelta(seconds=2)
    message = leased().record(token=TOKEN, outcome=Published(provider_message_id="p-1"), now=now)

    assert State.PUBLISHED == message.state
    assert now == message.published_at
    assert 1 == message.attempts
    assert message.lease is None
    assert message.sealed_secret is None
    assert message.dead_letter_reason is None


def test_record_retry_returns_the_message_to_pending_at_the_retry_time() -> None:
    at = EPOCH + timedelta(seconds=5)
    outcome = Retry(available_at=at, failure_class=FailureClass.THROTTLED, code="429")
    message = leased().record(token=TOKEN, outcome=outcome, now=EPOCH)

    assert State.PENDING == message.state
    assert at == message.available_at
    assert 1 == message.attempts
    assert message.lease is None
    assert SECRET == message.sealed_secret


def test_record_release_returns_to_pending_without_spending_an_attempt() -> None:
    at = EPOCH + timedelta(minutes=1)
    outcome = Release(available_at=at, failure_class=FailureClass.PROVIDER_SUSPENDED)
    message = leased().record(token=TOKEN, outcome=outcome, now=EPOCH)

    assert State.PENDING == message.state
    assert at == message.available_at
    assert 0 == message.attempts
    assert message.lease is None
    assert SECRET == message.sealed_secret


def test_record_dead_letter_is_final_with_its_reason_and_drops_the_secret() -> None:
    now = EPOCH + timedelta(seconds=3)
    outcome = DeadLetter(reason=FailureClass.REJECTED, code="550")
    message = leased().record(token=TOKEN, outcome=outcome, now=now)

    assert State.DEAD_LETTERED == message.state
    assert FailureClass.REJECTED == message.dead_letter_reason
    assert now == message.dead_lettered_at
    assert 1 == message.attempts
    assert message.lease is None
    assert message.sealed_secret is None


def test_record_pre_send_expiry_dead_letters_without_spending_an_attempt() -> None:
    outcome = DeadLetter(reason=FailureClass.CHALLENGE_EXPIRED, attempted=False)
    message = leased().record(token=TOKEN, outcome=outcome, now=EPOCH)

    assert State.DEAD_LETTERED == message.state
    assert FailureClass.CHALLENGE_EXPIRED == message.dead_letter_reason
    assert 0 == message.attempts


def test_record_refuses_a_token_that_is_not_the_lease() -> None:
    with pytest.raises(LeaseLost):
        leased().record(token=OTHER_TOKEN, outcome=Published(), now=EPOCH)


@pytest.mark.parametrize("after", [LEASE, LEASE + timedelta(minutes=5)])
def test_record_refuses_an_expired_lease_even_with_the_right_token(after: timedelta) -> None:
    with pytest.raises(LeaseLost):
        leased().record(token=TOKEN, outcome=Published(), now=EPOCH + after)


def test_record_refuses_the_stale_token_of_a_lease_another_worker_took_over() -> None:
    later = EPOCH + LEASE
    taken_over = leased().claim(owner="worker-2", token=OTHER_TOKEN, now=later, duration=LEASE)

    with pytest.raises(LeaseLost):
        taken_over.record(token=TOKEN, outcome=Published(), now=later)
    assert (
        State.PUBLISHED
        == taken_over.record(token=OTHER_TOKEN, outcome=Published(), now=later).state
    )


def test_record_refuses_a_message_that_was_never_claimed() -> None:
    with pytest.raises(LeaseLost):
        enqueue().record(token=TOKEN, outcome=Published(), now=EPOCH)


def test_record_refuses_the_token_of_a_lease_that_already_recorded() -> None:
    """A pending message after a retry keeps no lease: the old token cannot record twice."""
    retried = leased().record(
        token=TOKEN,
        outcome=Retry(available_at=EPOCH, failure_class=FailureClass.UNAVAILABLE),
        now=EPOCH,
    )

    with pytest.raises(LeaseLost):
        retried.record(token=TOKEN, outcome=Published(), now=EPOCH)


@pytest.mark.parametrize("final", [published, dead_lettered])
def test_record_refuses_a_final_message(final: Callable[[], Message]) -> None:
    with pytest.raises(LeaseLost):
        final().record(token=TOKEN, outcome=Published(), now=EPOCH + timedelta(seconds=2))


# --- supersede -------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", [p for p in Purpose if p.is_supersedable])
def test_supersede_dead_letters_a_pending_message_and_drops_its_secret(purpose: Purpose) -> None:
    now = EPOCH + timedelta(seconds=4)
    message = enqueue(purpose).supersede(now)

    assert State.DEAD_LETTERED == message.state
    assert FailureClass.SUPERSEDED_BY_RESEND == message.dead_letter_reason
    assert now == message.dead_lettered_at
    assert message.sealed_secret is None


def test_supersede_fences_a_leased_message_so_the_holder_cannot_record() -> None:
    message = leased()
    assert message.holds(TOKEN, EPOCH)

    superseded = message.supersede(EPOCH + timedelta(seconds=1))

    assert State.DEAD_LETTERED == superseded.state
    assert superseded.lease is None
    assert not superseded.holds(TOKEN, EPOCH + timedelta(seconds=1))
    with pytest.raises(LeaseLost):
        superseded.record(token=TOKEN, outcome=Published(), now=EPOCH + timedelta(seconds=2))


@pytest.mark.parametrize("purpose", [Purpose.INVITATION, Purpose.NOTIFICATION])
@pytest.mark.parametrize("make", [enqueue, leased])
def test_supersede_is_refused_for_invitations_and_notifications(
    purpose: Purpose, make: Callable[[Purpose], Message]
) -> None:
    with pytest.raises(InvalidTransition):
        make(purpose).supersede(EPOCH)


@pytest.mark.parametrize("final", [published, dead_lettered])
def test_supersede_is_refused_for_a_final_message(final: Callable[[], Message]) -> None:
    with pytest.raises(InvalidTransition):
        final().supersede(EPOCH + timedelta(seconds=2))


# --- cancel by subject -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("purpose", "reason"),
    [
        (Purpose.SIGN_UP, FailureClass.CHALLENGE_CONSUMED),
        (Purpose.STEP_UP, FailureClass.CHALLENGE_CONSUMED),
        (Purpose.MAGIC_LINK, FailureClass.CHALLENGE_CONSUMED),
        (Purpose.INVITATION, FailureClass.INVITATION_REVOKED),
    ],
)
def test_cancel_dead_letters_a_pending_message_with_the_subjects_reason(
    purpose: Purpose, reason: FailureClass
) -> None:
    now = EPOCH + timedelta(seconds=7)
    message = enqueue(purpose).cancel(reason, now)

    assert State.DEAD_LETTERED == message.state
    assert reason == message.dead_letter_reason
    assert now == message.dead_lettered_at
    assert message.sealed_secret is None


def test_cancel_fences_a_leased_message_so_the_holder_cannot_record() -> None:
    cancelled = leased(Purpose.INVITATION).cancel(FailureClass.INVITATION_REVOKED, EPOCH)

    assert cancelled.lease is None
    with pytest.raises(LeaseLost):
        cancelled.record(token=TOKEN, outcome=Published(), now=EPOCH + timedelta(seconds=1))


def test_cancel_keeps_the_attempts_already_spent() -> None:
    retried = leased().record(
        token=TOKEN,
        outcome=Retry(available_at=EPOCH, failure_class=FailureClass.UNAVAILABLE),
        now=EPOCH,
    )

    assert 1 == retried.cancel(FailureClass.CHALLENGE_CONSUMED, EPOCH).attempts


@pytest.mark.parametrize("final", [published, dead_lettered])
def test_cancel_is_refused_for_a_final_message(final: Callable[[], Message]) -> None:
    with pytest.raises(InvalidTransition):
        final().cancel(FailureClass.CHALLENGE_CONSUMED, EPOCH + timedelta(seconds=2))


# --- expiry ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("purpose", "reason"),
    [
        (Purpose.SIGN_UP, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.ADD_SIGN_IN_METHOD, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.PASSWORD_RECOVERY, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.STEP_UP, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.MAGIC_LINK, FailureClass.CHALLENGE_EXPIRED),
        (Purpose.INVITATION, FailureClass.INVITATION_EXPIRED),
    ],
)
def test_expire_dead_letters_a_pending_message_once_its_expiry_is_reached(
    purpose: Purpose, reason: FailureClass
) -> None:
    message = enqueue(purpose)
    now = EPOCH + LIFETIME

    assert message.is_expired(now)
    expired = message.expire(now)

    assert State.DEAD_LETTERED == expired.state
    assert reason == expired.dead_letter_reason
    assert now == expired.dead_lettered_at
    assert expired.sealed_secret is None


def test_expire_is_refused_before_the_expiry_instant() -> None:
    message = enqueue()
    just_before = EPOCH + LIFETIME - timedelta(microseconds=1)

    assert not message.is_expired(just_before)
    with pytest.raises(InvalidTransition):
        message.expire(just_before)


def test_a_message_without_expiry_never_expires() -> None:
    message = enqueue(Purpose.NOTIFICATION, expires_at=None)
    much_later = EPOCH + timedelta(days=3650)

    assert not message.is_expired(much_later)
    with pytest.raises(InvalidTransition):
        message.expire(much_later)


def test_expire_leaves_a_message_under_a_live_lease_to_its_worker() -> None:
    lifetime = LEASE / 2
    message = enqueue(expires_at=EPOCH + lifetime).claim(
        owner="w", token=TOKEN, now=EPOCH, duration=LEASE
    )

    with pytest.raises(InvalidTransition):
        message.expire(EPOCH + lifetime)
    assert message.holds(TOKEN, EPOCH + lifetime)


def test_expire_dead_letters_a_leased_message_whose_lease_ran_out() -> None:
    message = enqueue(expires_at=EPOCH + LEASE / 2).claim(
        owner="w", token=TOKEN, now=EPOCH, duration=LEASE
    )
    expired = message.expire(EPOCH + LEASE)

    assert State.DEAD_LETTERED == expired.state
    assert FailureClass.CHALLENGE_EXPIRED == expired.dead_letter_reason
    assert expired.lease is None
    with pytest.raises(LeaseLost):
        expired.record(token=TOKEN, outcome=Published(), now=EPOCH + LEASE)


@pytest.mark.parametrize("final", [published, dead_lettered])
def test_expire_is_refused_for_a_final_message(final: Callable[[], Message]) -> None:
    with pytest.raises(InvalidTransition):
        final().expire(EPOCH + timedelta(days=1))


# --- reissue and requeue ---------------------------------------------------------------


@pytest.mark.parametrize("purpose", [p for p in Purpose if p.is_one_time_code])
def test_reissue_of_a_dead_letter_creates_a_new_pending_message(purpose: Purpose) -> None:
    original = dead_lettered(purpose)
    now = EPOCH + timedelta(hours=1)
    new_id = UUID(int=2)

    copy = original.reissue(
        new_id=new_id, sealed_secret="v1.new", now=now, expires_at=now + LIFETIME
    )

    assert new_id == copy.id
    assert State.PENDING == copy.state
    assert "v1.new" == copy.sealed_secret
    assert 0 == copy.attempts
    assert now == copy.available_at
    assert now == copy.created_at
    assert now + LIFETIME == copy.expires_at
    assert copy.dead_letter_reason is None
    same = ("purpose", "channel", "destination", "subject_id", "template", "params", "locale")
    assert {f: getattr(original, f) for f in same} == {f: getattr(copy, f) for f in same}
    assert State.DEAD_LETTERED == original.state


@pytest.mark.parametrize("purpose", [p for p in Purpose if not p.is_one_time_code])
def test_reissue_is_refused_for_purposes_without_a_one_time_code(purpose: Purpose) -> None:
    with pytest.raises(InvalidTransition):
        dead_lettered(purpose).reissue(
            new_id=UUID(int=2), sealed_secret="v1.new", now=EPOCH, expires_at=None
        )


@pytest.mark.parametrize("make", [enqueue, leased])
def test_reissue_is_refused_for_a_live_message(make: Callable[[], Message]) -> None:
    with pytest.raises(InvalidTransition):
        make().reissue(new_id=UUID(int=2), sealed_secret="v1.new", now=EPOCH, expires_at=None)


def test_reissue_is_refused_for_a_published_message() -> None:
    with pytest.raises(InvalidTransition):
        published().reissue(new_id=UUID(int=2), sealed_secret="v1.new", now=EPOCH, expires_at=None)


def test_requeue_of_a_dead_notification_creates_a_new_pending_copy() -> None:
    original = dead_lettered(Purpose.NOTIFICATION)
    now = EPOCH + timedelta(days=2)

    copy = original.requeue(new_id=UUID(int=3), now=now)

    assert UUID(int=3) == copy.id
    assert State.PENDING == copy.state
    assert Purpose.NOTIFICATION == copy.purpose
    assert copy.sealed_secret is None
    assert copy.expires_at is None
    assert 0 == copy.attempts
    assert now == copy.available_at
    assert original.destination == copy.destination
    assert original.template == copy.template
    assert original.params == copy.params
    assert State.DEAD_LETTERED == original.state


@pytest.mark.parametrize("purpose", [p for p in Purpose if p is not Purpose.NOTIFICATION])
def test_requeue_is_refused_for_every_purpose_but_notification(purpose: Purpose) -> None:
    with pytest.raises(InvalidTransition):
        dead_lettered(purpose).requeue(new_id=UUID(int=3), now=EPOCH)


def test_requeue_is_refused_for_a_live_or_published_notification() -> None:
    pending = enqueue(Purpose.NOTIFICATION)
    sent = pending.claim(owner="w", token=TOKEN, now=EPOCH, duration=LEASE).record(
        token=TOKEN, outcome=Published(), now=EPOCH
    )

    for message in (pending, sent):
        with pytest.raises(InvalidTransition):
            message.requeue(new_id=UUID(int=3), now=EPOCH)


# --- final states ----------------------------------------------------------------------

LATER = EPOCH + timedelta(days=1)
EVENTS: dict[str, Callable[[Message], Message]] = {
    "claim": lambda m: m.claim(owner="w", token=OTHER_TOKEN, now=LATER, duration=LEASE),
    "record": lambda m: m.record(token=TOKEN, outcome=Published(), now=EPOCH),
    "supersede": lambda m: m.supersede(LATER),
    "cancel": lambda m: m.cancel(FailureClass.CHALLENGE_CONSUMED, LATER),
    "expire": lambda m: m.expire(LATER),
}


@pytest.mark.parametrize("event", sorted(EVENTS))
@pytest.mark.parametrize("final", [published, dead_lettered])
def test_no_event_changes_a_final_message(event: str, final: Callable[[], Message]) -> None:
    message = final()

    assert message.state.is_final
    assert not message.is_live
    with pytest.raises((InvalidTransition, LeaseLost)):
        EVENTS[event](message)


def test_only_published_and_dead_lettered_are_final() -> None:
    assert {State.PUBLISHED, State.DEAD_LETTERED} == {s for s in State if s.is_final}


def test_messages_are_immutable_values() -> None:
    message = enqueue()

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.state = State.PUBLISHED  # type: ignore[misc]


FINAL_TRANSITIONS: dict[str, Callable[[Message], Message]] = {
    "published": lambda m: m.record(token=TOKEN, outcome=Published(), now=EPOCH),
    "dead letter": lambda m: m.record(
        token=TOKEN, outcome=DeadLetter(reason=FailureClass.DECRYPTION_FAILED), now=EPOCH
    ),
    "pre-send expiry": lambda m: m.record(
        token=TOKEN,
        outcome=DeadLetter(reason=FailureClass.CHALLENGE_EXPIRED, attempted=False),
        now=EPOCH,
    ),
    "supersede": lambda m: m.supersede(EPOCH),
    "cancel": lambda m: m.cancel(FailureClass.CHALLENGE_CONSUMED, EPOCH),
    "expire": lambda m: m.expire(EPOCH + LEASE + LIFETIME),
}


@pytest.mark.parametrize("transition", sorted(FINAL_TRANSITIONS))
def test_every_final_transition_drops_the_secret(transition: str) -> None:
    message = leased()
    assert message.sealed_secret is not None

    final = FINAL_TRANSITIONS[transition](message)

    assert final.state.is_final
    assert final.sealed_secret is None
    assert final.lease is None


@pytest.mark.parametrize(
    "outcome",
    [
        Retry(available_at=EPOCH, failure_class=FailureClass.INDETERMINATE),
        Release(available_at=EPOCH, failure_class=FailureClass.PROVIDER_SUSPENDED),
    ],
)
def test_non_final_outcomes_keep_the_secret_for_the_next_attempt(outcome: Outcome) -> None:
    assert SECRET == leased().record(token=TOKEN, outcome=outcome, now=EPOCH).sealed_secret
