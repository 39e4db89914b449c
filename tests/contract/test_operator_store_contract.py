"""OperatorStore contract: staff gating, masking, keyset pages, reissue and requeue rules,
idempotent replays and the audit trail behave alike in the fake and in PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any
from uuid import UUID

import attrs
import pytest
from psycopg_pool import AsyncConnectionPool

from outbox.adapters.postgres.pool import open_pool
from outbox.application.delivery.errors import DeadLetterRefused, MessageNotFound
from outbox.application.delivery.views import Backlog, CopyReceipt
from outbox.application.errors import InvalidRequest, PermissionDenied
from outbox.application.operator.errors import StaffIdentityNotFound
from outbox.application.operator.ports import OperatorStore
from outbox.application.staff import IdempotencyKeyReused, StaffActor, StaffRequired, StepUpRequired
from outbox.domain.delivery.dead_letters import Refusal
from outbox.domain.delivery.failures import FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import DeadLetter, Published, Retry
from outbox.domain.identity.challenges import ChallengeState
from outbox.domain.purposes import Purpose
from tests.contract.operator_harness import (
    ENVELOPE,
    MemoryOperatorHarness,
    OperatorHarness,
    PostgresOperatorHarness,
    challenge,
    code_message,
    dead_letter,
)

STAFF = "staff@example.com"
NEW_HASH = "$argon2id$v=19$m=8,t=1,p=1$bmV3c2FsdA$bmV3LWhhc2g"
NEW_ENVELOPE = "v1.test-key.bmV3c2FsdA.bmV3bm9uY2U.bmV3Y2lwaGVy"


@pytest.fixture
async def operator_pools(
    database_url: str,
) -> AsyncIterator[tuple[AsyncConnectionPool, AsyncConnectionPool]]:
    """A pool acting as identity_service (the API) and one as the superuser (outboxctl)."""
    api_pool = await open_pool(database_url, min_size=1, max_size=4, role="identity_service")
    admin_pool = await open_pool(database_url, min_size=1, max_size=4)
    try:
        yield api_pool, admin_pool
    finally:
        await api_pool.close()
        await admin_pool.close()


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.integration)])
def operator(request: pytest.FixtureRequest) -> OperatorHarness:
    """The operator store under test, as the API role and as the database operator."""
    if request.param == "memory":
        return MemoryOperatorHarness()
    api_pool, admin_pool = request.getfixturevalue("operator_pools")
    return PostgresOperatorHarness(
        database_url=request.getfixturevalue("database_url"),
        api_pool=api_pool,
        admin_pool=admin_pool,
    )


async def staff(operator: OperatorHarness, email: str = STAFF) -> StaffActor:
    """A new identity with ``email``, made staff by the database operator, stepped up."""
    identity_id = await operator.add_identity(email)
    change = await operator.admin.grant_staff(email)
    assert identity_id == change.identity_id
    return StaffActor(identity_id=identity_id, elevation_digest=await operator.elevate(identity_id))


async def elevated(operator: OperatorHarness, identity_id: UUID) -> StaffActor:
    """``identity_id`` with a fresh elevation of its own."""
    return StaffActor(identity_id=identity_id, elevation_digest=await operator.elevate(identity_id))


async def reissue(
    store: OperatorStore,
    actor: StaffActor,
    message_id: UUID,
    key: str = "key-1",
    *,
    new_message_id: UUID | None = None,
    code_hash: str = NEW_HASH,
) -> CopyReceipt:
    return await store.reissue(
        actor=actor,
        message_id=message_id,
        new_message_id=uuid.uuid4() if new_message_id is None else new_message_id,
        sealed_secret=NEW_ENVELOPE,
        code_hash=code_hash,
        idempotency_key=key,
    )


async def requeue(
    store: OperatorStore, actor: StaffActor, message_id: UUID, key: str = "key-1"
) -> CopyReceipt:
    return await store.requeue(
        actor=actor, message_id=message_id, new_message_id=uuid.uuid4(), idempotency_key=key
    )


async def reissuable(operator: OperatorHarness, **challenge_changes: Any) -> tuple[UUID, UUID]:
    """A REJECTED sign-up dead letter of an open challenge: (dead letter id, challenge id)."""
    person = await operator.add_identity("person@example.com")
    opened = challenge(operator, person, **challenge_changes)
    await operator.put_challenge(opened)
    letter = dead_letter(operator, subject_id=opened.id)
    await operator.put(letter)
    return letter.id, opened.id


# Backlog ----------------------------------------------------------------------------------------


async def test_backlog_of_an_empty_queue_is_all_zeros(operator: OperatorHarness) -> None:
    assert Backlog() == await operator.admin.backlog(actor=None)
    assert Backlog() == await operator.gauge.backlog()


async def test_backlog_counts_every_state_and_the_oldest_due_age(operator: OperatorHarness) -> None:
    now = operator.now()
    due = code_message(operator, age=timedelta(seconds=90))
    await operator.put(due)
    later = code_message(operator)
    await operator.put(attrs.evolve(later, available_at=now + timedelta(hours=1)))
    leased = code_message(operator).claim(
        owner="w", token=uuid.uuid4(), now=now, duration=timedelta(minutes=1)
    )
    await operator.put(leased)
    token = uuid.uuid4()
    published = (
        code_message(operator)
        .claim(owner="w", token=token, now=now, duration=timedelta(minutes=1))
        .record(token=token, outcome=Published(), now=now)
    )
    await operator.put(published)
    for _ in range(2):
        await operator.put(dead_letter(operator))

    backlog = await operator.admin.backlog(actor=None)

    assert (2, 1, 1, 2) == (
        backlog.pending,
        backlog.leased,
        backlog.published,
        backlog.dead_lettered,
    )
    assert backlog.oldest_due_age is not None
    assert timedelta(seconds=89) < backlog.oldest_due_age < timedelta(seconds=120)
    assert backlog.by_state() == (await operator.gauge.backlog()).by_state()


# Dead letters -----------------------------------------------------------------------------------


async def test_dead_letters_are_listed_newest_first_with_masked_destinations(
    operator: OperatorHarness,
) -> None:
    older = dead_letter(operator, destination="alice@Example.COM", ago=timedelta(minutes=5))
    newer = dead_letter(
        operator,
        purpose=Purpose.PASSWORD_RECOVERY,
        destination="+34612345678",
        reason=FailureClass.THROTTLED,
        attempts=5,
        ago=timedelta(minutes=1),
    )
    for message in (older, newer):
        await operator.put(message)
    await operator.put(code_message(operator))  # live: never listed

    rows = await operator.admin.dead_letters(actor=None, after=None, before=None, limit=10)

    assert [newer.id, older.id] == [row.id for row in rows]
    first = rows[0]
    assert (
        Purpose.PASSWORD_RECOVERY,
        "sms",
        "+34***78",
        5,
        FailureClass.THROTTLED,
        newer.dead_lettered_at,
        newer.expires_at,
    ) == (
        first.purpose,
        first.channel.value,
        first.destination,
        first.attempts,
        first.failure_class,
        first.dead_lettered_at,
        first.expires_at,
    )
    assert "a***@example.com" == rows[1].destination


async def test_keyset_pages_walk_both_ways_and_stay_stable_across_inserts(
    operator: OperatorHarness,
) -> None:
    letters = [dead_letter(operator, ago=timedelta(minutes=10 - i)) for i in range(5)]
    for message in letters:
        await operator.put(message)
    newest_first = [m.id for m in reversed(letters)]
    store = operator.admin

    first = await store.dead_letters(actor=None, after=None, before=None, limit=2)
    await operator.put(dead_letter(operator, ago=timedelta(seconds=1)))  # arrives meanwhile
    second = await store.dead_letters(actor=None, after=first[-1].id, before=None, limit=2)
    third = await store.dead_letters(actor=None, after=second[-1].id, before=None, limit=2)
    back = await store.dead_letters(actor=None, after=None, before=second[0].id, limit=2)

    assert newest_first[:2] == [row.id for row in first]
    assert newest_first[2:4] == [row.id for row in second]
    assert newest_first[4:] == [row.id for row in third]
    assert newest_first[:2] == [row.id for row in back]


async def test_a_cursor_that_is_not_a_dead_letter_is_refused(operator: OperatorHarness) -> None:
    live = code_message(operator)
    await operator.put(live)

    for cursor in (live.id, uuid.uuid4()):
        with pytest.raises(InvalidRequest):
            await operator.admin.dead_letters(actor=None, after=cursor, before=None, limit=5)


async def test_two_cursors_at_once_are_refused(operator: OperatorHarness) -> None:
    letter = dead_letter(operator)
    await operator.put(letter)

    with pytest.raises(InvalidRequest):
        await operator.admin.dead_letters(actor=None, after=letter.id, before=letter.id, limit=5)


# Message inspection -----------------------------------------------------------------------------


async def test_a_message_shows_masked_with_its_attempt_history(operator: OperatorHarness) -> None:
    letter = dead_letter(operator, destination="bob@example.com", attempts=2)
    await operator.put(letter)
    retry_at = operator.now() + timedelta(seconds=5)
    await operator.add_attempt(
        letter.id,
        1,
        Retry(available_at=retry_at, failure_class=FailureClass.UNAVAILABLE, code="503"),
        "ses",
    )
    await operator.add_attempt(
        letter.id, 2, DeadLetter(reason=FailureClass.REJECTED, code="550"), "ses"
    )

    detail = await operator.admin.message(actor=None, message_id=letter.id)

    assert detail is not None
    assert ("b***@example.com", State.DEAD_LETTERED, FailureClass.REJECTED, False, None) == (
        detail.destination,
        detail.state,
        detail.dead_letter_reason,
        detail.has_secret,
        detail.reissued_as,
    )
    assert [
        (1, True, "retry", FailureClass.UNAVAILABLE, "503", "ses", retry_at),
        (2, True, "dead_letter", FailureClass.REJECTED, "550", "ses", None),
    ] == [
        (a.attempt, a.counted, a.outcome, a.failure_class, a.code, a.provider, a.retry_at)
        for a in detail.history
    ]


async def test_a_pending_message_shows_that_it_holds_a_secret_but_not_the_secret(
    operator: OperatorHarness,
) -> None:
    pending = code_message(operator)
    await operator.put(pending)

    detail = await operator.admin.message(actor=None, message_id=pending.id)

    assert detail is not None
    assert detail.has_secret
    assert ENVELOPE not in repr(detail)


async def test_an_unknown_message_is_none(operator: OperatorHarness) -> None:
    assert await operator.admin.message(actor=None, message_id=uuid.uuid4()) is None


# Staff gating -----------------------------------------------------------------------------------

# A staff-gated call, given the store and the acting identity.
Read = Callable[[OperatorStore, StaffActor | None], Awaitable[object]]
Call = Callable[[OperatorStore, StaffActor], Awaitable[object]]

READS: list[Read] = [
    lambda store, actor: store.backlog(actor=actor),
    lambda store, actor: store.dead_letters(actor=actor, after=None, before=None, limit=5),
    lambda store, actor: store.message(actor=actor, message_id=uuid.uuid4()),
]
WRITES: list[Call] = [
    lambda store, actor: reissue(store, actor, uuid.uuid4()),
    lambda store, actor: requeue(store, actor, uuid.uuid4()),
]


@pytest.mark.parametrize("read", READS, ids=["backlog", "dead_letters", "message"])
async def test_the_api_role_cannot_read_without_naming_a_staff_member(
    operator: OperatorHarness, read: Read
) -> None:
    with pytest.raises(PermissionDenied):
        await read(operator.api, None)


@pytest.mark.parametrize("call", [*READS, *WRITES], ids=["b", "d", "m", "reissue", "requeue"])
async def test_the_api_role_cannot_act_in_a_staff_members_name_without_an_elevation(
    operator: OperatorHarness, call: Call
) -> None:
    """Only the database operator acts on a staff member's word alone."""
    actor = await staff(operator)

    with pytest.raises(PermissionDenied) as refused:
        await call(operator.api, StaffActor(identity_id=actor.identity_id))

    assert not isinstance(refused.value, StaffRequired)


@pytest.mark.parametrize("call", [*READS, *WRITES], ids=["b", "d", "m", "reissue", "requeue"])
async def test_an_elevation_of_someone_else_or_past_the_read_window_is_refused(
    operator: OperatorHarness, call: Call
) -> None:
    actor = await staff(operator)
    other = await staff(operator, "other@example.com")
    too_old = await operator.elevate(
        actor.identity_id, made=timedelta(hours=9), lifetime=-timedelta(hours=8, minutes=55)
    )

    for digest in (other.elevation_digest, too_old, "0" * 64):
        with pytest.raises(StepUpRequired):
            await call(
                operator.api, StaffActor(identity_id=actor.identity_id, elevation_digest=digest)
            )


async def test_an_expired_step_up_still_reads_but_changes_nothing(
    operator: OperatorHarness,
) -> None:
    """Reads take a step-up of the last eight hours; every write a live one (issue 29)."""
    actor = await staff(operator)
    expired = await operator.elevate(actor.identity_id, lifetime=-timedelta(seconds=1))
    reader = StaffActor(identity_id=actor.identity_id, elevation_digest=expired)

    for read in READS:
        await read(operator.api, reader)
    for write in WRITES:
        with pytest.raises(StepUpRequired):
            await write(operator.api, reader)


@pytest.mark.parametrize("call", [*READS, *WRITES], ids=["b", "d", "m", "reissue", "requeue"])
async def test_an_identity_without_a_staff_row_is_refused(
    operator: OperatorHarness, call: Call
) -> None:
    stranger = await elevated(operator, await operator.add_identity("stranger@example.com"))

    with pytest.raises(StaffRequired):
        await call(operator.api, stranger)


@pytest.mark.parametrize("call", [*READS, *WRITES], ids=["b", "d", "m", "reissue", "requeue"])
async def test_a_revoked_staff_member_is_refused(operator: OperatorHarness, call: Call) -> None:
    actor = await staff(operator)
    await operator.admin.revoke_staff(STAFF)

    with pytest.raises(StaffRequired):
        await call(operator.api, actor)


@pytest.mark.parametrize("read", READS, ids=["backlog", "dead_letters", "message"])
async def test_a_staff_member_reads_through_the_api_role(
    operator: OperatorHarness, read: Read
) -> None:
    actor = await staff(operator)

    await read(operator.api, actor)


async def test_only_the_database_operator_grants_or_revokes_staff(
    operator: OperatorHarness,
) -> None:
    await operator.add_identity(STAFF)

    with pytest.raises(PermissionDenied):
        await operator.api.grant_staff(STAFF)
    with pytest.raises(PermissionDenied):
        await operator.api.revoke_staff(STAFF)


async def test_granting_and_revoking_staff_report_whether_anything_changed(
    operator: OperatorHarness,
) -> None:
    identity_id = await operator.add_identity(STAFF)
    admin = operator.admin

    changes = [
        await admin.grant_staff(STAFF),
        await admin.grant_staff(STAFF),
        await admin.revoke_staff(STAFF),
        await admin.revoke_staff(STAFF),
        await admin.grant_staff(STAFF),
    ]

    assert [True, False, True, False, True] == [c.changed for c in changes]
    assert {identity_id} == {c.identity_id for c in changes}
    assert [
        ("staff_grant", None, None, None, None),
        ("staff_revoke", None, None, None, None),
        ("staff_grant", None, None, None, None),
    ] == await operator.audit()
    await operator.api.backlog(actor=await elevated(operator, identity_id))  # staff once more


async def test_staff_of_an_unknown_email_is_not_found(operator: OperatorHarness) -> None:
    assert await operator.admin.staff_identity("nobody@example.com") is None
    with pytest.raises(StaffIdentityNotFound):
        await operator.admin.grant_staff("nobody@example.com")
    with pytest.raises(StaffIdentityNotFound):
        await operator.admin.revoke_staff("nobody@example.com")


# Reissue ----------------------------------------------------------------------------------------


async def test_reissue_swaps_the_code_enqueues_the_new_message_and_audits(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    letter_id, challenge_id = await reissuable(operator)
    new_id = uuid.uuid4()

    receipt = await reissue(operator.api, actor, letter_id, new_message_id=new_id)

    assert (letter_id, new_id, False) == (
        receipt.dead_letter_id,
        receipt.message_id,
        receipt.replayed,
    )
    assert NEW_HASH == await operator.code_hash(challenge_id)
    assert NEW_ENVELOPE == await operator.envelope(new_id)
    copy = await operator.api.message(actor=actor, message_id=new_id)
    assert copy is not None
    assert (State.PENDING, 0, Purpose.SIGN_UP, challenge_id, receipt.expires_at) == (
        copy.state,
        copy.attempts,
        copy.purpose,
        copy.subject_id,
        copy.expires_at,
    )
    original = await operator.api.message(actor=actor, message_id=letter_id)
    assert original is not None
    assert (State.DEAD_LETTERED, new_id) == (original.state, original.reissued_as)
    assert [("reissue", actor.identity_id, letter_id, new_id, "key-1")] == (await operator.audit())[
        1:
    ]


async def test_a_replay_answers_the_first_receipt_and_changes_nothing(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    letter_id, challenge_id = await reissuable(operator)
    first = await reissue(operator.api, actor, letter_id)

    again = await reissue(operator.api, actor, letter_id, code_hash=NEW_HASH.replace("bmV3", "eA"))

    assert (first.message_id, first.expires_at, True) == (
        again.message_id,
        again.expires_at,
        again.replayed,
    )
    assert NEW_HASH == await operator.code_hash(challenge_id)
    assert 1 == (await operator.admin.backlog(actor=None)).pending
    assert 2 == len(await operator.audit())  # the grant and one reissue


async def test_a_key_reused_for_another_request_is_refused(operator: OperatorHarness) -> None:
    actor = await staff(operator)
    letter_id, _ = await reissuable(operator)
    await reissue(operator.api, actor, letter_id)
    other = dead_letter(operator, purpose=Purpose.NOTIFICATION)
    await operator.put(other)

    with pytest.raises(IdempotencyKeyReused):
        await reissue(operator.api, actor, other.id)
    with pytest.raises(IdempotencyKeyReused):
        await requeue(operator.api, actor, letter_id)


async def test_each_staff_member_has_their_own_keys(operator: OperatorHarness) -> None:
    first = await staff(operator)
    second = await staff(operator, "second@example.com")
    letter_id, _ = await reissuable(operator)
    notification = dead_letter(operator, purpose=Purpose.NOTIFICATION)
    await operator.put(notification)

    await reissue(operator.api, first, letter_id)
    receipt = await requeue(operator.api, second, notification.id)

    assert not receipt.replayed


async def test_a_second_reissue_with_another_key_finds_the_newer_message(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    letter_id, _ = await reissuable(operator)
    await reissue(operator.api, actor, letter_id)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, letter_id, key="key-2")

    assert Refusal.NEWER_MESSAGE_EXISTS == refused.value.refusal


async def test_reissuing_an_unknown_message_is_not_found(operator: OperatorHarness) -> None:
    actor = await staff(operator)

    with pytest.raises(MessageNotFound):
        await reissue(operator.api, actor, uuid.uuid4())


MESSAGE_REFUSALS: list[tuple[str, Callable[[OperatorHarness, UUID], Message], Refusal]] = [
    ("pending", lambda o, s: code_message(o, subject_id=s), Refusal.NOT_DEAD_LETTERED),
    (
        "invitation",
        lambda o, s: dead_letter(o, purpose=Purpose.INVITATION, subject_id=s),
        Refusal.NOT_REISSUABLE,
    ),
    (
        "magic_link",
        lambda o, s: dead_letter(o, purpose=Purpose.MAGIC_LINK, subject_id=s),
        Refusal.NOT_REISSUABLE,
    ),
    (
        "notification",
        lambda o, _: dead_letter(o, purpose=Purpose.NOTIFICATION),
        Refusal.NOT_REISSUABLE,
    ),
    *(
        (
            reason.value,
            lambda o, s, reason=reason: dead_letter(o, subject_id=s, reason=reason),
            Refusal.NOT_A_DELIVERY_FAILURE,
        )
        for reason in (
            FailureClass.SUPERSEDED_BY_RESEND,
            FailureClass.CHALLENGE_EXPIRED,
            FailureClass.CHALLENGE_CONSUMED,
        )
    ),
]


@pytest.mark.parametrize(
    ("make", "refusal"),
    [(make, refusal) for _, make, refusal in MESSAGE_REFUSALS],
    ids=[name for name, _, _ in MESSAGE_REFUSALS],
)
async def test_reissue_refuses_a_message_it_cannot_fix(
    operator: OperatorHarness, make: Callable[[OperatorHarness, UUID], Message], refusal: Refusal
) -> None:
    actor = await staff(operator)
    person = await operator.add_identity("person@example.com")
    opened = challenge(operator, person)
    await operator.put_challenge(opened)
    message = make(operator, opened.id)
    await operator.put(message)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, message.id)

    assert refusal == refused.value.refusal
    assert opened.code_hash == await operator.code_hash(opened.id)
    assert 1 == len(await operator.audit())  # the grant only


CHALLENGE_REFUSALS: list[tuple[str, dict[str, object], Refusal]] = [
    ("consumed", {"state": ChallengeState.CONSUMED}, Refusal.CHALLENGE_CONSUMED),
    ("locked", {"state": ChallengeState.LOCKED}, Refusal.CHALLENGE_LOCKED),
    ("closed", {"state": ChallengeState.CLOSED}, Refusal.CHALLENGE_EXPIRED),
    ("expired", {"expires_in": timedelta(seconds=-1)}, Refusal.CHALLENGE_EXPIRED),
]


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [(changes, refusal) for _, changes, refusal in CHALLENGE_REFUSALS],
    ids=[name for name, _, _ in CHALLENGE_REFUSALS],
)
async def test_reissue_refuses_a_challenge_that_cannot_take_a_code(
    operator: OperatorHarness, changes: dict[str, object], refusal: Refusal
) -> None:
    actor = await staff(operator)
    letter_id, challenge_id = await reissuable(operator, **changes)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, letter_id)

    assert refusal == refused.value.refusal
    assert NEW_HASH != await operator.code_hash(challenge_id)


async def test_reissue_refuses_a_dead_letter_whose_challenge_is_gone(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    orphan = dead_letter(operator)
    await operator.put(orphan)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, orphan.id)

    assert Refusal.CHALLENGE_MISSING == refused.value.refusal


async def test_staff_never_reissue_a_code_of_their_own(operator: OperatorHarness) -> None:
    actor = await staff(operator)
    own = challenge(
        operator, actor.identity_id, identifier=STAFF, purpose=Purpose.PASSWORD_RECOVERY
    )
    await operator.put_challenge(own)
    letter = dead_letter(
        operator, purpose=Purpose.PASSWORD_RECOVERY, destination=STAFF, subject_id=own.id
    )
    await operator.put(letter)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, letter.id)

    assert Refusal.OWN_CHALLENGE == refused.value.refusal
    assert own.code_hash == await operator.code_hash(own.id)


@pytest.mark.parametrize("state", ["pending", "published"])
async def test_reissue_refuses_when_a_newer_message_goes_to_the_same_destination(
    operator: OperatorHarness, state: str
) -> None:
    actor = await staff(operator)
    letter_id, _ = await reissuable(operator)
    newer = code_message(operator, age=timedelta(seconds=5))  # another subject, same address
    if state == "published":
        token = uuid.uuid4()
        now = operator.now()
        newer = newer.claim(owner="w", token=token, now=now, duration=timedelta(minutes=1))
        newer = newer.record(token=token, outcome=Published(), now=now)
    await operator.put(newer)

    with pytest.raises(DeadLetterRefused) as refused:
        await reissue(operator.api, actor, letter_id)

    assert Refusal.NEWER_MESSAGE_EXISTS == refused.value.refusal


async def test_an_older_published_message_does_not_block_a_reissue(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    token = uuid.uuid4()
    before = operator.now() - timedelta(minutes=30)
    older = code_message(operator, age=timedelta(minutes=31))
    older = older.claim(owner="w", token=token, now=before, duration=timedelta(minutes=1))
    await operator.put(older.record(token=token, outcome=Published(), now=before))
    letter_id, _ = await reissuable(operator)

    receipt = await reissue(operator.api, actor, letter_id)

    assert not receipt.replayed


# Requeue ----------------------------------------------------------------------------------------


async def test_requeue_enqueues_a_copy_of_a_notification_and_audits(
    operator: OperatorHarness,
) -> None:
    actor = await staff(operator)
    letter = dead_letter(operator, purpose=Purpose.NOTIFICATION, destination="carol@example.com")
    await operator.put(letter)

    receipt = await requeue(operator.api, actor, letter.id)

    copy = await operator.api.message(actor=actor, message_id=receipt.message_id)
    assert copy is not None
    assert (State.PENDING, "c***@example.com", Purpose.NOTIFICATION, False, None) == (
        copy.state,
        copy.destination,
        copy.purpose,
        copy.has_secret,
        copy.expires_at,
    )
    assert [("requeue", actor.identity_id, letter.id, receipt.message_id, "key-1")] == (
        await operator.audit()
    )[1:]


async def test_a_requeue_replay_answers_the_first_copy(operator: OperatorHarness) -> None:
    actor = await staff(operator)
    letter = dead_letter(operator, purpose=Purpose.NOTIFICATION)
    await operator.put(letter)
    first = await requeue(operator.api, actor, letter.id)

    again = await requeue(operator.api, actor, letter.id)

    assert (first.message_id, True) == (again.message_id, again.replayed)
    assert 1 == (await operator.admin.backlog(actor=None)).pending


@pytest.mark.parametrize(
    ("make", "refusal"),
    [
        (dead_letter, Refusal.NOT_REQUEUEABLE),
        (lambda o: code_message(o, purpose=Purpose.NOTIFICATION), Refusal.NOT_DEAD_LETTERED),
    ],
    ids=["a code", "pending"],
)
async def test_requeue_refuses_what_is_not_a_dead_notification(
    operator: OperatorHarness, make: Callable[[OperatorHarness], Message], refusal: Refusal
) -> None:
    actor = await staff(operator)
    message = make(operator)
    await operator.put(message)

    with pytest.raises(DeadLetterRefused) as refused:
        await requeue(operator.api, actor, message.id)

    assert refusal == refused.value.refusal


async def test_a_notification_is_requeued_once(operator: OperatorHarness) -> None:
    actor = await staff(operator)
    letter = dead_letter(operator, purpose=Purpose.NOTIFICATION)
    await operator.put(letter)
    await requeue(operator.api, actor, letter.id)

    with pytest.raises(DeadLetterRefused) as refused:
        await requeue(operator.api, actor, letter.id, key="key-2")

    assert Refusal.ALREADY_REQUEUED == refused.value.refusal
