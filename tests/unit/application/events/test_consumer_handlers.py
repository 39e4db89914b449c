"""Registering consumer handlers: by consumer, event type and version range."""

from __future__ import annotations

import pytest

from outbox.application.events.consumer_handlers import (
    ConsumerHandler,
    ConsumerRegistry,
    Reject,
    RetryAfter,
)
from outbox.application.events.consumer_ports import DeliveredEvent


async def _ignore(event: DeliveredEvent, transaction: object) -> None:
    del event, transaction


def test_a_handler_takes_its_types_within_its_versions_only():
    registry = ConsumerRegistry()
    registry.register("shop.fulfilment", event_types=["sales.order_placed"], versions=(1, 2))(
        _ignore
    )

    assert registry.handler("shop.fulfilment", "sales.order_placed", 2) is not None
    assert registry.handler("shop.fulfilment", "sales.order_placed", 3) is None
    assert registry.handler("shop.fulfilment", "sales.order_paid", 1) is None
    assert registry.handler("shop.other", "sales.order_placed", 1) is None
    assert ("shop.fulfilment",) == registry.consumers


def test_two_handlers_may_split_a_type_s_versions_but_never_overlap():
    registry = ConsumerRegistry()
    registry.register("shop.fulfilment", event_types=["sales.order_placed"], versions=(1, 1))(
        _ignore
    )
    registry.register("shop.fulfilment", event_types=["sales.order_placed"], versions=(2, 3))(
        _ignore
    )

    with pytest.raises(ValueError, match=r"two handlers for sales\.order_placed"):
        registry.register("shop.fulfilment", event_types=["sales.order_placed"], versions=(3, 4))(
            _ignore
        )


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"consumer": "fulfilment"}, "consumer"),
        ({"event_types": []}, "event_types"),
        ({"event_types": ["OrderPlaced"]}, "event_types"),
        ({"min_version": 3, "max_version": 2}, "versions"),
        ({"min_version": 0}, "versions"),
    ],
)
def test_a_bad_handler_is_refused_naming_what_is_wrong(options, problem):
    values = {
        "consumer": "shop.fulfilment",
        "event_types": ["sales.order_placed"],
        "handle": _ignore,
        **options,
    }
    with pytest.raises(ValueError, match=problem):
        ConsumerHandler(**values)


def test_a_handler_s_answers_check_their_values():
    assert 30.0 == RetryAfter(30).seconds
    assert "bad_order" == Reject("bad_order").code
    with pytest.raises(ValueError, match="positive"):
        RetryAfter(0)
    with pytest.raises(ValueError, match="lowercase word"):
        Reject("The order had no SKU: order 1234 for jane@example.com")
