"""The use cases and reads the operator console serves, built once by the composition root."""

from __future__ import annotations

import attrs

from outbox.application.operator.console_ports import ConsoleReads
from outbox.application.operator.repair_matching_messages import RepairMatchingMessages
from outbox.application.operator.show_console_overview import ShowConsoleOverview


@attrs.frozen(kw_only=True)
class ConsoleServices:
    """What the console adds to the operator services: overview, bulk repairs, reads."""

    overview: ShowConsoleOverview
    repair_matching: RepairMatchingMessages
    reads: ConsoleReads  # activity, audit, lag: plain gated reads, no rule of their own
