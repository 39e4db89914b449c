"""``python -m tests.reliability [--write] [pytest args…]``: the long reliability run.

Runs tests/reliability (and the security suite) with OUTBOX_RELIABILITY=long, collects the
counts every scenario records, prints them as Markdown and, with ``--write``, puts them in
docs/reliability.md between its result markers. The exit code is pytest's.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"


def main(argv: list[str]) -> int:
    """Run the long suite; print (and with --write, record) the counts."""
    write = "--write" in argv
    extra = [arg for arg in argv if arg != "--write"]
    with tempfile.TemporaryDirectory() as directory:
        results = Path(directory) / "results.jsonl"
        env = {
            **os.environ,
            "OUTBOX_RELIABILITY": "long",
            "OUTBOX_RELIABILITY_RESULTS": str(results),
        }
        started = time.monotonic()
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-o",
            "timeout=1800",
            "tests/reliability",
            "tests/security",
            *extra,
        ]
        code = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        elapsed = time.monotonic() - started
        lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
    report = render([json.loads(line) for line in lines], code, elapsed)
    print(report)
    if write:
        text = DOC.read_text(encoding="utf-8")
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        DOC.write_text(f"{head}{BEGIN}\n{report}\n{END}{tail}", encoding="utf-8")
    return code


def render(results: list[dict[str, Any]], code: int, elapsed: float) -> str:
    """The results as Markdown: one section per scenario, its last recorded counts."""
    latest: dict[str, dict[str, Any]] = {}
    for result in results:
        latest[result["scenario"]] = result
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    verdict = "passed" if code == 0 else f"FAILED (pytest exit {code})"
    header = (
        f"Run {when} on {platform.node() or 'this machine'} ({os.cpu_count()} CPUs,"
        f" Python {platform.python_version()}): `python -m tests.reliability`,"
        f" {verdict} in {elapsed / 60:.1f} min."
    )
    out = [header, ""]
    for name in sorted(latest):
        counts = latest[name]["counts"]
        out += [f"**{name}**", "", "| count | value |", "|---|---|"]
        out += [f"| {key} | {_cell(value)} |" for key, value in sorted(counts.items())]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or "—"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
