-- A high-priority enqueue wakes the reserved slot and nothing else.
--
-- enqueue_message notified `outbox_work` for every message and `outbox_urgent` besides for
-- high priority (0049). Every idle batch of the security lane therefore woke for each code
-- and claimed too. Beside its slot that raced the slot for the code; with the slot in a
-- process of its own (`--lane-processes`), whose batches leave a fresh code to it (0064),
-- each code woke the batches for claims that found nothing: at 500 codes a second beside a
-- saturated events lane, a thousand empty claims a second on the same two cores, and the
-- codes' p99 went from 37.5 to 54 ms (docs/benchmarks.md).
--
-- A high-priority message now notifies `outbox_urgent` only. The slot (beside the batches
-- or apart) claims it; the batches still take high priority first in every claim they make
-- (and, past OUTBOX_WORKER_SLOT_GRACE_SECONDS, one their slot elsewhere left), and poll every
-- OUTBOX_WORKER_POLL_SECONDS, so a burst of codes larger than the slot's batch is shared as
-- before once the batches are awake.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION outbox.enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, p_subject_id uuid, p_template text, p_params jsonb DEFAULT '{}'::jsonb, p_locale text DEFAULT 'en'::text, p_sealed_secret text DEFAULT NULL::text, p_expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_priority integer DEFAULT NULL::integer, p_not_before timestamp with time zone DEFAULT NULL::timestamp with time zone, p_trace_context text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_superseded integer := 0;
BEGIN
    IF p_purpose IS NULL OR p_purpose NOT IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
        'invitation', 'magic_link', 'notification', 'security_notice'
    ) THEN
        RAISE EXCEPTION 'p_purpose: unknown purpose %', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Notifications and security notices (0010_account_security.sql) carry no secret.
    IF p_purpose IN ('notification', 'security_notice') AND p_sealed_secret IS NOT NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a % message carries no secret', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_purpose NOT IN ('notification', 'security_notice') AND p_sealed_secret IS NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a % message needs a sealed secret', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_expires_at IS NOT NULL AND p_expires_at <= v_now THEN
        RAISE EXCEPTION 'p_expires_at: the message would be born expired'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_priority IS NOT NULL AND p_priority NOT BETWEEN 0 AND 2 THEN
        RAISE EXCEPTION 'p_priority: expected 0 (low), 1 (normal) or 2 (high), got %', p_priority
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.isfinite(p_not_before) THEN
        RAISE EXCEPTION 'p_not_before: expected a finite time, got %', p_not_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_trace_context !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        RAISE EXCEPTION 'p_trace_context: expected a W3C traceparent (00-<trace id>-<span id>-<flags>)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_not_before >= p_expires_at THEN
        RAISE EXCEPTION 'p_not_before: the message would expire before it may be sent'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A past not_before means now: it never moves a message ahead of the queue.
    INSERT INTO outbox.messages (
        id, purpose, channel, destination, subject_id, template, params, locale,
        available_at, expires_at, created_at, priority, trace_context
    ) VALUES (
        p_id, p_purpose, p_channel, p_destination, p_subject_id, p_template,
        COALESCE(p_params, '{}'), COALESCE(p_locale, 'en'),
        GREATEST(v_now, p_not_before), p_expires_at, v_now,
        COALESCE(p_priority, CASE p_purpose WHEN 'notification' THEN 1 ELSE 2 END),
        p_trace_context
    );
    IF p_sealed_secret IS NOT NULL THEN
        INSERT INTO outbox.envelopes (message_id, sealed) VALUES (p_id, p_sealed_secret);
    END IF;

    -- OB7: a newer message of a supersedable purpose withdraws every older live one of its
    -- subject. The UPDATE re-checks the state on the locked row, so a worker that records
    -- first wins and a worker that records later finds its lease gone (OX-S8).
    IF p_subject_id IS NOT NULL AND p_purpose IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up', 'magic_link'
    ) THEN
        WITH superseded AS (
            UPDATE outbox.messages AS m
            SET state = 'dead_lettered',
                lease_owner = NULL,
                lease_token = NULL,
                lease_expires_at = NULL,
                dead_lettered_at = v_now,
                dead_letter_reason = 'superseded_by_resend'
            WHERE m.subject_id = p_subject_id
              AND m.purpose = p_purpose
              AND m.state IN ('pending', 'leased')
              AND m.id <> p_id
            RETURNING m.id
        ), dropped AS (
            -- Probed by key (= ANY), never joined (0049): see outbox.lease_picked.
            DELETE FROM outbox.envelopes AS e
            WHERE e.message_id = ANY (ARRAY(SELECT s.id FROM superseded AS s))
        )
        SELECT pg_catalog.count(*) INTO v_superseded FROM superseded;
    END IF;

    -- A payload-free wake-up hint; identical notifications fold into one per transaction.
    -- High priority (codes, links, invitations, security notices) wakes the worker's
    -- reserved slot (0049_reserved_slot.sql) and only it (0065): the lane's batches still
    -- take such a message in any claim they make, and poll.
    IF COALESCE(p_priority, CASE p_purpose WHEN 'notification' THEN 1 ELSE 2 END) = 2 THEN
        PERFORM pg_catalog.pg_notify('outbox_urgent', '');
    ELSE
        PERFORM pg_catalog.pg_notify('outbox_work', '');
    END IF;
    RETURN v_superseded;
END
$_$;

RESET ROLE;
