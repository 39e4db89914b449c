"""``python -m entrypoints.cli``: ``outboxctl`` itself (the worker supervisor starts so)."""

from __future__ import annotations

from entrypoints.cli.app import main

main()
