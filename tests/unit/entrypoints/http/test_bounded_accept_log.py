"""A process out of file descriptors logs its failed accepts once per window, with a count."""

from __future__ import annotations

import asyncio

from structlog.testing import capture_logs

from outbox.entrypoints.http.server import ACCEPT_FAILURE, bound_accept_failures


async def test_a_storm_of_failed_accepts_is_one_line_and_other_errors_pass_through() -> None:
    loop = asyncio.get_running_loop()
    seen: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context["message"]))
    try:
        bound_accept_failures(loop)
        with capture_logs() as logs:
            for _ in range(500):
                loop.call_exception_handler({"message": ACCEPT_FAILURE})
            loop.call_exception_handler({"message": "something else"})
    finally:
        loop.set_exception_handler(previous)

    assert [("http.accept_failed", 1)] == [(e["event"], e["count"]) for e in logs]
    assert ["something else"] == seen
