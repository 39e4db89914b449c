"""The operator console in a real headless Chromium (Debian's ``chromium``, driven by
Playwright), against the real admin app served by uvicorn and a real worker.
Without that package the test skips, naming it (conftest.py).

One browser for the whole flow: sign in, step up with the code the worker delivered, find a
dead letter by filter, open it, reissue it and watch the new code publish; requeue every
dead notification a filter matches; pause a provider, see a message wait, resume it and see
it go. Every page is saved as a screenshot in artifacts/console/ and scanned for the flow's
codes, tokens and full destinations: none may appear. Last, a bounce receipt shows on its
message's page and staff lift the suppression it made.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from playwright.async_api import Page, async_playwright

from outbox.application.delivery.batch import BatchTally
from outbox.domain.channels import Channel
from outbox.domain.delivery.failures import DeliveryFailure, FailureClass
from outbox.entrypoints.bootstrap.worker import worker_services
from outbox.entrypoints.http.server import Listener, bind, serve
from outbox.entrypoints.settings.tree import load_settings
from outbox.entrypoints.worker.loop import WorkerLoop
from tests.fakes.telemetry import RecordingTelemetry
from tests.integration.console.world import ConsoleWorld
from tests.integration.identity.api import PASSWORD

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "console"
STAFF = "staff@example.com"
DESTINATIONS = [
    STAFF,
    "bob@example.com",
    "carol@example.com",
    "dan@example.com",
    "eve@example.com",
    "fay@example.com",
]


class Pages:
    """Every page the flow saw: screenshots on disk, HTML kept for the scan."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.html: dict[str, str] = {}

    async def shot(self, name: str) -> None:
        """Save the page as artifacts/console/<name>.png and keep its HTML."""
        await self.page.wait_for_load_state("networkidle")
        await self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        self.html[name] = await self.page.content()


async def _eventually(check: Callable[[], Awaitable[bool]], *, within: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.2)


def _codes(world: ConsoleWorld) -> set[str]:
    return {
        match
        for delivery in world.staff.api.provider.sent
        for match in re.findall(r"\b[0-9]{6,8}\b", delivery.content.text)
    }


async def _dead_notification(world: ConsoleWorld, email: str) -> None:
    """A notification to ``email`` the provider rejected: a dead letter staff may requeue."""
    api = world.staff.api
    await api.rows(
        "SELECT outbox.enqueue_message(gen_random_uuid(), 'notification', 'email', %s, NULL,"
        ' \'notification\', \'{"subject": "Hello", "body": "hello"}\')',
        email,
    )
    api.provider.failures_for[email] = DeliveryFailure(
        failure_class=FailureClass.REJECTED, code="550"
    )
    try:
        assert [] == await api.deliver()
    finally:
        del api.provider.failures_for[email]


@contextlib.asynccontextmanager
async def _running(world: ConsoleWorld) -> AsyncIterator[str]:
    """The admin app on a free loopback port and a real worker; yields the console's URL."""
    listener = Listener(app=world.app, socket=bind("127.0.0.1", 0))
    stop = asyncio.Event()
    server = asyncio.create_task(serve([listener], stop=stop))
    env = {
        **world.staff.env,
        "OUTBOX_ENV": "development",
        "OUTBOX_WORKER_DB_ROLE": "outbox_worker",
        "OUTBOX_WORKER_POLL_SECONDS": "0.2",
    }
    provider = world.staff.api.provider
    async with worker_services(
        load_settings(env), providers={Channel.EMAIL: provider, Channel.SMS: provider}
    ) as services:
        loop = WorkerLoop(
            totals=BatchTally(),
            dispatch=services.dispatch,
            wait_for_work=services.store.wait_for_work,
            telemetry=RecordingTelemetry(),
            poll_interval=load_settings(env).worker.poll_interval,
        )
        worker = asyncio.create_task(loop.run())
        host, port = listener.address
        try:
            yield f"http://{host}:{port}"
        finally:
            loop.stop()
            stop.set()
            await asyncio.gather(worker, server, return_exceptions=True)


async def _state(world: ConsoleWorld, message_id: str) -> str:
    [(state,)] = await world.staff.api.rows(
        "SELECT state FROM outbox.messages WHERE id = %s", UUID(message_id)
    )
    return str(state)


async def test_staff_run_the_outbox_from_the_console(chromium: str, world: ConsoleWorld):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await world.account(STAFF)
    dead = await world.staff.dead_code("bob@example.com")
    await _dead_notification(world, "carol@example.com")
    await _dead_notification(world, "dan@example.com")
    async with _running(world) as base, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1360, "height": 900})
            pages = Pages(page)
            sent_before = len(world.staff.api.provider.sent)

            # Sign in, and step up with the code the worker delivered.
            await page.goto(f"{base}/console/")
            assert page.url.endswith("/console/sign-in")
            await pages.shot("01-sign-in")
            await page.fill("input[name=identifier]", STAFF)
            await page.fill("input[name=password]", PASSWORD)
            async with page.expect_navigation():
                await page.click("button[type=submit]")
            assert "/console/step-up" in page.url, await page.content()
            await pages.shot("02-step-up")

            async def delivered() -> bool:
                return len(world.staff.api.provider.sent) > sent_before

            await _eventually(delivered)
            code = re.findall(r"\b[0-9]{6,8}\b", world.staff.api.provider.sent[-1].content.text)[0]
            await page.fill("input[name=code]", code)
            async with page.expect_navigation():
                await page.click("button:has-text('Confirm')")
            assert page.url.endswith("/console/")
            await page.wait_for_selector("svg.chart")
            await pages.shot("03-overview")

            # Find the dead letter by filter and open it.
            await page.click("nav >> text=Messages")
            await page.select_option("select[name=state]", "dead_lettered")
            await page.select_option("select[name=purpose]", "sign_up")
            await page.click("text=Search")
            assert "state=dead_lettered" in page.url
            await pages.shot("04-dead-letters")
            await page.click(f"a[href='/console/messages/{dead.message_id}']")
            await pages.shot("05-dead-letter")

            # Reissue it and watch the new code publish.
            await page.fill("input[name=reason]", "ticket OPS-1: mailbox was full")
            await page.click("text=Reissue a new code")
            await page.wait_for_selector(".notice")
            await pages.shot("06-reissued")
            new_id = await page.get_attribute("dd a[href^='/console/messages/']", "href") or ""
            new_id = new_id.rsplit("/", 1)[-1]

            async def published() -> bool:
                return "published" == await _state(world, new_id)

            await _eventually(published)
            await page.goto(f"{base}/console/messages/{new_id}")
            assert "published" in (await page.inner_text("h1"))
            await pages.shot("07-reissued-published")

            # Requeue every dead notification the filter matches.
            await page.goto(f"{base}/console/messages")
            await page.select_option("select[name=state]", "dead_lettered")
            await page.select_option("select[name=purpose]", "notification")
            await page.click("text=Search")
            await page.click("text=Requeue every match…")
            await page.wait_for_load_state()
            assert "2" == (await page.inner_text("p.big strong"))
            await pages.shot("08-bulk-preview")
            await page.fill("input[name=reason]", "ticket OPS-2: provider outage")
            await page.click("button:has-text('Requeue 2')")
            assert "2" == (await page.inner_text("p.big strong"))
            await pages.shot("09-bulk-done")
            [(requeued,)] = await world.staff.api.rows(
                "SELECT count(*) FROM outbox.staff_audit WHERE action = 'requeue'"
                " AND console_reason = 'ticket OPS-2: provider outage'"
            )
            assert 2 == requeued

            # Pause the provider: a new message waits; resume it: the message goes.
            await page.click("nav >> text=Providers")
            await page.fill("input[name=provider]", "smtp")
            await page.fill("form.stack input[name=reason]", "ticket OPS-3: provider incident")
            await page.click("button:has-text('Pause')")
            await page.wait_for_selector("text=No worker sends through it")
            await pages.shot("10-provider-paused")
            await asyncio.sleep(2.5)  # every worker rereads the pauses within two seconds
            assert (
                201
                == (
                    await world.staff.api.post("/sign-ups", {"identifier": "eve@example.com"})
                ).status_code
            )
            [(waiting,)] = await world.staff.api.rows(
                "SELECT id FROM outbox.messages WHERE destination = 'eve@example.com'"
            )

            async def released() -> bool:
                rows = await world.staff.api.rows(
                    "SELECT count(*) FROM outbox.attempts WHERE message_id = %s"
                    " AND outcome = 'release'",
                    waiting,
                )
                return rows[0][0] > 0

            await _eventually(released)
            assert "pending" == await _state(world, str(waiting))
            await page.goto(f"{base}/console/messages/{waiting}")
            await pages.shot("11-waiting-while-paused")
            await page.goto(f"{base}/console/providers")
            await page.fill("td input[name=reason]", "ticket OPS-3: resolved")
            await page.click("button:has-text('Resume')")
            await page.wait_for_selector("text=No provider is paused")
            await pages.shot("12-provider-resumed")

            async def sent() -> bool:
                return "published" == await _state(world, str(waiting))

            await _eventually(sent, within=30)  # released for ten seconds at a time

            await page.click("nav >> text=Events")
            await pages.shot("13-events")
            await page.click("nav >> text=Overview")
            await page.wait_for_selector("svg.chart")
            await pages.shot("14-overview-after")

            # SES says a notification to fay bounced: its page shows the receipt, the
            # suppressions page lists fay masked, and staff lift it with a reason.
            world.staff.api.provider.provider_name = "ses"  # receipts name a known provider
            bounced = uuid4()
            await world.staff.api.rows(
                "SELECT * FROM outbox.enqueue_message(%s, 'notification', 'email', %s,"
                ' NULL, \'notification\', \'{"subject": "Hello", "body": "hello"}\')',
                bounced,
                "fay@example.com",
            )

            async def fay_sent() -> bool:
                return "published" == await _state(world, str(bounced))

            await _eventually(fay_sent)
            [(provider_id,)] = await world.staff.api.rows(
                "SELECT provider_message_id FROM outbox.attempts"
                " WHERE message_id = %s AND outcome = 'published'",
                bounced,
            )
            await world.staff.api.rows(
                "SELECT * FROM outbox.record_receipt('ses', 'evt-1', %s, 'bounced', 'Permanent',"
                " now(), '{}'::jsonb)",
                provider_id,
            )
            await page.goto(f"{base}/console/messages/{bounced}")
            await page.wait_for_selector("text=Delivery state after")
            await pages.shot("15-message-receipts")
            await page.click("nav >> text=Suppressions")
            await page.wait_for_selector("text=f***@example.com")
            await pages.shot("16-suppressions")
            lift = page.locator("form[action='/console/suppressions/lift']")
            await lift.locator("input[name=destination]").fill("fay@example.com")
            await lift.locator("input[name=reason]").fill("ticket OPS-4: mailbox fixed")
            await lift.locator("button").click()
            await page.wait_for_selector("text=Lifted:")
            await pages.shot("17-suppression-lifted")
            [(lifted,)] = await world.staff.api.rows(
                "SELECT count(*) FROM outbox.suppression_audit WHERE action = 'lift'"
                " AND reason = 'ticket OPS-4: mailbox fixed'"
            )
            assert 1 == lifted
        finally:
            await browser.close()

    secrets = _codes(world) | {dead.code}
    for session in world.console.sessions._by_digest.values():
        secrets |= {session.bearer, session.csrf} - {session.csrf}
        if session.elevation:
            secrets.add(session.elevation)
    for name, html in pages.html.items():
        for secret in [*secrets, *DESTINATIONS]:
            assert secret not in html, (name, "a secret or a full destination is on the page")
