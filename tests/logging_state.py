"""Put process-wide logging back as it was: structlog, the root logger, the quieted libraries.

Commands run in-process (CliRunner) and logging tests configure logging for the whole
process, onto streams that close when the command or the test ends; what runs next must not
write there.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import structlog

from outbox.entrypoints.observability import QUIET_LIBRARIES


@contextlib.contextmanager
def logging_restored() -> Iterator[None]:
    """Run the body, then undo whatever logging configuration it made."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {name: logging.getLogger(name).level for name in QUIET_LIBRARIES}
    try:
        yield
    finally:
        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)
        for name, quiet_level in quiet.items():  # configure_logging quiets these (boto3, httpx…)
            logging.getLogger(name).setLevel(quiet_level)
