"""An incident run from the console in a real headless Chromium (Debian's ``chromium``),
against the real admin app and a real worker: the email provider is paused, so no step-up
code can arrive; the staff member signs out, signs in again and steps up with a code the
database operator hands over (``outboxctl staff step-up``, the break glass); resumes the
provider; republishes every parked tenant event of an organization over a filter; replays a
consumer. Every page is saved at 1360 px, and the incident's pages again at 420 px (a phone),
where none may scroll sideways; none may show a code, a token or a full destination.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from uuid import UUID

import pytest
from playwright.async_api import Page, async_playwright

from tests.browser.test_console import ARGS, ARTIFACTS, STAFF, Pages, _eventually, _running
from tests.events_rows import EventRows
from tests.integration.console.world import ConsoleWorld
from tests.integration.identity.api import PASSWORD
from tests.outboxctl import invoke_outboxctl

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ORG = UUID("00000000-0000-4000-8000-00000000beef")
NOTICES = "identity.security_notices"
PHONE = {"width": 420, "height": 900}
DESKTOP = {"width": 1360, "height": 900}


async def _no_sideways_scroll(page: Page) -> None:
    wide = await page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"{page.url} scrolls sideways by {wide} px at 420 px"


def _break_glass(database_url: str, data_dir: Path) -> str:
    """The database operator's ``outboxctl staff step-up``: the code it prints."""
    result = invoke_outboxctl(
        "staff",
        "step-up",
        STAFF,
        "--reason",
        "INC-42: email provider paused, console locked",
        "--json",
        variables={
            "OUTBOX_DATABASE_URL": database_url,
            "OUTBOX_DATA_DIR": str(data_dir),
            "OUTBOX_LOG_LEVEL": "warning",
        },
    )
    assert 0 == result.returncode, result.stderr
    return str(json.loads(result.stdout)["code"])


async def test_staff_work_an_incident_from_the_console(
    chromium: str, world: ConsoleWorld, tmp_path: Path
) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await world.account(STAFF)
    rows = EventRows(world.staff.api.database_url)
    await rows.setup()
    parked = []
    for n in range(3):
        event = await rows.append(ORG, f"order-{n}")
        await rows.append(ORG, f"order-{n}")  # waits behind it
        await rows.dead_letter(event)
        parked.append(event)
    async with _running(world) as base, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = await browser.new_page(viewport=DESKTOP)
            pages = Pages(page)
            provider = world.staff.api.provider

            # Sign in and step up as usual, then pause the email provider.
            sent_before = len(provider.sent)
            await page.goto(f"{base}/console/sign-in")
            await page.fill("input[name=identifier]", STAFF)
            await page.fill("input[name=password]", PASSWORD)
            async with page.expect_navigation():
                await page.click("button[type=submit]")

            async def delivered() -> bool:
                return len(provider.sent) > sent_before

            await _eventually(delivered)
            [digits] = re.findall(r"\b[0-9]{6,8}\b", provider.sent[-1].content.text)[:1]
            await page.fill("input[name=code]", digits)
            async with page.expect_navigation():
                await page.click("button:has-text('Confirm')")
            await page.click("nav >> text=Providers")
            await page.fill("input[name=provider]", provider.provider_name)
            await page.fill("form.stack input[name=reason]", "INC-42: provider misbehaving")
            await page.click("button:has-text('Pause')")
            await page.wait_for_selector("text=No worker sends through it")
            await pages.shot("incident-01-provider-paused")
            await asyncio.sleep(2.5)  # every worker rereads the pauses within two seconds

            # Sign out; signing in again asks for a code that cannot arrive.
            async with page.expect_navigation():
                await page.click("button:has-text('Sign out')")
            sent_before = len(provider.sent)
            await page.goto(f"{base}/console/sign-in")
            await page.fill("input[name=identifier]", STAFF)
            await page.fill("input[name=password]", PASSWORD)
            async with page.expect_navigation():
                await page.click("button[type=submit]")
            assert "/console/step-up" in page.url
            await asyncio.sleep(2)
            assert sent_before == len(provider.sent), "a code went out through a paused provider"
            honest = await page.inner_text("p.error")
            assert f"No code can arrive: the {provider.provider_name} provider" in honest
            assert "outboxctl staff step-up" in honest
            await pages.shot("incident-02-step-up-waiting")

            # Break glass: the database operator hands over a code; the console takes it.
            glass = await asyncio.to_thread(_break_glass, world.staff.api.database_url, tmp_path)
            await page.fill("input[name=code]", glass)
            async with page.expect_navigation():
                await page.click("button:has-text('Confirm')")
            assert page.url.endswith("/console/"), await page.content()
            await pages.shot("incident-03-overview-by-break-glass")

            # Resume the provider.
            await page.click("nav >> text=Providers")
            await page.fill("td input[name=reason]", "INC-42: provider fixed")
            await page.click("button:has-text('Resume')")
            await page.wait_for_selector("text=No provider is paused")
            await pages.shot("incident-04-provider-resumed")

            # Republish every parked event of the organization, over a filter.
            await page.click("nav >> text=Events")
            await page.select_option("select[name=state]", "dead_lettered")
            await page.fill("form.filters input[name=organization]", str(ORG))
            await page.click("button:has-text('Filter')")
            await pages.shot("incident-05-events-filtered")
            await page.select_option("select[name=action]", "republish")
            await page.click("button:has-text('Preview')")
            assert "3" == await page.inner_text("p.big strong")
            await pages.shot("incident-06-bulk-preview")
            await page.fill("input[name=reason]", "INC-42: target back")
            await page.click("button:has-text('Republish 3')")
            assert "3" == await page.inner_text("p.big strong")
            await pages.shot("incident-07-bulk-done")

            # Replay the security notices consumer from the first publication.
            await page.click("nav >> text=Consumers")
            await page.click(f"a:has-text('{NOTICES}')")
            replay = page.locator("form[action$='/replay']")
            await replay.locator("input[name=from_sequence]").fill("1")
            await replay.locator("input[name=reason]").fill("INC-42: handler fixed")
            await replay.locator("button").click()
            await page.wait_for_selector("text=Replayed:")
            await pages.shot("incident-08-consumer-replayed")
            async with await rows.connect("outbox_worker") as conn:  # what a worker lane says
                await conn.execute(
                    "SELECT outbox.worker_heartbeat('console-test:1', 'security', now(), false)"
                )
            await page.click("nav >> text=Workers")
            await page.wait_for_selector("text=console-test:1")
            await pages.shot("incident-09-workers")

            # The same pages on a phone: nothing scrolls sideways.
            await page.set_viewport_size(PHONE)
            for name, path in [
                ("overview", "/console/"),
                ("events", f"/console/events?state=dead_lettered&organization={ORG}"),
                ("bulk-preview", f"/console/events/bulk?action=release&organization={ORG}"),
                ("consumers", "/console/consumers"),
                ("consumer", f"/console/consumers/{NOTICES}"),
                ("workers", "/console/workers"),
                ("providers", "/console/providers"),
            ]:
                await page.goto(base + path)
                await pages.shot(f"incident-420-{name}")
                await _no_sideways_scroll(page)
        finally:
            await browser.close()

    republished = await rows.rows(
        "SELECT r.domain_event_id FROM events.outbox_records AS r WHERE r.republish_of IS NOT NULL"
    )
    assert sorted(parked) == sorted(row[0] for row in republished)
    audit = await rows.rows(
        "SELECT action, console_reason FROM outbox.staff_audit WHERE action = 'break_glass_step_up'"
    )
    assert [("break_glass_step_up", "INC-42: email provider paused, console locked")] == audit
    [(replays,)] = await rows.rows(
        "SELECT count(*) FROM events.consumer_audit WHERE action = 'replay'"
        " AND reason = 'INC-42: handler fixed'"
    )
    assert 1 == replays
    for name, html in pages.html.items():
        assert glass not in html, (name, "the break-glass code is on a page")
