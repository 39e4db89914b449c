"""tests/os_programs.py: a missing OS program skips naming its package, or fails in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.os_programs import REQUIRE_VARIABLE, require_program

MISSING = "outbox-no-such-program"
REASON = f"{MISSING} is missing: apt-get install outbox-no-such-package"


def test_a_missing_program_skips_naming_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REQUIRE_VARIABLE, raising=False)

    with pytest.raises(pytest.skip.Exception) as outcome:
        require_program(MISSING, "outbox-no-such-package")

    assert REASON == outcome.value.msg


@pytest.mark.parametrize("value", ["0", "", "yes"])
def test_only_the_value_1_turns_the_skip_into_a_failure(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(REQUIRE_VARIABLE, value)

    with pytest.raises(pytest.skip.Exception):
        require_program(MISSING, "outbox-no-such-package")


def test_ci_turns_a_missing_program_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")

    with pytest.raises(pytest.fail.Exception) as outcome:
        require_program(MISSING, "outbox-no-such-package")

    assert REASON == outcome.value.msg


def test_a_program_on_the_path_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")

    found = Path(require_program("sh", "dash"))

    assert "sh" == found.name
    assert found.is_file()


def test_a_program_in_a_debian_directory_off_the_path_is_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """/usr/sbin (pgbouncer, nats-server) is often not on an unprivileged user's PATH."""
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")
    monkeypatch.setenv("PATH", str(tmp_path))

    found = Path(require_program("sh", "dash"))

    assert found.parent in {Path("/usr/sbin"), Path("/usr/bin"), Path("/sbin"), Path("/bin")}
