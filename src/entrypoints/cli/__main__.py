"""``python -m outbox.entrypoints.cli``: ``outboxctl`` itself (the worker supervisor starts so)."""

from __future__ import annotations

from outbox.entrypoints.cli.app import main

main()
