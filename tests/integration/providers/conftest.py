"""Fixtures for provider tests: a clock, a test CA, and addresses that fail in known ways."""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest
import trustme

from tests.fakes.clock import FixedClock
from tests.integration.providers import network


@pytest.fixture
def clock() -> FixedClock:
    """A clock tests can move."""
    return FixedClock()


@pytest.fixture
def refused_port() -> int:
    """A loopback port that refuses connections."""
    return network.closed_port()


@pytest.fixture
def unreachable_port() -> Iterator[int]:
    """A loopback port where connecting times out."""
    with network.black_hole() as port:
        yield port


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    """A throwaway certificate authority for the TLS servers."""
    return trustme.CA()


@pytest.fixture(scope="session")
def server_tls(ca: trustme.CA) -> ssl.SSLContext:
    """The server side of TLS: a certificate for 127.0.0.1 from the test CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


@pytest.fixture(scope="session")
def client_tls(ca: trustme.CA) -> ssl.SSLContext:
    """The client side of TLS: trusts the test CA only."""
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context
