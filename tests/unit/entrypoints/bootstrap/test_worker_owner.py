"""A worker's lease owner name survives log redaction, so logs and leases name it alike."""

from __future__ import annotations

import pytest

from outbox.adapters.telemetry.redaction import redact_text
from outbox.entrypoints.bootstrap import worker as bootstrap


@pytest.mark.parametrize("pid", [7, 31322, 123456, 999999, 4194304])
@pytest.mark.parametrize("suffix", ["1a2b3c4d", "12345678", "00098942"])
def test_the_owner_name_is_never_taken_for_a_code(
    monkeypatch: pytest.MonkeyPatch, pid: int, suffix: str
) -> None:
    monkeypatch.setattr(bootstrap.os, "getpid", lambda: pid)
    monkeypatch.setattr(bootstrap.secrets, "token_hex", lambda _: suffix)

    owner = bootstrap.worker_owner()

    assert owner == redact_text(owner)
    assert owner.endswith(f":pid{pid}:{suffix}")
