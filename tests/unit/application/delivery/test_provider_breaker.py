"""The provider breaker pauses a suspended provider, probes it once, and resumes it."""

from __future__ import annotations

from datetime import timedelta

from outbox.application.delivery.provider_breaker import ProviderBreaker
from tests.fakes.clock import EPOCH

LATER = EPOCH + timedelta(minutes=1)


def test_an_unknown_provider_is_admitted() -> None:
    assert ProviderBreaker().admit("ses", EPOCH) is None


def test_a_tripped_provider_is_refused_until_the_probe_time() -> None:
    breaker = ProviderBreaker()
    assert breaker.trip("ses", LATER) is True
    assert LATER == breaker.admit("ses", EPOCH)
    assert LATER == breaker.admit("ses", LATER - timedelta(seconds=1))


def test_other_providers_keep_flowing_while_one_is_paused() -> None:
    breaker = ProviderBreaker()
    breaker.trip("ses", LATER)
    assert breaker.admit("brevo", EPOCH) is None


def test_after_the_pause_exactly_one_probe_is_admitted() -> None:
    breaker = ProviderBreaker()
    breaker.trip("ses", LATER)
    assert breaker.admit("ses", LATER) is None
    assert LATER == breaker.admit("ses", LATER + timedelta(seconds=5))


def test_an_accepted_probe_resumes_the_provider() -> None:
    breaker = ProviderBreaker()
    breaker.trip("ses", LATER)
    breaker.admit("ses", LATER)
    assert breaker.succeed("ses") is True
    assert breaker.admit("ses", LATER) is None
    assert {} == breaker.paused()


def test_a_probe_suspended_again_starts_a_new_pause() -> None:
    breaker = ProviderBreaker()
    breaker.trip("ses", LATER)
    breaker.admit("ses", LATER)
    again = LATER + timedelta(minutes=1)
    assert breaker.trip("ses", again) is False
    assert again == breaker.admit("ses", LATER + timedelta(seconds=1))


def test_a_probe_that_ends_otherwise_lets_the_next_message_probe() -> None:
    breaker = ProviderBreaker()
    breaker.trip("ses", LATER)
    breaker.admit("ses", LATER)
    breaker.settle("ses")
    assert breaker.admit("ses", LATER) is None


def test_success_of_a_provider_that_was_never_paused_reports_no_resume() -> None:
    assert ProviderBreaker().succeed("ses") is False
