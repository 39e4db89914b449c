"""Dispatching a batch: every path of the retry and failure policy, with fakes, real AES-GCM
and a fixed clock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from uuid import UUID

import attrs
import pytest

from outbox.adapters.crypto.envelope import EnvelopeSealer
from outbox.adapters.crypto.keyring import Keyring, SealKey
from outbox.application.delivery.batch import LATE_RETRY_DELAY, BatchTally
from outbox.application.delivery.dispatch_due_messages import DispatchDueMessages
from outbox.application.delivery.errors import TemplateNotFound
from outbox.application.delivery.links import LinkBases
from outbox.application.delivery.ports import AttemptRecord, ClaimedMessage, Delivery
from outbox.application.delivery.provider_breaker import ProviderBreaker
from outbox.application.errors import StoreUnavailable
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.domain.delivery.messages import Message, State
from outbox.domain.delivery.outcomes import RecordResult
from outbox.domain.delivery.retry_policy import RetryPolicy
from outbox.domain.purposes import Purpose
from tests.fakes.clock import FixedClock
from tests.fakes.ids import SequentialIds
from tests.fakes.outbox_store import InMemoryOutboxStore
from tests.fakes.providers import RecordingProvider
from tests.fakes.rate_limits import CountingRateLimit
from tests.fakes.renderer import RecordingRenderer
from tests.fakes.telemetry import RecordingTelemetry

CODE = "482913"
EMAIL = "alice.liddell@example.com"
PHONE = "+34612345678"


class Harness:
    """A dispatcher wired to fakes, with helpers to enqueue and run."""

    def __init__(self, *, links: LinkBases | None = None, concurrency: int = 8) -> None:
        self.clock = FixedClock()
        self.ids = SequentialIds()
        self.store = InMemoryOutboxStore(clock=self.clock)
        self.sealer = EnvelopeSealer(Keyring((SealKey("test", bytes(range(32))),)))
        self.email = RecordingProvider(provider_name="ses")
        self.sms = RecordingProvider(provider_name="brevo")
        self.renderer = RecordingRenderer()
        self.telemetry = RecordingTelemetry()
        self.breaker = ProviderBreaker()
        self.dispatch = DispatchDueMessages(
            store=self.store,
            sealer=self.sealer,
            renderer=self.renderer,
            providers={Channel.EMAIL: self.email, Channel.SMS: self.sms},
            clock=self.clock,
            telemetry=self.telemetry,
            policy=RetryPolicy(),
            breaker=self.breaker,
            links=links or LinkBases(),
            owner="worker-1",
            batch_size=10,
            concurrency=concurrency,
            provider_timeout=timedelta(seconds=1),
        )

    async def enqueue(
        self,
        purpose: Purpose = Purpose.SIGN_UP,
        *,
        channel: Channel = Channel.EMAIL,
        destination: str = EMAIL,
        secret: str = CODE,
        expires_in: timedelta | None = timedelta(minutes=10),
        envelope: str | None = None,
    ) -> UUID:
        message_id = self.ids.new_id()
        sealed = None
        if purpose.carries_secret:
            sealed = envelope or self.sealer.seal(
                message_id=message_id, purpose=purpose, plaintext=secret
            )
        await self.store.enqueue(
            Message.enqueue(
                id=message_id,
                purpose=purpose,
                channel=channel,
                destination=destination,
                subject_id=None if purpose is Purpose.NOTIFICATION else self.ids.new_id(),
                template=purpose.value,
                params={"subject": "Hello", "body": "World"},
                sealed_secret=sealed,
                expires_at=self.clock.now() + expires_in if expires_in else None,
                now=self.clock.now(),
            )
        )
        return message_id

    def message(self, message_id: UUID) -> Message:
        return self.store.messages[message_id]


async def test_a_due_message_is_opened_rendered_sent_and_published() -> None:
    h = Harness()
    message_id = await h.enqueue()
    result = await h.dispatch()
    assert BatchTally(claimed=1, published=1) == result
    [delivery] = h.email.sent
    assert (message_id, EMAIL, CODE) == (delivery.message_id, delivery.destination, CODE)
    assert CODE == delivery.content.text
    published = h.message(message_id)
    assert (State.PUBLISHED, 1, None) == (
        published.state,
        published.attempts,
        published.sealed_secret,
    )


async def test_an_empty_queue_claims_nothing() -> None:
    assert BatchTally() == await Harness().dispatch()


async def test_a_notification_is_sent_without_a_secret() -> None:
    h = Harness()
    message_id = await h.enqueue(Purpose.NOTIFICATION, expires_in=None)
    await h.dispatch()
    assert State.PUBLISHED == h.message(message_id).state
    assert [None] == [call["secret"] for call in h.renderer.calls]


async def test_each_channel_goes_to_its_own_provider() -> None:
    h = Harness()
    await h.enqueue(channel=Channel.SMS, destination=PHONE)
    await h.enqueue()
    await h.dispatch()
    assert [PHONE] == [d.destination for d in h.email.sent + h.sms.sent if d.channel is Channel.SMS]
    assert 1 == len(h.email.sent)


async def test_a_channel_without_a_provider_is_rejected() -> None:
    h = Harness()
    message_id = await h.enqueue(channel=Channel.WHATSAPP, destination=PHONE)
    await h.dispatch()
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.REJECTED) == (
        message.state,
        message.dead_letter_reason,
    )


async def test_a_retryable_failure_waits_the_first_schedule_step() -> None:
    h = Harness()
    h.email.fail_next(h.email.refuse(FailureClass.UNAVAILABLE, "503"))
    message_id = await h.enqueue()
    result = await h.dispatch()
    assert 1 == result.retried
    message = h.message(message_id)
    assert (State.PENDING, 1, h.clock.now() + timedelta(seconds=5)) == (
        message.state,
        message.attempts,
        message.available_at,
    )


async def test_retry_after_later_than_the_schedule_wins() -> None:
    h = Harness()
    later = h.clock.now() + timedelta(seconds=90)
    h.email.fail_next(
        DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429", retry_after=later)
    )
    message_id = await h.enqueue()
    await h.dispatch()
    assert later == h.message(message_id).available_at


async def test_the_fifth_failed_attempt_dead_letters_with_its_failure_class() -> None:
    h = Harness()
    message_id = await h.enqueue(expires_in=timedelta(hours=2))
    waits = []
    for _ in range(5):
        h.email.fail_next(h.email.refuse(FailureClass.INDETERMINATE, "timeout"))
        before = h.clock.now()
        await h.dispatch()
        message = h.message(message_id)
        if message.state is State.PENDING:
            waits.append(message.available_at - before)
            h.clock.current = message.available_at
    message = h.message(message_id)
    assert [
        timedelta(seconds=5),
        timedelta(seconds=30),
        timedelta(minutes=2),
        timedelta(minutes=10),
    ] == waits
    assert (State.DEAD_LETTERED, FailureClass.INDETERMINATE, 5) == (
        message.state,
        message.dead_letter_reason,
        message.attempts,
    )
    assert 5 == len(h.email.tried)


async def test_a_retry_time_after_expiry_dead_letters_now() -> None:
    h = Harness()
    beyond = h.clock.now() + timedelta(minutes=11)
    h.email.fail_next(
        DeliveryFailure(failure_class=FailureClass.THROTTLED, code="429", retry_after=beyond)
    )
    message_id = await h.enqueue(expires_in=timedelta(minutes=10))
    await h.dispatch()
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_EXPIRED) == (
        message.state,
        message.dead_letter_reason,
    )


async def test_a_rejection_dead_letters_at_once() -> None:
    h = Harness()
    h.email.fail_next(h.email.refuse(FailureClass.REJECTED, "550"))
    message_id = await h.enqueue()
    assert 1 == (await h.dispatch()).dead_lettered
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.REJECTED, None) == (
        message.state,
        message.dead_letter_reason,
        message.sealed_secret,
    )


async def test_an_envelope_that_does_not_open_is_dead_lettered_as_a_security_event() -> None:
    h = Harness()
    other = h.sealer.seal(
        message_id=UUID(int=99), purpose=Purpose.SIGN_UP, plaintext=CODE
    )  # sealed for another message: the AAD does not match
    message_id = await h.enqueue(envelope=other)
    await h.dispatch()
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.DECRYPTION_FAILED) == (
        message.state,
        message.dead_letter_reason,
    )
    assert [] == h.email.tried
    [event] = h.telemetry.named("security.decryption_failed")
    assert "critical" == event.level


async def test_an_unexpected_exception_is_a_counted_retry_and_its_text_goes_nowhere() -> None:
    h = Harness()
    h.email.fail_next(RuntimeError(f"boom {CODE} {EMAIL} Bearer sk-live-123"))
    message_id = await h.enqueue()
    await h.dispatch()
    message = h.message(message_id)
    assert (State.PENDING, 1) == (message.state, message.attempts)
    [attempt] = h.store.attempts
    assert FailureClass.UNEXPECTED_WORKER_ERROR == attempt.outcome.failure_class  # type: ignore[union-attr]
    assert "RuntimeError" == attempt.outcome.code  # type: ignore[union-attr]
    logged = repr(h.telemetry.events)
    for secret in (CODE, EMAIL, "sk-live-123", "boom"):
        assert secret not in logged


async def test_one_message_raising_does_not_stop_the_others_in_its_batch() -> None:
    h = Harness()
    h.email.fail_next(None, ValueError("bad"), None)
    ids = [await h.enqueue() for _ in range(3)]
    result = await h.dispatch()
    assert (3, 2, 1) == (result.claimed, result.published, result.retried)
    assert [State.PUBLISHED, State.PENDING, State.PUBLISHED] == [h.message(i).state for i in ids]


async def test_a_suspended_provider_is_paused_without_spending_attempts() -> None:
    h = Harness(concurrency=1)
    h.email.fail_next(h.email.refuse(FailureClass.PROVIDER_SUSPENDED, "AccountSuspended"))
    first = await h.enqueue()
    second = await h.enqueue()
    sms = await h.enqueue(channel=Channel.SMS, destination=PHONE)
    result = await h.dispatch()
    assert (2, 1) == (result.released, result.published)
    probe_at = h.clock.now() + timedelta(minutes=1)
    for message_id in (first, second):
        message = h.message(message_id)
        assert (State.PENDING, 0, probe_at) == (
            message.state,
            message.attempts,
            message.available_at,
        )
    assert State.PUBLISHED == h.message(sms).state
    assert 1 == len(h.email.tried)  # the second was never sent to the paused provider
    [alert] = h.telemetry.named("provider.suspended")
    assert ("critical", "ses") == (alert.level, alert.fields["provider"])


async def test_after_the_pause_a_probe_resumes_the_provider() -> None:
    h = Harness(concurrency=1)
    h.email.fail_next(h.email.refuse(FailureClass.PROVIDER_SUSPENDED, "SendingPaused"))
    first = await h.enqueue()
    await h.dispatch()
    h.clock.advance(timedelta(minutes=1))
    await h.dispatch()
    assert State.PUBLISHED == h.message(first).state
    assert 1 == len(h.telemetry.named("provider.resumed"))
    assert {} == h.breaker.paused()


async def test_an_unconfigured_link_is_retried_without_opening_the_token() -> None:
    h = Harness(links=LinkBases(invitation=None))
    # An envelope that would fail to open proves the worker never tried to open it.
    message_id = await h.enqueue(Purpose.INVITATION, envelope="v1.test.AAAA.AAAA.AAAA")
    await h.dispatch()
    message = h.message(message_id)
    assert (State.PENDING, 1) == (message.state, message.attempts)
    assert FailureClass.LINK_UNCONFIGURED == h.store.attempts[0].outcome.failure_class  # type: ignore[union-attr]
    assert [] == h.telemetry.named("security.decryption_failed")


async def test_a_configured_link_carries_the_token_in_its_fragment() -> None:
    h = Harness(links=LinkBases(magic_link="https://app.example/sign-in"))
    await h.enqueue(Purpose.MAGIC_LINK, secret="tok-abc")
    await h.dispatch()
    [call] = h.renderer.calls
    assert (None, "https://app.example/sign-in#token=tok-abc") == (call["secret"], call["link"])


async def test_an_expired_message_whose_lease_lapsed_is_dead_lettered_by_the_claim() -> None:
    h = Harness()
    message_id = await h.enqueue(expires_in=timedelta(minutes=10))
    assert 1 == len(await h.store.claim(owner="crashed", limit=1, lease=timedelta(seconds=1)))
    h.clock.advance(timedelta(minutes=10))
    result = await h.dispatch()
    assert 0 == result.claimed
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_EXPIRED, 0) == (
        message.state,
        message.dead_letter_reason,
        message.attempts,
    )
    assert [] == h.email.tried


@attrs.define
class SlowClaimStore(InMemoryOutboxStore):
    """A store whose claims take ``claim_takes`` of (fake) time."""

    claim_takes: timedelta = timedelta(0)

    async def claim(
        self,
        *,
        owner: str,
        limit: int,
        lease: timedelta,
        urgent: bool = False,
        leave_urgent: timedelta = timedelta(0),
    ) -> Sequence[ClaimedMessage]:
        claimed = await super().claim(
            owner=owner, limit=limit, lease=lease, urgent=urgent, leave_urgent=leave_urgent
        )
        self.clock.advance(self.claim_takes)
        return claimed


@attrs.define
class BrokenRecordStore(InMemoryOutboxStore):
    """A store whose recording always fails as a lost database would."""

    async def record(self, records: Sequence[AttemptRecord]) -> Sequence[RecordResult]:
        raise StoreUnavailable("08006")


async def test_expiry_between_claim_and_send_skips_the_provider() -> None:
    h = Harness()
    h.store = SlowClaimStore(clock=h.clock, claim_takes=timedelta(seconds=11))
    h.dispatch = attrs.evolve(h.dispatch, store=h.store)
    message_id = await h.enqueue(expires_in=timedelta(seconds=10))
    await h.dispatch()
    message = h.message(message_id)
    assert [] == h.email.tried
    assert (State.DEAD_LETTERED, FailureClass.CHALLENGE_EXPIRED, 0) == (
        message.state,
        message.dead_letter_reason,
        message.attempts,
    )


async def test_a_missing_template_dead_letters_as_rejected() -> None:
    h = Harness()
    h.renderer.failure = TemplateNotFound("sign_up")
    message_id = await h.enqueue()
    await h.dispatch()
    message = h.message(message_id)
    assert (State.DEAD_LETTERED, FailureClass.REJECTED) == (
        message.state,
        message.dead_letter_reason,
    )
    assert [] == h.email.tried


async def test_a_provider_that_hangs_past_the_timeout_is_indeterminate() -> None:
    h = Harness()
    h.email.delay = 5
    h.dispatch = attrs.evolve(h.dispatch, provider_timeout=timedelta(milliseconds=20))
    message_id = await h.enqueue()
    await h.dispatch()
    [attempt] = h.store.attempts
    assert (FailureClass.INDETERMINATE, "timeout") == (
        attempt.outcome.failure_class,  # type: ignore[union-attr]
        attempt.outcome.code,  # type: ignore[union-attr]
    )
    assert State.PENDING == h.message(message_id).state


async def test_a_failed_recording_is_logged_by_name_and_the_lease_is_left_to_expire() -> None:
    h = Harness()
    h.store = BrokenRecordStore(clock=h.clock)
    h.dispatch = attrs.evolve(h.dispatch, store=h.store)
    message_id = await h.enqueue()
    result = await h.dispatch()
    assert BatchTally(claimed=1, unrecorded=1) == result
    [event] = h.telemetry.named("outcome.record_failed")
    assert ("StoreUnavailable", "08006") == (event.fields["error"], event.fields["code"])
    assert State.LEASED == h.message(message_id).state


async def test_a_record_refused_for_a_lost_lease_is_reported() -> None:
    h = Harness()
    message_id = await h.enqueue()

    def consumed_meanwhile(_: Delivery) -> None:
        h.store.messages[message_id] = h.message(message_id).cancel(
            FailureClass.CHALLENGE_CONSUMED, h.clock.now()
        )

    h.email.before_send = consumed_meanwhile
    result = await h.dispatch()
    assert 1 == result.lease_lost
    assert FailureClass.CHALLENGE_CONSUMED == h.message(message_id).dead_letter_reason
    assert 1 == len(h.telemetry.named("outcome.lease_lost"))


@pytest.mark.parametrize("concurrency", [1, 3, 50])
async def test_concurrency_bound_does_not_change_the_outcome(concurrency: int) -> None:
    h = Harness(concurrency=concurrency)
    ids = [await h.enqueue() for _ in range(10)]
    assert 10 == (await h.dispatch()).published
    assert {State.PUBLISHED} == {h.message(i).state for i in ids}


async def test_every_send_first_takes_room_in_its_own_providers_quota() -> None:
    h = Harness()
    email_quota, sms_quota = CountingRateLimit(), CountingRateLimit()
    h.dispatch = attrs.evolve(h.dispatch, rate_limits={"ses": email_quota, "brevo": sms_quota})
    for _ in range(3):
        await h.enqueue()
    await h.enqueue(channel=Channel.SMS, destination=PHONE)

    result = await h.dispatch()

    assert BatchTally(claimed=4, published=4) == result
    assert (3, 1) == (email_quota.granted, sms_quota.granted)


async def test_a_send_whose_quota_stays_full_past_the_lease_is_not_started() -> None:
    h = Harness()
    quota = CountingRateLimit(shut=True)
    # A short lease keeps the wait for the quota short; the clock itself never moves.
    h.dispatch = attrs.evolve(h.dispatch, rate_limits={"ses": quota}, lease=timedelta(seconds=0.05))
    message_id = await h.enqueue()

    result = await h.dispatch()

    assert BatchTally(claimed=1, lease_lost=1) == result
    assert [] == h.email.sent
    assert State.LEASED == h.message(message_id).state  # its lease runs out; claimed again
    assert ["delivery.lease_running_out"] == [
        e.name for e in h.telemetry.events if e.name.startswith("delivery.")
    ]


class SlowProvider(RecordingProvider):
    """Accepts every send, after the fixed clock has moved on by ``takes``."""

    def __init__(self, clock: FixedClock, takes: timedelta) -> None:
        super().__init__(provider_name="slow")
        self._clock, self._takes = clock, takes

    async def send(self, delivery: Delivery) -> str:
        await asyncio.sleep(0.05)  # let the fast failure be decided first
        self._clock.advance(self._takes)
        return await super().send(delivery)


async def test_a_retry_whose_time_passed_while_its_batch_sent_is_recorded_just_ahead() -> None:
    """The store refuses a retry time not in the future for the whole batch; a slow send
    beside a fast failure must not make the worker ask for one."""
    h = Harness()
    h.dispatch = attrs.evolve(
        h.dispatch,
        providers={Channel.EMAIL: SlowProvider(h.clock, timedelta(seconds=30)), Channel.SMS: h.sms},
    )
    h.sms.fail_next(h.sms.refuse(FailureClass.UNAVAILABLE, "503"))
    failed = await h.enqueue(channel=Channel.SMS, destination=PHONE)
    sent = await h.enqueue()

    result = await h.dispatch()

    assert (1, 1) == (result.published, result.retried)
    assert State.PUBLISHED == h.message(sent).state
    assert h.clock.now() + LATE_RETRY_DELAY == h.message(failed).available_at


async def test_the_slot_beside_the_batches_claims_codes_in_small_batches_alone_at_full_size() -> (
    None
):
    """``reserved_slot`` keeps the slot light beside the lane's batches; ``urgent_only``, the
    slot with a process of its own, must keep up with every code by itself."""
    h = Harness()
    h.dispatch = attrs.evolve(h.dispatch, batch_size=30, concurrency=30)
    for _ in range(60):
        await h.enqueue()
    notification = await h.enqueue(Purpose.NOTIFICATION, expires_in=None)

    beside = await h.dispatch.reserved_slot()()
    alone = await h.dispatch.urgent_only()()

    assert (10, 30) == (beside.claimed, alone.claimed)
    assert State.PENDING == h.message(notification).state  # neither takes a notification


async def test_batches_leaving_urgent_work_send_notifications_and_leave_fresh_codes() -> None:
    h = Harness()
    code = await h.enqueue()
    notification = await h.enqueue(Purpose.NOTIFICATION, expires_in=None)
    batches = h.dispatch.leaving_urgent(timedelta(seconds=0.1))

    first = await batches()
    h.clock.advance(timedelta(seconds=0.2))
    later = await batches()

    assert (State.PUBLISHED, State.PUBLISHED) == (
        h.message(notification).state,
        h.message(code).state,
    )
    assert (1, 1) == (first.claimed, later.claimed)
