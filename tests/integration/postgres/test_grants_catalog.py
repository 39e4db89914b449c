"""Every grant on every function, table and schema of the outbox matches the allowlist (each
role by its job, docs/sql-api.md).

A new function without its REVOKE, or a table someone granted by hand, fails this file. When
a migration adds an object, add it here with exactly the grants its role needs. The group
roles' memberships are checked too: identity_service and the deprecated outbox_runtime get
the producer's rights by membership in outbox_producer, and nothing else.
"""

from __future__ import annotations

import pytest

from tests.events_sql import BILLING, SALES, onboard

pytestmark = pytest.mark.integration

PRODUCER = "outbox_producer"
IDENTITY = "identity_service"
WORKER = "outbox_worker"
DEPRECATED = "outbox_runtime"  # the old producer role: a member of outbox_producer, no grants
CONSUMER = "events_consumer"  # a module's role that runs its consumers is made a member
NOTIFIER = "notifications_producer"  # records notification intents (0027)
INBOX = "inbox_consumer"  # a service's inbox of the relay's stream (0025_inbox.sql)
STAFF = "staff_service"  # the admin listener: staff sessions and elevations (0037)
JOB_ROLES = (PRODUCER, IDENTITY, WORKER, DEPRECATED, CONSUMER, NOTIFIER, INBOX, STAFF)
EXECUTE_BY_PRODUCER = {(PRODUCER, "EXECUTE")}
EXECUTE_BY_IDENTITY = {(IDENTITY, "EXECUTE")}
EXECUTE_BY_WORKER = {(WORKER, "EXECUTE")}
EXECUTE_BY_CONSUMER = {(CONSUMER, "EXECUTE")}
EXECUTE_BY_NOTIFIER = {(NOTIFIER, "EXECUTE")}
EXECUTE_BY_STAFF = {(STAFF, "EXECUTE")}
# Who is a member of whom among the outbox's roles (the migrator's own login aside).
# identity_service runs module identity's consumer (0022_identity_events.sql).
# identity_service records the intents of its notifications consumer (0027).
MEMBERSHIPS = {
    (IDENTITY, PRODUCER),
    (DEPRECATED, PRODUCER),
    (IDENTITY, CONSUMER),
    (IDENTITY, NOTIFIER),
    # The admin listener signs staff in with the identity module (0037_staff_sessions.sql).
    (STAFF, IDENTITY),
}

FUNCTION_GRANTS: dict[str, set[tuple[str, str]]] = {
    "outbox.enqueue_message(uuid,text,text,text,uuid,text,jsonb,text,text,"
    "timestamp with time zone,integer,timestamp with time zone,text)": EXECUTE_BY_PRODUCER,
    # Withdrawing a subject's secrets is the identity module's alone
    # (0034_cancel_only_own_secrets.sql): a producer could silence security notices.
    "outbox.cancel_by_subject(uuid,text)": EXECUTE_BY_IDENTITY,
    "outbox.claim_messages(text,integer,double precision,double precision)": EXECUTE_BY_WORKER,
    "outbox.claim_urgent_messages(text,integer,double precision)": EXECUTE_BY_WORKER,  # 0049
    "outbox.record_outcomes(uuid[],uuid[],integer[],text[],text[],text[],text[],text[],"
    "timestamp with time zone[],boolean[])": EXECUTE_BY_WORKER,
    "outbox.expire_messages(integer)": EXECUTE_BY_WORKER,
    "outbox.purge_messages(interval,interval,integer)": EXECUTE_BY_WORKER,
    "outbox.refuse_final_update()": set(),
    # Readiness (0008_readiness_function.sql): the applied versions and checksums, for /readyz
    # of the API and (0015_worker_readiness.sql) of the worker.
    "outbox_meta.applied_migrations()": EXECUTE_BY_IDENTITY | EXECUTE_BY_WORKER,
    # Trigger functions (0009_roles_by_job.sql): a past retry time, a code changed unsent.
    "outbox.refuse_past_retry()": set(),
    "identity.refuse_unsent_code_change()": set(),
    # An event keeps an outbox record while it exists (0036_event_keeps_its_record.sql).
    "events.refuse_orphaned_event()": set(),
    # A message's attempts in sequence (0040_attempts_in_sequence.sql).
    "outbox.check_attempt_sequence()": set(),
    # The database operator's break-glass provider pauses (0041): owner-only.
    "outbox.change_provider_pause(boolean,uuid,uuid,text,text)": set(),
    # Reads accept a step-up of the last eight hours (0042_staff_reads.sql).
    "outbox.require_read_elevation(uuid,text)": set(),
    "outbox.staff_elevation(uuid,text,boolean)": set(),
    "outbox.provider_pauses(uuid)": set(),
    "outbox.pause_provider(uuid,text,text)": set(),
    "outbox.resume_provider(uuid,text,text)": set(),
    # Staff sessions and elevations are the admin listener's alone; an elevation only from a
    # consumed step-up (0037_staff_sessions.sql).
    "identity.add_staff_session(uuid,uuid,text,timestamp with time zone,"
    "timestamp with time zone)": EXECUTE_BY_STAFF,
    "identity.elevate_staff_session(uuid,uuid,uuid,uuid,text,timestamp with time zone,"
    "timestamp with time zone)": EXECUTE_BY_STAFF,
    "identity.elevate_session(uuid,uuid,uuid,uuid,text,timestamp with time zone,"
    "timestamp with time zone)": EXECUTE_BY_IDENTITY,
    "identity.grant_elevation(boolean,uuid,uuid,uuid,uuid,text,timestamp with time zone,"
    "timestamp with time zone)": set(),
}
# The Identity module (0005_identity_functions.sql): every function for the API role only.
FUNCTION_GRANTS.update(
    (signature, EXECUTE_BY_IDENTITY)
    for signature in (
        "identity.add_identity(uuid,timestamp with time zone)",
        "identity.add_organization(uuid,text,uuid,timestamp with time zone,text[])",
        "identity.add_session(uuid,uuid,text,timestamp with time zone,timestamp with time zone)",
        "identity.find_account(text)",
        "identity.find_challenge(text,uuid,text)",
        "identity.find_elevation(text)",
        "identity.find_invitation(uuid)",
        "identity.find_invitation_by_token(text)",
        "identity.find_magic_link_by_token(text)",
        "identity.find_magic_link_target(text)",
        "identity.find_membership(uuid,uuid)",
        "identity.find_organization(uuid)",
        "identity.find_recovery_target(text)",
        "identity.find_session(text)",
        "identity.find_verified_identifiers(uuid)",
        "identity.hit_rate_limit(text,timestamp with time zone,timestamp with time zone)",
        (
            "identity.open_magic_link_if_known(uuid,uuid,text,text,timestamp with time zone,"
            "timestamp with time zone,uuid,text,jsonb,text,text)"
        ),
        (
            "identity.open_recovery_if_known(uuid,uuid,text,text,text,integer,"
            "timestamp with time zone,timestamp with time zone,uuid,text,jsonb,text,text)"
        ),
        "identity.revoke_sessions(uuid,timestamp with time zone)",
        (
            "identity.save_challenge(uuid,text,uuid,text,text,text,integer,text,"
            "timestamp with time zone,timestamp with time zone,timestamp with time zone)"
        ),
        (
            "identity.save_invitation(uuid,uuid,text,text,uuid,text,timestamp with time zone,"
            "timestamp with time zone,timestamp with time zone,uuid)"
        ),
        (
            "identity.save_login_identifier(text,text,uuid,timestamp with time zone,"
            "timestamp with time zone)"
        ),
        (
            "identity.save_magic_link(uuid,uuid,text,text,timestamp with time zone,"
            "timestamp with time zone,timestamp with time zone)"
        ),
        "identity.save_membership(uuid,uuid,text[],timestamp with time zone)",
        "identity.save_password(uuid,text,timestamp with time zone)",
    )
)
# Identifiers and outsider-proof limits (0011_identifiers_and_outsider_limits.sql).
FUNCTION_GRANTS.update(
    {
        "identity.pace_destination(text,timestamp with time zone,interval,interval,interval)": (
            EXECUTE_BY_IDENTITY
        ),
        # The wait a failed sign-in set, read without counting (0035_sign_in_pace.sql).
        "identity.pace_wait(text,timestamp with time zone)": EXECUTE_BY_IDENTITY,
        "identity.enqueue_invitation_message(uuid,uuid,uuid,text,text,timestamp with time zone,"
        "timestamp with time zone,integer,integer,interval,integer,interval,uuid,text,jsonb,"
        "text,text)": EXECUTE_BY_IDENTITY,
    }
)
# The operator surfaces: the elevation-checked staff functions (0009_roles_by_job.sql) and the
# metrics counts for the API role; the functions of 0007_operator_functions.sql, which take a
# staff member's id on trust, the gates, masking, idempotency and staff membership for nobody
# (the database operator reaches them as a member of outbox_owner).
FUNCTION_GRANTS.update(
    {
        "outbox.staff_backlog(uuid,text)": EXECUTE_BY_IDENTITY,
        "outbox.staff_dead_letters(uuid,text,uuid,uuid,integer)": EXECUTE_BY_IDENTITY,
        "outbox.staff_message_detail(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "outbox.staff_message_attempts(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "outbox.staff_requeue_dead_letter(uuid,text,uuid,uuid,text)": EXECUTE_BY_IDENTITY,
        "outbox.staff_reissue_dead_letter(uuid,text,uuid,uuid,text,text,text)": (
            EXECUTE_BY_IDENTITY
        ),
        "outbox.backlog_metrics()": EXECUTE_BY_IDENTITY,
        "outbox.require_elevation(uuid,text)": set(),
        "outbox.backlog(uuid)": set(),
        "outbox.dead_letters(uuid,uuid,uuid,integer)": set(),
        "outbox.message_detail(uuid,uuid)": set(),
        "outbox.message_attempts(uuid,uuid)": set(),
        "outbox.requeue_dead_letter(uuid,uuid,uuid,text)": set(),
        "outbox.reissue_dead_letter(uuid,uuid,uuid,text,text,text)": set(),
        "outbox.mask_destination(text)": set(),
        "outbox.require_staff(uuid)": set(),
        "outbox.require_operator(uuid)": set(),
        "outbox.count_backlog()": set(),
        "outbox.staff_request_replay(uuid,text,text,uuid)": set(),
        "outbox.staff_identity(text)": set(),
        "outbox.grant_staff(text)": set(),
        "outbox.revoke_staff(text)": set(),
        # The database operator's reads (0016_operator_search_and_attempt_details.sql).
        "outbox.message_history(uuid)": set(),
        "outbox.dead_letter_repairs(uuid[])": set(),
        (
            "outbox.find_messages(text,text,text,text,timestamp with time zone,"
            "timestamp with time zone,uuid,text,uuid,uuid,integer)"
        ): set(),
        # Recording with each attempt's provider detail (0016), for the worker.
        (
            "outbox.record_outcomes_detailed(uuid[],uuid[],integer[],text[],text[],text[],"
            "text[],text[],timestamp with time zone[],boolean[],text[])"
        ): EXECUTE_BY_WORKER,
    }
)
# Account security (0010_account_security.sql): signing out one session and the wrong-code
# budget, for the API role only.
FUNCTION_GRANTS.update(
    (signature, EXECUTE_BY_IDENTITY)
    for signature in (
        "identity.revoke_session(uuid,timestamp with time zone)",
        "identity.hold_code_budget(uuid,text,date)",
        "identity.save_code_budget(uuid,text,date,integer,timestamp with time zone)",
    )
)
# The tenant events outbox (0019_events_functions.sql): the worker claims and records; the
# registration functions are the owner's, and the producer's append is granted by
# map_producer_role only: identity_service is mapped to module identity
# (0022_identity_events.sql).
FUNCTION_GRANTS.update(
    {
        (
            "events.claim_outbox_batch(text,integer,double precision,double precision)"
        ): EXECUTE_BY_WORKER,
        (
            "events.record_publication_attempt(uuid[],uuid[],integer[],text[],text[],text[],"
            "text[],timestamp with time zone[])"
        ): EXECUTE_BY_WORKER,
        (
            "events.append_domain_event(uuid,text,integer,text,text,text,jsonb,"
            "timestamp with time zone,text)"
        ): EXECUTE_BY_IDENTITY,
        "events.register_module(text)": set(),
        "events.register_event_type(text,text,text)": set(),
        "events.publish_contract_version(text,integer)": set(),
        "events.retire_event_type(text)": set(),
        "events.map_producer_role(name,text)": set(),
        "events.aggregate_lock_key(uuid,text,text)": set(),
        "events.promote_head(uuid,text,text)": set(),
        "events.promote_head_after(uuid,text,text,bigint)": set(),  # 0053
        "events.reopen_aggregate(uuid,text,text)": set(),
        # Trigger functions (0018, 0019).
        "events.refuse_final_update()": set(),
        "events.require_one_outbox_record()": set(),
        "events.validate_publication_attempt_insert()": set(),
        "events.refuse_past_retry()": set(),
    }
)
# Operating the tenant events outbox (0020_events_operator.sql): the retention sweep for the
# worker; the elevation-checked staff functions and the metrics counts for the API role; the
# reads and repairs that take a staff member's id on trust, and their internals, for nobody
# (the database operator reaches them as a member of outbox_owner).
FUNCTION_GRANTS.update(
    {
        "events.purge_events(interval,interval,integer)": EXECUTE_BY_WORKER,
        "events.backlog_metrics()": EXECUTE_BY_IDENTITY,
        "events.staff_backlog(uuid,text,integer)": EXECUTE_BY_IDENTITY,
        "events.staff_list_dead_letters(uuid,text,uuid,boolean,uuid,uuid,integer)": (
            EXECUTE_BY_IDENTITY
        ),
        "events.staff_parked_aggregates(uuid,text,uuid,uuid,uuid,integer)": EXECUTE_BY_IDENTITY,
        "events.staff_event_detail(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "events.staff_event_records(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "events.staff_event_attempts(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "events.staff_republish_dead_letter(uuid,text,uuid,uuid,text,text)": EXECUTE_BY_IDENTITY,
        "events.staff_release_dead_letter(uuid,text,uuid,text,text)": EXECUTE_BY_IDENTITY,
        "events.count_backlog()": set(),
        "events.backlog(uuid,integer)": set(),
        "events.list_dead_letters(uuid,uuid,boolean,uuid,uuid,integer)": set(),
        "events.parked_aggregates(uuid,uuid,uuid,uuid,integer)": set(),
        "events.event_detail(uuid,uuid)": set(),
        "events.event_records(uuid,uuid)": set(),
        "events.event_attempts(uuid,uuid)": set(),
        "events.operator_request_replay(uuid,text,text,uuid)": set(),
        "events.open_repair(uuid,text,uuid,text,text)": set(),
        "events.republish_dead_letter(uuid,uuid,uuid,text,text)": set(),
        "events.release_dead_letter(uuid,uuid,text,text)": set(),
    }
)
# The consumers of tenant events (0021_consumers.sql): the claim and the record for the
# consumers' group role (each checks the caller's module), the lag for the worker's metrics,
# the rest for the database operator only.
FUNCTION_GRANTS.update(
    {
        "events.refuse_final_delivery_update()": set(),
        "events.check_processing_attempt()": set(),
        "events.fan_out_publication()": set(),
        "events.calling_module()": set(),
        "events.own_consumer(text)": set(),
        "events.consumer_lock_key(uuid)": set(),
        "events.consumer_aggregate_lock_key(uuid,uuid,text,text)": set(),
        "events.register_consumer(text,text,integer,boolean)": set(),
        "events.subscribe(text,text,integer,integer)": set(),
        "events.replay_consumer(text,bigint,timestamp with time zone)": set(),
        "events.set_consumer_active(text,boolean)": set(),
        "events.consumer_dead_letters(text,bigint,integer)": set(),
        # The admin listener's gauges read it too (0046_health_for_metrics.sql).
        "events.consumer_lag()": EXECUTE_BY_WORKER | EXECUTE_BY_STAFF,
        (
            "events.claim_consumer_deliveries(text,text,integer,double precision,double precision)"
        ): EXECUTE_BY_CONSUMER,
        (
            "events.record_consumer_processing_attempt(uuid,uuid,integer,text,text,text,"
            "timestamp with time zone)"
        ): EXECUTE_BY_CONSUMER,
        # A batch's attempts in one call (0050_batched_completions.sql), for the same role.
        (
            "events.record_consumer_processing_attempts(uuid[],uuid[],integer[],text[],text[],"
            "text[],timestamp with time zone[])"
        ): EXECUTE_BY_CONSUMER,
    }
)
# The operator console (0032_console.sql, 0033_console_events.sql): every staff read and
# repair for the API role, checked against the caller's elevation; the paused providers'
# names for the worker.
FUNCTION_GRANTS.update(
    {
        # The step-up page reads them too (0045_paused_providers_before_step_up.sql).
        "outbox.paused_providers()": EXECUTE_BY_WORKER | EXECUTE_BY_STAFF,
        "outbox.staff_provider_pauses(uuid,text)": EXECUTE_BY_IDENTITY,
        "outbox.staff_pause_provider(uuid,text,text,text)": EXECUTE_BY_IDENTITY,
        "outbox.staff_resume_provider(uuid,text,text,text)": EXECUTE_BY_IDENTITY,
        (
            "outbox.staff_find_messages(uuid,text,text,text,text,text,timestamp with time zone,"
            "timestamp with time zone,uuid,text,uuid,uuid,integer)"
        ): EXECUTE_BY_IDENTITY,
        "outbox.staff_activity(uuid,text,integer)": EXECUTE_BY_IDENTITY,
        "outbox.staff_requeue_dead_letter_for(uuid,text,uuid,uuid,text,text)": (
            EXECUTE_BY_IDENTITY
        ),
        "outbox.staff_reissue_dead_letter_for(uuid,text,uuid,uuid,text,text,text,text)": (
            EXECUTE_BY_IDENTITY
        ),
        "outbox.staff_message_audit(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "events.staff_consumer_lag(uuid,text)": EXECUTE_BY_IDENTITY,
        "events.staff_event_audit(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        # The overview's chart of the tenant events (0044_console_chart_events.sql).
        "events.staff_activity(uuid,text,integer)": EXECUTE_BY_STAFF,
    }
)
# Tenant events and consumers for operators, the workers view, the break-glass step-up
# (0043_events_console.sql): the staff functions for the admin listener alone, the rest
# owner-only; every worker lane says it runs.
_AT = "timestamp with time zone"
_FILTER = f"text,uuid,text,text,{_AT},{_AT}"
FUNCTION_GRANTS.update(
    {
        f"events.filtered_events({_FILTER})": set(),
        f"events.search_events(uuid,text,{_FILTER},bigint,integer)": set(),
        f"events.bulk_targets(text,{_FILTER},{_AT})": set(),
        f"events.count_bulk(uuid,text,{_FILTER},{_AT})": set(),
        "events.cancel_record(uuid,uuid,uuid,text,text)": set(),
        f"events.bulk_repair(uuid,uuid,text,{_FILTER},{_AT},text,text,integer)": set(),
        f"events.staff_search_events(uuid,text,text,{_FILTER},bigint,integer)": (EXECUTE_BY_STAFF),
        f"events.staff_count_bulk(uuid,text,text,{_FILTER},{_AT})": EXECUTE_BY_STAFF,
        f"events.staff_bulk_repair(uuid,text,text,{_FILTER},{_AT},text,text,integer)": (
            EXECUTE_BY_STAFF
        ),
        f"events.operate_consumer(text,uuid,uuid,text,bigint,{_AT},text)": set(),
        "events.staff_consumer_dead_letters(uuid,text,text,bigint,integer)": EXECUTE_BY_STAFF,
        f"events.staff_operate_consumer(uuid,text,text,text,bigint,{_AT},text)": (EXECUTE_BY_STAFF),
        f"outbox.worker_heartbeat(text,text,{_AT},boolean)": (
            EXECUTE_BY_WORKER | EXECUTE_BY_CONSUMER
        ),
        "outbox.workers(uuid)": set(),
        "outbox.staff_workers(uuid,text)": EXECUTE_BY_STAFF,
        f"outbox.break_glass_step_up(text,uuid,text,{_AT},text)": set(),
        # The doctor's due work and relay progress for the gauges (0046_health_for_metrics.sql).
        "outbox.health_work()": EXECUTE_BY_STAFF,
        # The claim's floor (0047_claim_floor.sql): owner-only, called by the claim.
        f"outbox.current_claim_floor({_AT})": set(),
        "outbox.refresh_claim_floor()": EXECUTE_BY_WORKER,
        # The stored floor, for the gauges' readers (0052_claim_floor_steps.sql): owner-only.
        "outbox.stored_claim_floor()": set(),
        # Every claim's lease step (0049_reserved_slot.sql): owner-only, called by the claims.
        f"outbox.lease_picked(uuid[],text,{_AT},{_AT},{_AT})": set(),
    }
)
# The notifications catalogue (0028_notifications_functions.sql): every function for the role
# that records intents; the identity module's preferred locale for the API role.
FUNCTION_GRANTS.update(
    {
        "notifications.refuse_change()": set(),
        (
            "notifications.take_snapshot(uuid,text,text,uuid,text,uuid,text,text,text,text,"
            "text,jsonb)"
        ): EXECUTE_BY_NOTIFIER,
        "notifications.opt_out(uuid,text,text[])": EXECUTE_BY_NOTIFIER,
        "notifications.opt_in(uuid,text,text[])": EXECUTE_BY_NOTIFIER,
        "notifications.opt_outs(uuid)": EXECUTE_BY_NOTIFIER,
        "notifications.intent_snapshots(uuid)": EXECUTE_BY_NOTIFIER,
        "identity.preferred_locale(uuid)": EXECUTE_BY_IDENTITY,
        "identity.set_preferred_locale(uuid,text)": EXECUTE_BY_IDENTITY,
    }
)
# Delivery receipts and suppression (0029_delivery_receipts.sql, 0030_receipt_functions.sql):
# recording a receipt, the delivery-state counts and the elevation-checked staff functions for
# the API role (the webhook listener and the admin listener run in the API process); the
# database operator's functions, the state order and the triggers for nobody.
FUNCTION_GRANTS.update(
    {
        "outbox.record_receipt(text,text,text,text,text,timestamp with time zone,jsonb)": (
            EXECUTE_BY_IDENTITY
        ),
        "outbox.delivery_state_counts()": EXECUTE_BY_IDENTITY,
        "outbox.staff_message_receipts(uuid,text,uuid)": EXECUTE_BY_IDENTITY,
        "outbox.staff_suppressions(uuid,text,boolean,integer)": EXECUTE_BY_IDENTITY,
        "outbox.staff_add_suppression(uuid,text,text,text,text)": EXECUTE_BY_IDENTITY,
        "outbox.staff_lift_suppression(uuid,text,text,text)": EXECUTE_BY_IDENTITY,
        "outbox.message_receipts(uuid,uuid)": set(),
        "outbox.list_suppressions(uuid,boolean,integer)": set(),
        "outbox.add_suppression(uuid,uuid,text,text,text)": set(),
        "outbox.lift_suppression(uuid,uuid,text,text)": set(),
        "outbox.delivery_state_rank(text)": set(),
        "outbox.delivery_state_after(text,text)": set(),
        "outbox.refuse_receipt_change()": set(),
        "outbox.suppress_at_claim()": set(),
        # The owner of a suppressed identifier is told (0031_suppression_notices.sql).
        "identity.notify_suppressed_identifier(text,timestamp with time zone)": set(),
    }
)
# Tables, sequences and views; column grants count too (as table.column).
RELATION_GRANTS: dict[str, set[tuple[str, str]]] = {
    "outbox.messages": set(),
    "outbox.envelopes": set(),
    "outbox.attempts": set(),
    "outbox.attempts_id_seq": set(),
    "outbox_meta.migrations": {("outbox_owner", "SELECT")},  # read by applied_migrations()
    # The staff audit trail (0006_operator_tables.sql): written by the operator functions only.
    "outbox.staff_audit": set(),
    "outbox.staff_audit_id_seq": set(),
    # Provider pauses (0032_console.sql): written and read through the functions only.
    "outbox.provider_pauses": set(),
    "outbox.provider_pause_audit": set(),
    "outbox.provider_pause_audit_id_seq": set(),
    # The workers view (0043_events_console.sql): through its functions only.
    "outbox.worker_lanes": set(),
    "outbox.claim_floor": set(),  # 0047_claim_floor.sql
}
# The Identity module's tables (0004_identity_tables.sql): reached only through functions.
RELATION_GRANTS.update(
    (f"identity.{table}", set())
    for table in (
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
)
# The tenant events tables (0018_events_tables.sql, 0019): reached only through functions.
RELATION_GRANTS.update(
    (f"events.{relation}", set())
    for relation in (
        "modules",
        "producer_roles",
        "event_types",
        "event_type_versions",
        "domain_events",
        "domain_events_append_sequence_seq",
        "outbox_records",
        "publication_attempts",
        "publication_attempts_id_seq",
        "dead_letters",
        "domain_event_publications",
        "domain_event_publications_publication_sequence_seq",
        "head_vacancies",
        # The audit of republish and release (0020_events_operator.sql).
        "operator_audit",
        "operator_audit_id_seq",
        "consumer_audit",
        "consumer_audit_id_seq",
        # Consumers (0021_consumers.sql).
        "consumers",
        "consumer_subscriptions",
        "consumer_deliveries",
        "consumer_deliveries_delivery_sequence_seq",
        "consumer_processing_attempts",
        "consumer_processing_attempts_id_seq",
    )
)
# The notifications catalogue's tables (0027_notifications_tables.sql): functions only.
RELATION_GRANTS.update(
    (f"notifications.{table}", set())
    for table in ("categories", "intents", "snapshots", "consent_opt_outs")
)
# The inbox of a service consuming the relay's stream (0025_inbox.sql): its role alone.
FUNCTION_GRANTS.update(
    (signature, {(INBOX, "EXECUTE")})
    for signature in (
        "inbox.record_receipt(text,uuid,bigint)",
        "inbox.record_dead_letter(text,uuid,text,jsonb,bytea,integer,text)",
        "inbox.list_received(text,integer)",
        "inbox.list_dead_letters(text,integer)",
        "inbox.request_replay(text,uuid)",
        "inbox.take_replay(text)",
    )
)
RELATION_GRANTS.update(
    (f"inbox.{table}", set()) for table in ("received", "dead_letters", "consumers")
)
# A consumer name is its first login's (0039_inbox_consumers_by_login.sql): the checked
# functions above call these, which nobody may call directly.
FUNCTION_GRANTS.update(
    (signature, set())
    for signature in (
        "inbox.own_consumer(text)",
        "inbox.record_receipt_unchecked(text,uuid,bigint)",
        "inbox.record_dead_letter_unchecked(text,uuid,text,jsonb,bytea,integer,text)",
        "inbox.list_received_unchecked(text,integer)",
        "inbox.list_dead_letters_unchecked(text,integer)",
        "inbox.request_replay_unchecked(text,uuid)",
        "inbox.take_replay_unchecked(text)",
    )
)
# Receipts and suppressions (0029_delivery_receipts.sql): reached only through functions.
RELATION_GRANTS.update(
    (f"outbox.{relation}", set())
    for relation in (
        "receipts",
        "receipts_id_seq",
        "delivery_states",
        "suppressions",
        "suppression_audit",
        "suppression_audit_id_seq",
    )
)
SCHEMA_GRANTS: dict[str, set[tuple[str, str]]] = {
    "outbox": {(PRODUCER, "USAGE"), (WORKER, "USAGE")},
    "identity": {(IDENTITY, "USAGE")},
    # The ledger's schema: the owner role reads the ledger for applied_migrations(), which the
    # API role and the worker call (0008_readiness_function.sql, 0015_worker_readiness.sql).
    "outbox_meta": {("outbox_owner", "USAGE"), (IDENTITY, "USAGE"), (WORKER, "USAGE")},
    # The worker's and the API's (the staff functions and metrics counts of 0020); a producer
    # role gets USAGE when map_producer_role maps it (identity_service is one, 0022); the
    # consumers' group role (0021).
    "events": {(WORKER, "USAGE"), (IDENTITY, "USAGE"), (CONSUMER, "USAGE")},
    "notifications": {(NOTIFIER, "USAGE")},
    "inbox": {(INBOX, "USAGE")},
}
SCHEMAS = tuple(SCHEMA_GRANTS)

# Every privilege other than the owner's own, with PUBLIC spelled out; a NULL ACL means the
# built-in default (which, for functions, is EXECUTE for PUBLIC).
FUNCTIONS = """
SELECT p.oid::regprocedure::text,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
LEFT JOIN LATERAL aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) AS a
    ON a.grantee <> p.proowner
WHERE n.nspname = ANY(%(schemas)s)
"""
RELATIONS = """
SELECT format('%%I.%%I', n.nspname, c.relname),
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN LATERAL aclexplode(COALESCE(
    c.relacl, acldefault((CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END)::"char", c.relowner)
)) AS a ON a.grantee <> c.relowner
WHERE n.nspname = ANY(%(schemas)s) AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
UNION ALL
SELECT format('%%I.%%I.%%I', n.nspname, c.relname, att.attname),
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type
FROM pg_attribute AS att
JOIN pg_class AS c ON c.oid = att.attrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
JOIN LATERAL aclexplode(att.attacl) AS a ON a.grantee <> c.relowner
WHERE n.nspname = ANY(%(schemas)s) AND att.attacl IS NOT NULL
"""
NAMESPACES = """
SELECT n.nspname,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END,
       a.privilege_type
FROM pg_namespace AS n
LEFT JOIN LATERAL aclexplode(COALESCE(n.nspacl, acldefault('n', n.nspowner))) AS a
    ON a.grantee <> n.nspowner
WHERE n.nspname = ANY(%(schemas)s)
"""
EFFECTIVE_FUNCTIONS = """
SELECT p.oid::regprocedure::text, r.role
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
CROSS JOIN unnest(%(roles)s::text[]) AS r (role)
WHERE n.nspname = ANY(%(schemas)s) AND has_function_privilege(r.role, p.oid, 'EXECUTE')
"""
EFFECTIVE_TABLES = """
SELECT format('%%I.%%I', n.nspname, c.relname), r.role, privilege
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
CROSS JOIN unnest(%(roles)s::text[]) AS r (role)
CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES',
                        'TRIGGER']) AS privilege
WHERE n.nspname = ANY(%(schemas)s) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND (has_table_privilege(r.role, c.oid, privilege)
       OR has_any_column_privilege(r.role, c.oid, CASE privilege
              WHEN 'SELECT' THEN 'SELECT' WHEN 'INSERT' THEN 'INSERT'
              WHEN 'UPDATE' THEN 'UPDATE' ELSE 'REFERENCES' END))
"""
MEMBERS = """
SELECT member.rolname, group_role.rolname
FROM pg_auth_members AS m
JOIN pg_roles AS member ON member.oid = m.member
JOIN pg_roles AS group_role ON group_role.oid = m.roleid
-- What the job roles are members of. Who is granted a job role is the deployment's choice
-- (a login, a module's role mapped in events.producer_roles, a test's or a benchmark's role:
-- the cluster is shared), not a migration's.
WHERE member.rolname = ANY(%(roles)s)
"""
EFFECTIVE_ROLES = ["public", *JOB_ROLES]


async def _grants(conn, query: str) -> dict[str, set[tuple[str, str]]]:
    cursor = await conn.execute(query, {"schemas": list(SCHEMAS)})
    grants: dict[str, set[tuple[str, str]]] = {}
    for name, grantee, privilege in await cursor.fetchall():
        grants.setdefault(name, set())
        if grantee is not None:
            grants[name].add((grantee, privilege))
    return grants


async def test_function_grants_match_the_allowlist(connect_as):
    async with connect_as() as conn:
        assert FUNCTION_GRANTS == await _grants(conn, FUNCTIONS)


async def test_table_and_sequence_grants_match_the_allowlist(connect_as):
    async with connect_as() as conn:
        assert RELATION_GRANTS == await _grants(conn, RELATIONS)


async def test_schema_grants_match_the_allowlist(connect_as):
    async with connect_as() as conn:
        assert SCHEMA_GRANTS == await _grants(conn, NAMESPACES)


async def test_effective_execute_rights_match_the_allowlist(connect_as):
    """The same through has_function_privilege, so inherited and PUBLIC rights count too: the
    members of outbox_producer may enqueue and cancel, and the deprecated outbox_runtime may
    do nothing more."""
    direct = {
        (name, grantee)
        for name, grants in FUNCTION_GRANTS.items()
        for grantee, _ in grants
        if grantee in JOB_ROLES
    }
    inherited: set[tuple[str, str]] = set()
    granted = direct
    while granted:  # memberships nest: staff_service > identity_service > outbox_producer
        granted = {
            (name, member)
            for name, grantee in granted
            for member, group in MEMBERSHIPS
            if grantee == group
        } - inherited
        inherited |= granted
    async with connect_as() as conn:
        cursor = await conn.execute(
            EFFECTIVE_FUNCTIONS, {"schemas": list(SCHEMAS), "roles": EFFECTIVE_ROLES}
        )
        assert direct | inherited == set(await cursor.fetchall())


async def test_the_job_roles_are_members_of_the_producer_role_only(connect_as):
    async with connect_as() as conn:
        cursor = await conn.execute(MEMBERS, {"roles": [*JOB_ROLES, "outbox_owner"]})
        memberships = set(await cursor.fetchall())
    # Job roles are members of these and nothing else (who is granted them is not checked).
    assert MEMBERSHIPS == {(m, g) for m, g in memberships if m in JOB_ROLES or g in JOB_ROLES}


async def test_no_role_but_the_owner_can_touch_any_table(connect_as):
    async with connect_as() as conn:
        cursor = await conn.execute(
            EFFECTIVE_TABLES, {"schemas": list(SCHEMAS), "roles": EFFECTIVE_ROLES}
        )
        assert [] == await cursor.fetchall()


async def test_a_function_created_without_its_revoke_breaks_the_allowlist(connect_as):
    """The check itself can fail: a function left with PUBLIC's default EXECUTE shows up."""
    async with connect_as() as conn:
        await conn.execute("CREATE FUNCTION outbox.leaky() RETURNS int LANGUAGE sql AS 'SELECT 1'")
        grants = await _grants(conn, FUNCTIONS)
    assert {("PUBLIC", "EXECUTE")} == grants.pop("outbox.leaky()")
    assert FUNCTION_GRANTS == grants


async def test_a_table_granted_by_hand_breaks_the_allowlist(connect_as):
    async with connect_as() as conn:
        await conn.execute("GRANT SELECT (sealed) ON outbox.envelopes TO outbox_producer")
        grants = await _grants(conn, RELATIONS)
    assert {(PRODUCER, "SELECT")} == grants.pop("outbox.envelopes.sealed")


async def test_functions_the_owner_creates_start_without_public_execute(connect_as):
    """Default privileges revoke PUBLIC's EXECUTE, a second line behind each REVOKE."""
    async with connect_as("outbox_owner") as conn:
        await conn.execute("CREATE FUNCTION outbox.fresh() RETURNS int LANGUAGE sql AS 'SELECT 1'")
        grants = await _grants(conn, FUNCTIONS)
    assert set() == grants["outbox.fresh()"]


async def test_a_mapped_producer_role_may_append_and_nothing_else(connect_as):
    """map_producer_role grants the role USAGE on events and EXECUTE on the append only."""
    async with connect_as() as conn:
        await onboard(conn)
        functions = await _grants(conn, FUNCTIONS)
        schemas = await _grants(conn, NAMESPACES)
        cursor = await conn.execute(
            EFFECTIVE_FUNCTIONS, {"schemas": list(SCHEMAS), "roles": [SALES]}
        )
        effective = {name for name, _ in await cursor.fetchall()}
        cursor = await conn.execute(EFFECTIVE_TABLES, {"schemas": list(SCHEMAS), "roles": [SALES]})
        tables = await cursor.fetchall()
    append = (
        "events.append_domain_event(uuid,text,integer,text,text,text,jsonb,"
        "timestamp with time zone,text)"
    )
    assert {(IDENTITY, "EXECUTE"), (SALES, "EXECUTE"), (BILLING, "EXECUTE")} == functions[append]
    assert {append} == effective
    assert {
        (WORKER, "USAGE"),
        (IDENTITY, "USAGE"),
        (CONSUMER, "USAGE"),
        (SALES, "USAGE"),
        (BILLING, "USAGE"),
    } == schemas["events"]
    assert [] == tables
