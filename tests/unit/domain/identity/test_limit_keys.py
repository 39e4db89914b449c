"""What a per-client limit counts as one client, and a destination pace as one inbox."""

from __future__ import annotations

import pytest

from outbox.domain.identity.rate_limits import client_block, inbox_of


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("203.0.113.9", "203.0.113.9"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("::ffff:198.51.100.7", "198.51.100.7"),
        ("::1", "::/64"),
        ("unknown", "unknown"),
        ("/run/outbox.sock", "/run/outbox.sock"),
    ],
)
def test_a_client_is_its_ipv4_address_or_its_ipv6_64(address: str, client: str) -> None:
    assert client == client_block(address)


def test_neighbouring_64s_are_different_clients() -> None:
    assert client_block("2001:db8:1:2::1") != client_block("2001:db8:1:3::1")


@pytest.mark.parametrize(
    ("address", "inbox"),
    [
        ("alice@example.com", "alice@example.com"),
        ("alice+shop@example.com", "alice@example.com"),
        ("a.lice@example.com", "a.lice@example.com"),
        ("a.l.ice+x@gmail.com", "alice@gmail.com"),
        ("a.lice@googlemail.com", "alice@gmail.com"),
        ("+tag@example.com", "+tag@example.com"),
        ("not-an-address", "not-an-address"),
    ],
)
def test_spellings_that_reach_one_inbox_are_one_inbox(address: str, inbox: str) -> None:
    assert inbox == inbox_of(address)
