"""Tracing is optional: without the otel extra everything imports and runs, untraced; with it,
only the OTEL_* variables turn it on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from outbox.adapters.telemetry.tracing import start_tracing, tracing_installed, tracing_requested

# Runs in a fresh interpreter in which every opentelemetry module fails to import, as it
# does when the extra is not installed.
WITHOUT_OTEL = textwrap.dedent(
    """
    import sys

    class NoOpenTelemetry:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoOpenTelemetry())

    from outbox.adapters.telemetry import tracing
    from outbox.entrypoints.bootstrap import api, parts, processes, worker
    from outbox.entrypoints.cli.app import app
    from outbox.entrypoints.http.app import create_app

    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert tracing.tracing_requested(environ)
    assert not tracing.tracing_installed()
    assert tracing.start_tracing(environ, service="outbox") is None
    assert not any(name.startswith("opentelemetry") for name in sys.modules)
    print("untraced")
    """
)


def test_without_the_extra_everything_imports_and_tracing_stays_off() -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_OTEL], capture_output=True, text=True, check=False
    )
    assert (0, "untraced\n") == (result.returncode, result.stdout), result.stderr[-2000:]


def test_the_extra_is_installed_in_development() -> None:
    assert tracing_installed()


@pytest.mark.parametrize(
    ("environ", "requested"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False),
        ({"OTEL_SERVICE_NAME": "outbox"}, False),
    ],
)
def test_only_an_exporter_setting_turns_tracing_on(
    environ: dict[str, str], *, requested: bool
) -> None:
    assert requested == tracing_requested(environ)
    tracing = start_tracing(environ, service="outbox")
    assert requested == (tracing is not None)
    if tracing is not None:
        tracing.shutdown()
