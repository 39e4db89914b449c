"""Migrations from scratch give the schema the code expects; reruns and races change nothing."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from outbox.adapters.postgres.migrator import (
    Migration,
    MigrationError,
    apply_migrations,
    load_migrations,
    migration_status,
)

pytestmark = pytest.mark.integration

EXPECTED_TABLES = {
    ("outbox", "messages"),
    ("outbox", "envelopes"),
    ("outbox", "attempts"),
    ("outbox", "staff_audit"),  # 0006_operator_tables.sql
    ("outbox", "provider_pauses"),  # 0032_console.sql
    ("outbox", "provider_pause_audit"),
    ("outbox", "worker_lanes"),  # 0043_events_console.sql
    ("outbox", "claim_floor"),  # 0047_claim_floor.sql
    # Delivery receipts and suppression (0029_delivery_receipts.sql).
    ("outbox", "receipts"),
    ("outbox", "delivery_states"),
    ("outbox", "suppressions"),
    ("outbox", "suppression_audit"),
    ("outbox_meta", "migrations"),
    # The Identity module's tables (0004_identity_tables.sql).
    *(
        ("identity", name)
        for name in (
            "identities",
            "login_identifiers",
            "password_credentials",
            "challenges",
            "sessions",
            "elevations",
            "organizations",
            "memberships",
            "invitations",
            "magic_links",
            "staff_members",
            "rate_limit_counters",
            "code_budgets",  # 0010_account_security.sql
            # 0011_identifiers_and_outsider_limits.sql
            "case_duplicate_identifiers",
            "destination_paces",
        )
    ),
}
EXPECTED_FUNCTIONS = {
    (
        "outbox.enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, "
        "p_subject_id uuid, p_template text, p_params jsonb DEFAULT '{}'::jsonb, "
        "p_locale text DEFAULT 'en'::text, p_sealed_secret text DEFAULT NULL::text, "
        "p_expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, "
        "p_priority integer DEFAULT NULL::integer, "
        "p_not_before timestamp with time zone DEFAULT NULL::timestamp with time zone, "
        "p_trace_context text DEFAULT NULL::text)"
    ),
    "outbox.cancel_by_subject(p_subject_id uuid, p_reason text)",
    (
        "outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision, "
        "p_leave_urgent_seconds double precision DEFAULT 0)"
    ),
    "outbox.claim_urgent_messages(p_owner text, p_limit integer, p_lease_seconds double precision)",
    (
        "outbox.record_outcomes(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], "
        "p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], "
        "p_provider_message_ids text[], p_retry_at timestamp with time zone[], "
        "p_attempted boolean[])"
    ),
    "outbox.expire_messages(p_limit integer)",
    (
        "outbox.purge_messages(p_published_retention interval, "
        "p_dead_lettered_retention interval, p_limit integer)"
    ),
    "outbox.refuse_final_update()",
    "outbox.check_attempt_sequence()",  # 0040
    "outbox.provider_pauses(p_actor uuid)",  # 0041
    "outbox.require_read_elevation(p_actor uuid, p_elevation text)",  # 0042
    "outbox.staff_elevation(p_actor uuid, p_elevation text, p_reading boolean)",
    (
        "outbox.change_provider_pause(p_pause boolean, p_actor uuid, p_elevation uuid, "
        "p_provider text, p_reason text)"
    ),
    "outbox.pause_provider(p_actor uuid, p_provider text, p_reason text)",
    "outbox.resume_provider(p_actor uuid, p_provider text, p_reason text)",
    # The workers view and the break-glass step-up (0043_events_console.sql).
    "outbox.workers(p_actor uuid)",
    "outbox.health_work()",  # 0046
    "outbox.current_claim_floor(p_now timestamp with time zone)",  # 0047
    (  # 0049
        "outbox.lease_picked(p_ids uuid[], p_owner text, p_now timestamp with time zone,"
        " p_lease_expires_at timestamp with time zone, p_floor timestamp with time zone)"
    ),
    "outbox.refresh_claim_floor()",
    "outbox.stored_claim_floor()",  # 0052
    "outbox.staff_workers(p_actor uuid, p_elevation text)",
    (
        "outbox.worker_heartbeat(p_owner text, p_lane text, "
        "p_started_at timestamp with time zone, p_stopped boolean)"
    ),
    (
        "outbox.break_glass_step_up(p_email text, p_challenge_id uuid, p_code_hash text, "
        "p_expires_at timestamp with time zone, p_reason text)"
    ),
    # The operator surfaces (0007_operator_functions.sql).
    "outbox.mask_destination(p_value text)",
    "outbox.require_staff(p_actor uuid)",
    "outbox.require_operator(p_actor uuid)",
    "outbox.count_backlog()",
    "outbox.backlog(p_actor uuid)",
    "outbox.backlog_metrics()",
    "outbox.dead_letters(p_actor uuid, p_after uuid, p_before uuid, p_limit integer)",
    "outbox.message_detail(p_actor uuid, p_message_id uuid)",
    "outbox.message_attempts(p_actor uuid, p_message_id uuid)",
    "outbox.staff_request_replay(p_actor uuid, p_key text, p_action text, p_message_id uuid)",
    (
        "outbox.requeue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, "
        "p_idempotency_key text)"
    ),
    (
        "outbox.reissue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, "
        "p_sealed_secret text, p_code_hash text, p_idempotency_key text)"
    ),
    "outbox.staff_identity(p_email text)",
    "outbox.grant_staff(p_email text)",
    "outbox.revoke_staff(p_email text)",
    # Readiness (0008_readiness_function.sql).
    "outbox_meta.applied_migrations()",
    # Roles by job (0009_roles_by_job.sql): the elevation-checked staff functions, a trigger.
    "outbox.require_elevation(p_actor uuid, p_elevation text)",
    "outbox.staff_backlog(p_actor uuid, p_elevation text)",
    (
        "outbox.staff_dead_letters(p_actor uuid, p_elevation text, p_after uuid, p_before uuid, "
        "p_limit integer)"
    ),
    "outbox.staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid)",
    "outbox.staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid)",
    (
        "outbox.staff_requeue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, "
        "p_new_message_id uuid, p_idempotency_key text)"
    ),
    (
        "outbox.staff_reissue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, "
        "p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text)"
    ),
    "outbox.refuse_past_retry()",
    # Operator search and attempt details (0016_operator_search_and_attempt_details.sql).
    (
        "outbox.record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], "
        "p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], "
        "p_providers text[], p_provider_message_ids text[], "
        "p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[])"
    ),
    "outbox.message_history(p_message_id uuid)",
    "outbox.dead_letter_repairs(p_message_ids uuid[])",
    (
        "outbox.find_messages(p_state text, p_purpose text, p_reason text, p_provider text, "
        "p_since timestamp with time zone, p_until timestamp with time zone, "
        "p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, "
        "p_limit integer)"
    ),
    # The operator console (0032_console.sql).
    "outbox.paused_providers()",
    "outbox.staff_provider_pauses(p_actor uuid, p_elevation text)",
    "outbox.staff_pause_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text)",
    "outbox.staff_resume_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text)",
    (
        "outbox.staff_find_messages(p_actor uuid, p_elevation text, p_state text, "
        "p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, "
        "p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, "
        "p_after uuid, p_before uuid, p_limit integer)"
    ),
    "outbox.staff_activity(p_actor uuid, p_elevation text, p_minutes integer)",
    (
        "outbox.staff_requeue_dead_letter_for(p_actor uuid, p_elevation text, "
        "p_message_id uuid, p_new_message_id uuid, p_idempotency_key text, p_reason text)"
    ),
    (
        "outbox.staff_reissue_dead_letter_for(p_actor uuid, p_elevation text, "
        "p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, "
        "p_idempotency_key text, p_reason text)"
    ),
    "outbox.staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid)",
    # Delivery receipts and suppression (0029_delivery_receipts.sql, 0030_receipt_functions.sql).
    "outbox.refuse_receipt_change()",
    "outbox.suppress_at_claim()",
    "outbox.delivery_state_rank(p_state text)",
    "outbox.delivery_state_after(p_state text, p_event text)",
    (
        "outbox.record_receipt(p_provider text, p_provider_event_id text, "
        "p_provider_message_id text, p_event text, p_detail text, "
        "p_occurred_at timestamp with time zone, p_raw jsonb)"
    ),
    "outbox.message_receipts(p_actor uuid, p_message_id uuid)",
    "outbox.staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid)",
    "outbox.delivery_state_counts()",
    "outbox.list_suppressions(p_actor uuid, p_include_lifted boolean, p_limit integer)",
    (
        "outbox.add_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, "
        "p_channel text, p_reason text)"
    ),
    (
        "outbox.lift_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, "
        "p_reason text)"
    ),
    (
        "outbox.staff_suppressions(p_actor uuid, p_elevation text, p_include_lifted boolean, "
        "p_limit integer)"
    ),
    (
        "outbox.staff_add_suppression(p_actor uuid, p_elevation text, p_destination text, "
        "p_channel text, p_reason text)"
    ),
    (
        "outbox.staff_lift_suppression(p_actor uuid, p_elevation text, p_destination text, "
        "p_reason text)"
    ),
}
# Trigger functions run as whoever changes the row; every other function as its owner.
TRIGGER_FUNCTIONS = {
    "outbox.refuse_final_update()",
    "outbox.refuse_past_retry()",
    "outbox.refuse_receipt_change()",  # 0029
    "outbox.check_attempt_sequence()",  # 0040
    "outbox.suppress_at_claim()",
}
EXPECTED_INDEXES = {
    "messages_pkey",
    "messages_claim_order",
    "messages_claim_by_priority",  # 0013_priorities_and_delays.sql
    "messages_live_subject",
    "messages_live_expiry",
    "messages_published_age",
    "messages_dead_letter_age",
    "messages_created",  # 0016_operator_search_and_attempt_details.sql
    "envelopes_pkey",
    "attempts_pkey",
    "attempts_by_message",
    "staff_audit_pkey",  # 0006_operator_tables.sql
    "staff_audit_idempotency",
    "staff_audit_by_message",
    "provider_pauses_pkey",  # 0032_console.sql
    "provider_pause_audit_pkey",
    "worker_lanes_pkey",  # 0043_events_console.sql
    "claim_floor_pkey",  # 0047_claim_floor.sql
    # 0029_delivery_receipts.sql
    "attempts_by_provider_message_id",
    "receipts_pkey",
    "receipts_once",
    "receipts_by_message",
    "receipts_unmatched_age",
    "delivery_states_pkey",
    "suppressions_pkey",
    "suppressions_one_active",
    "suppressions_by_age",
    "suppression_audit_pkey",
    "suppression_audit_by_suppression",
}


async def _rows(url: str, query: str) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(query)  # type: ignore[arg-type]
        return await cursor.fetchall()


KEY_LOOKUP_TRIGGERS = {"outbox.check_attempt_sequence()"}


async def test_migrations_from_scratch_create_the_expected_schema(empty_database_url):
    applied = await apply_migrations(empty_database_url)

    assert [m.version for m in load_migrations()] == [m.version for m in applied]
    tables = await _rows(
        empty_database_url,
        "SELECT table_schema, table_name FROM information_schema.tables"
        " WHERE table_schema IN ('outbox', 'identity', 'outbox_meta')",
    )
    assert EXPECTED_TABLES == set(tables)
    functions = await _rows(
        empty_database_url,
        "SELECT p.oid::regproc::text || '(' || pg_get_function_arguments(p.oid) || ')',"
        " p.prosecdef, pg_get_userbyid(p.proowner), p.proconfig"
        " FROM pg_proc p"
        " WHERE p.pronamespace IN ('outbox'::regnamespace, 'outbox_meta'::regnamespace)",
    )
    assert EXPECTED_FUNCTIONS == {row[0] for row in functions}
    for signature, security_definer, owner, config in functions:
        assert "outbox_owner" == owner, signature
        # A per-row trigger that looks a row up by key never reads its table whole (0051).
        by_key = ["enable_seqscan=off"] if signature in KEY_LOOKUP_TRIGGERS else []
        assert ["search_path=pg_catalog, pg_temp", *by_key] == config, signature
        assert security_definer is (signature not in TRIGGER_FUNCTIONS), signature
    indexes = await _rows(
        empty_database_url, "SELECT indexname FROM pg_indexes WHERE schemaname = 'outbox'"
    )
    assert EXPECTED_INDEXES == {row[0] for row in indexes}
    owners = await _rows(
        empty_database_url,
        "SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c"
        " WHERE c.relnamespace = 'outbox'::regnamespace",
    )
    assert [("outbox_owner",)] == owners


async def test_the_claim_indexes_cover_only_live_rows(empty_database_url):
    """Live rows only, and a predicate only the statements each serves imply (0051)."""
    await apply_migrations(empty_database_url)
    rows = await _rows(
        empty_database_url,
        "SELECT indexdef FROM pg_indexes"
        " WHERE indexname IN ('messages_claim_order', 'messages_claim_by_priority')"
        " ORDER BY indexname",
    )
    assert [
        (
            (
                "CREATE INDEX messages_claim_by_priority ON outbox.messages USING btree"
                " (priority, claimable_at, created_at, id)"
                " WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text]))"
                " AND (priority IS NOT NULL))"
            ),
        ),
        (
            (
                "CREATE INDEX messages_claim_order ON outbox.messages USING btree"
                " (claimable_at, created_at, id)"
                " WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text]))"
                " AND (claimable_at IS NOT NULL))"
            ),
        ),
    ] == rows


async def test_group_roles_exist_without_login(empty_database_url):
    await apply_migrations(empty_database_url)
    roles = await _rows(
        empty_database_url,
        "SELECT rolname, rolcanlogin, rolsuper, rolbypassrls FROM pg_roles"
        " WHERE rolname IN ('outbox_owner', 'outbox_producer', 'identity_service',"
        " 'outbox_worker', 'outbox_runtime') ORDER BY 1",
    )
    assert [
        ("identity_service", False, False, False),
        ("outbox_owner", False, False, False),
        ("outbox_producer", False, False, False),
        ("outbox_runtime", False, False, False),
        ("outbox_worker", False, False, False),
    ] == roles


async def test_running_migrations_again_applies_nothing(empty_database_url):
    await apply_migrations(empty_database_url)
    assert [] == await apply_migrations(empty_database_url)
    statuses = await migration_status(empty_database_url)
    assert {"applied"} == {status.state for status in statuses}


async def test_concurrent_migrators_apply_each_file_exactly_once(empty_database_url):
    results = await asyncio.gather(*(apply_migrations(empty_database_url) for _ in range(3)))

    applied_versions = sorted(m.version for result in results for m in result)
    assert [m.version for m in load_migrations()] == applied_versions
    ledger = await _rows(
        empty_database_url, "SELECT version FROM outbox_meta.migrations ORDER BY version"
    )
    assert [(m.version,) for m in load_migrations()] == ledger


async def test_status_lists_pending_migrations_before_migrate(empty_database_url):
    statuses = await migration_status(empty_database_url)
    assert [(m.version, "pending") for m in load_migrations()] == [
        (status.version, status.state) for status in statuses
    ]


async def test_status_flags_an_applied_migration_whose_file_changed(empty_database_url):
    first = Migration(version=1, name="first", sql="CREATE TABLE public.first_table (id int)")
    await apply_migrations(empty_database_url, [first])
    edited = Migration(version=1, name="first", sql="CREATE TABLE public.other_table (id int)")

    [status] = await migration_status(empty_database_url, [edited])
    assert "changed" == status.state


async def test_a_failing_migration_leaves_nothing_behind(empty_database_url):
    good = Migration(version=1, name="good", sql="CREATE TABLE public.good_table (id int)")
    bad = Migration(version=2, name="bad", sql="CREATE TABLE public.half_done (id int); SELECT 1/0")
    with pytest.raises(Exception, match="division by zero"):
        await apply_migrations(empty_database_url, [good, bad])

    statuses = await migration_status(empty_database_url, [good, bad])
    assert ["applied", "pending"] == [status.state for status in statuses]
    leftovers = await _rows(empty_database_url, "SELECT to_regclass('public.half_done')")
    assert [(None,)] == leftovers


def test_a_misnamed_migration_file_is_refused(tmp_path):
    (tmp_path / "0001_fine.sql").write_text("SELECT 1")
    (tmp_path / "2_Bad-Name.sql").write_text("SELECT 1")
    with pytest.raises(MigrationError, match=r"2_Bad-Name\.sql"):
        load_migrations(tmp_path)
