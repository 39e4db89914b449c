"""SMS pumping from outside: sign-ups that make the service text numbers it should not, or
text one country's numbers without end."""

from __future__ import annotations

from datetime import timedelta

import pytest

from outbox.domain.identity.rate_limits import RateLimit
from tests.integration.identity.api import Api, problem_type

pytestmark = pytest.mark.integration


async def _sign_up(api: Api, number: str) -> object:
    return await api.post("/sign-ups", {"identifier": number})


async def test_a_number_no_country_has_is_refused(api: Api) -> None:
    refused = await _sign_up(api, "+99912345678")  # +999 is assigned to no country

    assert "urn:outbox:problem:validation-error" == problem_type(refused)
    assert [] == await api.deliver()


async def test_a_number_is_stored_and_texted_in_e164(api: Api) -> None:
    accepted = await _sign_up(api, "+34 612 34 56 78")

    assert 201 == accepted.status_code  # type: ignore[attr-defined]
    assert ["+34612345678"] == [d.destination for d in await api.deliver()]


async def test_only_the_configured_countries_get_texts(api: Api) -> None:
    api.tighten(sms_countries=frozenset({"ES"}))

    refused = await _sign_up(api, "+12015550123")  # a United States number
    accepted = await _sign_up(api, "+34612345678")

    assert "urn:outbox:problem:validation-error" == problem_type(refused)
    assert 201 == accepted.status_code  # type: ignore[attr-defined]
    assert ["+34612345678"] == [d.destination for d in await api.deliver()]


async def test_one_country_prefix_gets_at_most_its_hourly_budget(api: Api) -> None:
    """Thirty different Spanish numbers used to get thirty texts."""
    api.tighten(sms_per_country_prefix=RateLimit(limit=10, window=timedelta(hours=1)))

    answers = [await _sign_up(api, f"+346123450{n:02d}") for n in range(30)]
    other_country = await _sign_up(api, "+33612345678")

    deliveries = await api.deliver()
    assert 11 == len(deliveries)
    assert 10 == sum(1 for d in deliveries if d.destination.startswith("+34"))
    assert 201 == other_country.status_code  # type: ignore[attr-defined]
    refused = answers[-1]
    assert "urn:outbox:problem:rate-limited" == problem_type(refused)
    assert 0 < int(refused.headers["retry-after"]) <= 3600  # type: ignore[attr-defined]
