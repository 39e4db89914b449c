"""Every console page fits a phone (420 px wide) and a desktop (1360 px), in a real Chromium.

Each page is loaded at both widths and must not scroll sideways
(``document.documentElement.scrollWidth <= window.innerWidth``): a wide table scrolls inside
its own box instead. No card may be clipped (its content wider than the card, or the card
past the window's edge), no form control may sit past the edge, and the overview's lag card
shows its whole table at both widths. The pages are the navigation's (whatever it lists) and
the ones behind them: a search, a message, a bulk preview, an event. Each is saved as
artifacts/console/layout-<width>-<page>.png.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Page, async_playwright

from outbox.entrypoints.http.server import Listener, bind, serve
from tests.browser.test_console import ARGS, ARTIFACTS
from tests.integration.console.world import ConsoleWorld
from tests.integration.identity.api import PASSWORD

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

STAFF = "staff@example.com"
PHONE, DESKTOP = 420, 1360
WIDTHS = (PHONE, DESKTOP)

# Measured in the page: the page's own width, every card that overflows or sticks out, and
# every form control past the window's right edge.
LAYOUT = """() => {
  const width = window.innerWidth;
  const clipped = [...document.querySelectorAll('.card')]
    .filter(c => c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right > width + 1)
    .map(c => (c.querySelector('h1, h2') || c).textContent.trim());
  const controls = [...document.querySelectorAll('input:not([type=hidden]), select, button')]
    .filter(e => e.getBoundingClientRect().right > width + 1)
    .map(e => e.name || e.textContent.trim());
  return {width, scrollWidth: document.documentElement.scrollWidth, clipped, controls};
}"""
# The overview's lag card: inside the window, and its table whole (no scrolling needed).
LAG = """() => {
  const card = document.getElementById('lag');
  const box = card.getBoundingClientRect();
  const scroll = card.querySelector('.scroll');
  return {
    left: box.left, right: box.right, width: window.innerWidth,
    overflow: card.scrollWidth - card.clientWidth,
    table: scroll ? scroll.scrollWidth - scroll.clientWidth : 0,
  };
}"""


@contextlib.asynccontextmanager
async def _served(world: ConsoleWorld) -> AsyncIterator[str]:
    """The admin app on a free loopback port; yields its URL."""
    listener = Listener(app=world.app, socket=bind("127.0.0.1", 0))
    stop = asyncio.Event()
    server = asyncio.create_task(serve([listener], stop=stop))
    host, port = listener.address
    try:
        yield f"http://{host}:{port}"
    finally:
        stop.set()
        await server


async def _check(page: Page, name: str) -> None:
    """Load state settled, the layout checked at the current width, a screenshot saved."""
    await page.wait_for_load_state("networkidle")
    layout: dict[str, Any] = await page.evaluate(LAYOUT)
    width = layout["width"]
    await page.screenshot(path=str(ARTIFACTS / f"layout-{width}-{name}.png"), full_page=True)
    assert layout["scrollWidth"] <= width, (name, width, "the page scrolls sideways", layout)
    assert [] == layout["clipped"], (name, width, "cards clipped")
    assert [] == layout["controls"], (name, width, "form controls past the edge")


async def _each_width(page: Page, url: str, name: str) -> None:
    for width in WIDTHS:
        await page.set_viewport_size({"width": width, "height": 900})
        await page.goto(url)
        await _check(page, name)


async def _sign_in(page: Page, world: ConsoleWorld, base: str) -> None:
    """Sign in and step up through the pages, checking both at each width on the way."""
    await _each_width(page, f"{base}/console/sign-in", "sign-in")
    await page.fill("input[name=identifier]", STAFF)
    await page.fill("input[name=password]", PASSWORD)
    async with page.expect_navigation():
        await page.click("button[type=submit]")
    assert "/console/step-up" in page.url, await page.content()
    for width in WIDTHS:
        await page.set_viewport_size({"width": width, "height": 900})
        await _check(page, "step-up")
    delivery = await world.staff.api.deliver_one()
    code = re.findall(r"\b[0-9]{6,8}\b", delivery.content.text)[0]
    await page.fill("input[name=code]", code)
    async with page.expect_navigation():
        await page.click("button:has-text('Confirm')")
    assert page.url.endswith("/console/")


async def test_every_console_page_fits_a_phone_and_a_desktop(chromium: str, world: ConsoleWorld):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await world.account(STAFF)
    dead = await world.staff.dead_code("bob@example.com")
    await world.account("carol@example.com", staff=False)
    events = await world.staff.api.rows(
        "SELECT id FROM events.domain_events ORDER BY append_sequence LIMIT 1"
    )
    async with _served(world) as base, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": DESKTOP, "height": 900})
            await _sign_in(page, world, base)

            nav = await page.eval_on_selector_all(
                "header nav a", "links => links.map(a => a.getAttribute('href'))"
            )
            assert "/console/" in nav, await page.content()
            pages = [(href, href.strip("/").replace("/", "-") or "console") for href in nav]
            pages += [
                ("/console/messages?state=dead_lettered", "dead-letters"),
                (f"/console/messages/{dead.message_id}", "message"),
            ]
            if events:
                pages.append((f"/console/events/{events[0][0]}", "event"))
            for href, name in pages:
                await _each_width(page, f"{base}{href}", name)

            # The overview: the lag card whole, and both charts with their axes, at each width.
            for width in WIDTHS:
                await page.set_viewport_size({"width": width, "height": 900})
                await page.goto(f"{base}/console/")
                await page.wait_for_selector("#lag table")
                lag: dict[str, float] = await page.evaluate(LAG)
                assert 0 <= lag["left"], (width, lag)
                assert lag["right"] <= lag["width"], (width, "the lag card sticks out", lag)
                assert 0 >= lag["overflow"], (width, "the lag card clips its content", lag)
                assert 0 >= lag["table"], (width, "the lag table does not fit its card", lag)
                for chart in ("security", "events"):
                    svg = page.locator(f"#chart-{chart} svg.chart")
                    assert 2 <= await svg.locator(".time-axis text.tick").count()
                    assert 2 <= await svg.locator(".value-axis text.tick").count()
                    box = await svg.bounding_box()
                    assert box is not None
                    assert box["x"] + box["width"] <= width, (width, chart, box)

            # The bulk preview, reached from a search as staff reach it.
            await page.set_viewport_size({"width": DESKTOP, "height": 900})
            await page.goto(f"{base}/console/messages?state=dead_lettered&purpose=sign_up")
            async with page.expect_navigation():
                await page.click("text=Reissue every match…")
            await _each_width(page, page.url, "bulk-preview")
        finally:
            await browser.close()
