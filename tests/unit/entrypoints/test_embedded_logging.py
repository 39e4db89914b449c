"""An application embedding an inbox owns its logging (issue 29, finding 8).

``run_inbox`` in an application printed console-format lines to standard output. Now the
package's lines go to the standard library's logger ``outbox``, redacted: quiet without any
configuration but for warnings on standard error, and as the application's handlers say once
it configures logging.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, sys
import structlog
from outbox.entrypoints.observability import log_through_application
if sys.argv[1] == "configured":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s|%(message)s")
log_through_application()
log = structlog.get_logger()
log.info("inbox.handled", logger="outbox", consumer="shop", note="code 482913")
log.warning("inbox.retried", logger="outbox", consumer="shop")
"""


def _run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True
    )


def test_without_configuration_only_warnings_reach_stderr_and_nothing_stdout() -> None:
    quiet = _run("unconfigured")

    assert "" == quiet.stdout
    assert "inbox.retried" in quiet.stderr
    assert "inbox.handled" not in quiet.stderr


def test_the_applications_logging_decides_and_secrets_are_redacted() -> None:
    configured = _run("configured")

    assert "" == configured.stdout
    lines = configured.stderr.splitlines()
    assert any(line.startswith("outbox|inbox.handled consumer=shop") for line in lines)
    assert "482913" not in configured.stderr
