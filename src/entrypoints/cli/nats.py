"""``outboxctl nats ensure-stream``: create or check the relay's JetStream stream."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

from outbox.entrypoints.cli.exit_codes import ExitCode
from outbox.entrypoints.cli.guard import fail, run_guarded
from outbox.entrypoints.cli.output import print_json, print_table, table
from outbox.entrypoints.cli.startup import start

if TYPE_CHECKING:
    from outbox.adapters.nats.streams import StreamReport

nats_app = typer.Typer(
    help="Operate the broker relay's NATS JetStream stream.", no_args_is_help=True
)


def _json(report: StreamReport) -> dict[str, object]:
    return {
        "stream": report.name,
        "action": report.action,
        "messages": report.messages,
        "differences": [
            {"setting": d.setting, "expected": d.expected, "actual": d.actual}
            for d in report.differences
        ],
    }


@nats_app.command("ensure-stream")
def ensure_stream(
    update: Annotated[
        bool, typer.Option("--update", help="Change a differing stream to the settings.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Create the stream OUTBOX_NATS_STREAM (subjects OUTBOX_NATS_SUBJECT_PREFIX.>) when it is
    missing, or compare it with the settings: retention, storage, replicas, duplicate window,
    max age. A differing stream exits 6 and lists each difference (--update changes it)."""
    # The broker's client and the relay's composition root load only when this command runs.
    import nats.js.errors  # noqa: PLC0415

    from outbox.entrypoints.bootstrap.parts import build_process_parts  # noqa: PLC0415
    from outbox.entrypoints.bootstrap.relay import (  # noqa: PLC0415
        BrokerUnreachable,
        RelayNotConfigured,
        ensure_relay_stream,
    )

    settings = start()
    parts = build_process_parts(settings, seal_keys=False, process_metrics=False)
    try:
        report = run_guarded(
            lambda: asyncio.run(ensure_relay_stream(settings, parts.telemetry, update=update))
        )
    except RelayNotConfigured as error:
        raise fail(str(error), ExitCode.CONFIGURATION) from None
    except BrokerUnreachable as error:
        raise fail(str(error), ExitCode.FAILURE) from None
    except nats.js.errors.APIError as error:
        raise fail(
            f"JetStream refused: {error.description} (code {error.err_code})", ExitCode.REFUSED
        ) from None
    if as_json:
        print_json(_json(report))
    else:
        typer.echo(f"stream {report.name}: {report.action} ({report.messages} messages)")
        if report.differences:
            built = table("Setting", "Expected", "Actual")
            for difference in report.differences:
                built.add_row(difference.setting, difference.expected, difference.actual)
            print_table(built)
    if report.action == "differs":
        raise typer.Exit(int(ExitCode.REFUSED))
