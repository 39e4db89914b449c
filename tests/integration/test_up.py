"""``outboxctl up`` from a clean environment: embedded PostgreSQL, API, worker, console codes,
and the whole events path: a verified account's event published, consumed, its notice sent."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import httpx
import pytest

from tests.outboxctl import run_outboxctl

pytestmark = pytest.mark.integration

OUTBOXCTL = str(Path(sys.executable).with_name("outboxctl"))


async def _line_matching(
    stream: asyncio.StreamReader, pattern: str, within: float
) -> re.Match[str]:
    async with asyncio.timeout(within):
        while True:
            line = (await stream.readline()).decode()
            if not line:
                pytest.fail(f"the stream ended before a line matching {pattern!r}")
            if match := re.search(pattern, line):
                return match


def _found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match is not None, text
    return match.group(1)


async def _banner(stream: asyncio.StreamReader, within: float) -> str:
    """Every line ``outboxctl up`` prints up to its last banner line."""
    lines: list[str] = []
    async with asyncio.timeout(within):
        while not lines or "Stop with Ctrl-C" not in lines[-1]:
            line = (await stream.readline()).decode()
            if not line:
                pytest.fail("the stream ended before the banner's end")
            lines.append(line)
    return "".join(lines)


def _consumers_lag(env: dict[str, str]) -> list[dict[str, object]]:
    """``outboxctl consumers lag --json`` against the stack's embedded server."""
    listed = run_outboxctl("consumers", "lag", "--json", variables=env)
    assert 0 == listed.returncode, listed.stderr
    items: list[dict[str, object]] = json.loads(listed.stdout)["items"]
    return items


async def _lines_matching(stream: asyncio.StreamReader, patterns: list[str], within: float) -> None:
    """Read until a line matching each of ``patterns`` was seen, in any order."""
    waiting = list(patterns)
    async with asyncio.timeout(within):
        while waiting:
            line = (await stream.readline()).decode()
            if not line:
                pytest.fail(f"the stream ended before lines matching {waiting!r}")
            waiting = [p for p in waiting if not re.search(p, line)]


async def test_up_serves_the_api_and_delivers_a_sign_up_code_to_the_console(
    tmp_path: Path,
) -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "OUTBOX_DATA_DIR": str(tmp_path / "data"),
        "OUTBOX_HTTP_PORT": "0",
        "OUTBOX_ADMIN_PORT": "0",
        "OUTBOX_WEBHOOK_PORT": "0",
    }
    stack = await asyncio.create_subprocess_exec(
        OUTBOXCTL,
        "up",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert stack.stdout is not None
    try:
        banner = await _banner(stack.stdout, 120)
        base = _found(r"API on (http://\S+) ", banner)
        admin = _found(r"admin listener, (http://\S+) ", banner)
        assert f"{admin}/console/" == _found(r"operator console: (http://\S+) ", banner)
        # The banner's own examples, as a newcomer would paste them.
        sign_up, confirmation = [
            json.loads(body) for body in re.findall(r"-d '(.*?)'", banner, re.DOTALL)
        ]
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            ready = await client.get("/readyz")
            assert 200 == ready.status_code
            created = await client.post("/sign-ups", json=sign_up)
            assert 201 == created.status_code, created.text
            assert ["challengeExpiresAt"] == list(created.json())
            code = (await _line_matching(stack.stdout, r"code is ([0-9]{6})", 30)).group(1)
            confirmed = await client.post(
                "/sign-ups/confirmations", json={**confirmation, "code": code}
            )
            assert confirmed.is_success, confirmed.text
            signed_in = await client.post(
                "/sessions",
                json={k: confirmation[k] for k in ("identifier", "password")},
            )
            assert 201 == signed_in.status_code, signed_in.text
            # identity.account_verified is published by the events lane and handled by the
            # identity.security_notices consumer and the identity.account_notifications one
            # (the consumers lane), whose notice and welcome the security lane prints.
            await _lines_matching(
                stack.stdout,
                [r"Your account was created, and this address", r"Welcome! Your account is ready"],
                60,
            )
        lags = await asyncio.to_thread(_consumers_lag, env)
        assert [
            ("identity.account_notifications", 0, 0),
            ("identity.security_notices", 0, 0),
        ] == sorted((lag["consumer"], lag["eventsBehind"], lag["deadLetters"]) for lag in lags)
        async with httpx.AsyncClient(base_url=admin, timeout=10) as client:
            assert b"# HELP" in (await client.get("/metrics")).content
            signing_in = await client.get("/console/")
            assert (303, "/console/sign-in") == (
                signing_in.status_code,
                signing_in.headers["location"],
            )
        stack.send_signal(signal.SIGTERM)
        assert 0 == await asyncio.wait_for(stack.wait(), 60)
    finally:
        if stack.returncode is None:
            stack.kill()
            await stack.wait()
