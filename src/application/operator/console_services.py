"""The use cases and reads the operator console serves, built once by the composition root."""

from __future__ import annotations

import attrs

from outbox.application.delivery.provider_pauses import PausedProviders
from outbox.application.operator.console_ports import ConsoleReads
from outbox.application.operator.repair_matching_messages import RepairMatchingMessages
from outbox.application.operator.show_console_overview import ShowConsoleOverview


@attrs.frozen(kw_only=True)
class ConsoleServices:
    """What the console adds to the operator services: overview, bulk repairs, reads."""

    overview: ShowConsoleOverview
    repair_matching: RepairMatchingMessages
    reads: ConsoleReads  # activity, audit, lag: plain gated reads, no rule of their own
    # The paused providers' names, read before any step-up: the step-up page says when the
    # provider that would send its code is paused (and how to break glass).
    paused: PausedProviders
