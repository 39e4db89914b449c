"""Password recovery and magic links answer known and unknown identifiers alike."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from outbox.adapters.crypto.hashing import Argon2idHasher, Argon2Parameters
from outbox.domain.identity.rate_limits import Backoff
from outbox.domain.purposes import Purpose
from tests.integration.identity.api import SEALER, Api, problem_type, token_of

pytestmark = pytest.mark.integration

KNOWN = "alice@example.com"
UNKNOWN = "nobody@example.com"
ROUTES = [("/password-recoveries", "identifier"), ("/magic-links", "email")]


async def _ask(api: Api, path: str, field: str, address: str) -> tuple[Any, list[str]]:
    """The response and the statements the API sent while answering it."""
    api.log.statements.clear()
    api.log.recording = True
    try:
        response = await api.post(path, {field: address})
    finally:
        api.log.recording = False
    return response, list(api.log.statements)


def _wire(response: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    return response.status_code, sorted(response.headers.items()), response.content


@pytest.mark.parametrize(("path", "field"), ROUTES)
async def test_known_and_unknown_get_identical_bytes_and_run_identical_statements(
    api: Api, path: str, field: str
) -> None:
    await api.signed_up(KNOWN)

    known, known_statements = await _ask(api, path, field, KNOWN)
    unknown, unknown_statements = await _ask(api, path, field, UNKNOWN)

    assert 201 == known.status_code
    assert _wire(known) == _wire(unknown)
    assert known_statements == unknown_statements
    assert any("_if_known" in statement for statement in known_statements)
    [delivery] = await api.deliver()
    assert KNOWN == delivery.destination


@pytest.mark.parametrize(("path", "field"), ROUTES)
async def test_a_resend_answers_exactly_like_a_first_request(
    api: Api, path: str, field: str
) -> None:
    await api.signed_up(KNOWN)
    await api.post(path, {field: KNOWN})

    again, _ = await _ask(api, path, field, KNOWN)
    unknown, _ = await _ask(api, path, field, UNKNOWN)

    assert _wire(again) == _wire(unknown)


@pytest.mark.parametrize(
    ("path", "field", "table"),
    [
        ("/password-recoveries", "identifier", "identity.challenges"),
        ("/password-recoveries", "identifier", "outbox.messages"),
        ("/magic-links", "email", "identity.magic_links"),
        ("/magic-links", "email", "outbox.envelopes"),
    ],
)
async def test_a_failure_after_the_lookup_is_hidden_behind_the_same_201(
    api: Api, path: str, field: str, table: str
) -> None:
    await api.signed_up(KNOWN)
    before = len(await api.rows("SELECT 1 FROM outbox.messages"))
    await api.execute(
        "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS"
        " $$BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '53100'; END$$"
    )
    await api.execute(
        f"CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON {table}"  # type: ignore[misc]
        " FOR EACH ROW EXECUTE FUNCTION public.refuse()"
    )

    known, _ = await _ask(api, path, field, KNOWN)
    unknown, _ = await _ask(api, path, field, UNKNOWN)

    assert _wire(known) == _wire(unknown)
    assert 201 == known.status_code
    assert before == len(await api.rows("SELECT 1 FROM outbox.messages"))
    [event] = [e for e in api.telemetry.events if e.name.endswith(".failed")]
    assert ("error", "53100") == (event.level, event.fields["code"])
    assert "refused" not in str(event.fields)


@pytest.mark.parametrize(("path", "field"), ROUTES)
@pytest.mark.parametrize(("sqlstate", "status"), [("57P01", 503), ("XX000", 500)])
async def test_a_failure_of_the_lookup_itself_is_reported_alike_for_everyone(
    api: Api, path: str, field: str, sqlstate: str, status: int
) -> None:
    await api.signed_up(KNOWN)
    lookup = "find_recovery_target" if "password" in path else "find_magic_link_target"
    [(definition,)] = await api.rows("SELECT pg_get_functiondef(%s::regproc)", f"identity.{lookup}")
    body_start = definition.index("AS $function$") + len("AS $function$")
    broken = (
        definition[:body_start]
        + f"BEGIN RAISE EXCEPTION 'lookup failed' USING ERRCODE = '{sqlstate}'; END"
        + definition[definition.index("$function$", body_start) :]
    )
    await api.execute(broken)  # type: ignore[arg-type]

    known, _ = await _ask(api, path, field, KNOWN)
    unknown, _ = await _ask(api, path, field, UNKNOWN)

    assert status == known.status_code
    assert _wire(known) == _wire(unknown)
    assert "lookup failed" not in known.text
    if status == 503:
        assert "5" == known.headers["retry-after"]
        assert "urn:outbox:problem:service-unavailable" == problem_type(known)


@pytest.mark.parametrize(("path", "field"), ROUTES)
async def test_the_destination_limit_is_silent_and_sends_nothing_more(
    api: Api, path: str, field: str
) -> None:
    await api.signed_up(KNOWN)
    api.provider.sent.clear()
    api.tighten(per_destination=Backoff())

    first, _ = await _ask(api, path, field, KNOWN)
    second, _ = await _ask(api, path, field, KNOWN)
    unknown, _ = await _ask(api, path, field, UNKNOWN)

    assert _wire(first) == _wire(second) == _wire(unknown)
    assert 1 == len(await api.deliver())
    assert any(e.name.endswith("destination_limited") for e in api.telemetry.events)


async def test_a_magic_link_signs_in_once(api: Api) -> None:
    await api.signed_up(KNOWN)
    await api.post("/magic-links", {"email": KNOWN})
    delivery = await api.deliver_one()
    assert delivery.content.text.startswith("https://app.example/sign-in#token=")
    token = token_of(delivery)

    redeemed = await api.post("/magic-links/redemptions", {"token": token})
    again = await api.post("/magic-links/redemptions", {"token": token})

    assert 201 == redeemed.status_code
    assert 201 == (await api.post("/step-ups", token=redeemed.json()["token"])).status_code
    assert "urn:outbox:problem:invalid-token" == problem_type(again)


WRITTEN_TABLES = ("identity.challenges", "outbox.messages", "outbox.envelopes")
WORK = """
SELECT pg_current_xact_id_if_assigned() IS NOT NULL,
       pg_stat_get_xact_tuples_inserted('identity.identities'::regclass),
       pg_stat_get_xact_tuples_inserted('identity.challenges'::regclass),
       pg_stat_get_xact_tuples_inserted('outbox.messages'::regclass),
       pg_stat_get_xact_tuples_inserted('outbox.envelopes'::regclass)
"""


async def _recovery_work(api: Api, identifier: str) -> tuple[Any, ...]:
    """What one recovery transaction did on the server, seen from inside it, as the API role:
    whether it holds a transaction id (so its commit writes and flushes WAL) and how many
    rows it inserted per table, rolled-back ones included. The transaction is then committed.
    """
    now = datetime.now(UTC)
    challenge_id, message_id = uuid.uuid4(), uuid.uuid4()
    sealed = SEALER.seal(
        message_id=message_id, purpose=Purpose.PASSWORD_RECOVERY, plaintext="123456"
    )
    code_hash = Argon2idHasher(Argon2Parameters.cheapest()).hash("123456")
    async with await psycopg.AsyncConnection.connect(api.database_url) as conn:
        await conn.execute("SET ROLE identity_service")
        cursor = await conn.execute(
            "SELECT target_identity_id FROM identity.find_recovery_target(%s)", (identifier,)
        )
        [(identity_id,)] = await cursor.fetchall()
        await conn.execute(
            "SELECT identity.open_recovery_if_known("
            "%s::uuid, %s, %s, 'email', %s, 0, %s, %s, %s, 'password_recovery', '{}', 'en', %s)",
            (
                identity_id,
                challenge_id,
                identifier,
                code_hash,
                now,
                now + timedelta(minutes=10),
                message_id,
                sealed,
            ),
        )
        work = await (await conn.execute(WORK)).fetchone()
        await conn.commit()
    assert work is not None
    return tuple(work)


async def test_an_unknown_recovery_does_the_work_a_known_one_does_and_keeps_none_of_it(
    api: Api,
) -> None:
    """Both transactions write the same rows and need a WAL flush at commit; the unknown
    one's rows (and the stand-in identity they belong to) are rolled back."""
    await api.signed_up(KNOWN)
    identities = await api.rows("SELECT count(*) FROM identity.identities")

    known = await _recovery_work(api, KNOWN)
    unknown = await _recovery_work(api, UNKNOWN)

    assert (True, 0, 1, 1, 1) == known
    assert (True, 1, 1, 1, 1) == unknown  # the stand-in identity is the one extra row
    assert identities == await api.rows("SELECT count(*) FROM identity.identities")
    assert [] == await api.rows("SELECT 1 FROM outbox.messages WHERE destination = %s", UNKNOWN)
    assert [] == await api.rows("SELECT 1 FROM identity.challenges WHERE identifier = %s", UNKNOWN)
    [delivery] = await api.deliver()
    assert KNOWN == delivery.destination


async def test_an_unknown_address_whose_commit_fails_is_a_503(api: Api) -> None:
    """Nothing was lost for an unknown address, so the client is told to retry; a known
    one's failure stays hidden behind the 201 (its code is lost and logged)."""
    await api.signed_up(KNOWN)
    await api.execute(
        "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS"
        " $$BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '40001'; END$$"
    )
    await api.execute("CREATE TABLE public.commit_breaker (n integer)")
    await api.execute("GRANT INSERT ON public.commit_breaker TO PUBLIC")
    await api.execute(
        "CREATE CONSTRAINT TRIGGER breaks_the_commit AFTER INSERT ON public.commit_breaker"
        " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.refuse()"
    )
    # The lookup now also writes a row whose deferred trigger fails the COMMIT itself.
    [(definition,)] = await api.rows(
        "SELECT pg_get_functiondef('identity.find_recovery_target'::regproc)"
    )
    body = definition.index("BEGIN", definition.index("AS $function$"))
    await api.execute(
        definition[: body + len("BEGIN")]  # type: ignore[arg-type]
        + " INSERT INTO public.commit_breaker VALUES (1);"
        + definition[body + len("BEGIN") :]
    )
    before = await api.rows("SELECT count(*) FROM outbox.messages")

    unknown, _ = await _ask(api, "/password-recoveries", "identifier", UNKNOWN)
    known, _ = await _ask(api, "/password-recoveries", "identifier", KNOWN)

    assert 503 == unknown.status_code, (unknown.text, api.telemetry.events[-3:])
    assert "5" == unknown.headers["retry-after"]
    assert "urn:outbox:problem:service-unavailable" == problem_type(unknown)
    assert 201 == known.status_code
    assert before == await api.rows("SELECT count(*) FROM outbox.messages")
    assert [] == await api.rows("SELECT 1 FROM public.commit_breaker")
    [failed] = api.telemetry.named("identity.password_recovery.failed")
    assert "40001" == failed.fields["code"]
