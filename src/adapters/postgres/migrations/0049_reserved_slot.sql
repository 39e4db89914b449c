-- The reserved slot: a code never waits behind a batch already in flight (issue 30).
--
-- A worker's batches claim the highest priority first, but a code that arrives while every
-- batch is busy with notifications waits until one of them finishes (about 220 ms at the p99
-- under a 50,000-notification backlog, docs/benchmarks.md). The worker now keeps one slot
-- that claims high-priority messages only: it waits on its own channel, which only
-- high-priority enqueues notify, and claims through the priority index from the claim floor
-- (0047), so it neither wakes for notifications nor walks their rows.

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
    PERFORM pg_catalog.pg_notify('outbox_work', '');
    -- High priority (codes, links, invitations, security notices) also wakes the worker's
    -- reserved slot, which claims nothing else (0049_reserved_slot.sql).
    IF COALESCE(p_priority, CASE p_purpose WHEN 'notification' THEN 1 ELSE 2 END) = 2 THEN
        PERFORM pg_catalog.pg_notify('outbox_urgent', '');
    END IF;
    RETURN v_superseded;
END
$_$;

-- The one lease step of every claim: lease the picked messages (re-checked on the locked row:
-- still live, due, above the floor), dead-letter the expired ones instead with their
-- envelopes, and return the leased ones with their envelopes, highest priority first.
-- Granted to nobody: called by the claims.
CREATE FUNCTION outbox.lease_picked(
    p_ids uuid[],
    p_owner text,
    p_now timestamptz,
    p_lease_expires_at timestamptz,
    p_floor timestamptz
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH taken AS (
        UPDATE outbox.messages AS m
        SET state = CASE WHEN m.expires_at <= p_now THEN 'dead_lettered' ELSE 'leased' END,
            lease_owner = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_owner END,
            lease_token = CASE
                WHEN m.expires_at <= p_now THEN NULL ELSE pg_catalog.gen_random_uuid()
            END,
            lease_expires_at = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_lease_expires_at END,
            dead_lettered_at = CASE WHEN m.expires_at <= p_now THEN p_now END,
            dead_letter_reason = CASE WHEN m.expires_at <= p_now THEN
                CASE m.purpose WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired' END
            END
        -- By primary key, whatever the statistics say (docs/benchmarks.md): the re-check is
        -- a CASE, which implies no partial index's predicate, so no claim index can be read
        -- in its stead (under a held horizon an analyze that sampled no live row made every
        -- claim index look empty, and the planner walked one whole).
        WHERE m.id = ANY (p_ids)
          AND CASE WHEN m.state IN ('pending', 'leased')
                   THEN m.claimable_at <= p_now AND m.claimable_at >= p_floor
                   ELSE false END
        RETURNING m.*
    ), dropped AS (
        -- Probed by key (= ANY), never joined: the planner cannot walk the whole key index.
        DELETE FROM outbox.envelopes AS e
        WHERE e.message_id = ANY (ARRAY(SELECT t.id FROM taken AS t WHERE t.state = 'dead_lettered'))
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale,
           (SELECT e.sealed FROM outbox.envelopes AS e WHERE e.message_id = t.id),
           t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at,
           t.priority, t.trace_context
    FROM taken AS t
    WHERE t.state = 'leased'
    ORDER BY t.priority DESC, t.available_at, t.created_at, t.id;
END
$$;

REVOKE ALL ON FUNCTION outbox.lease_picked(uuid[], text, timestamptz, timestamptz, timestamptz)
    FROM PUBLIC;

-- The regular claim, its lease step now lease_picked's (the scans as in 0047).
CREATE OR REPLACE FUNCTION outbox.claim_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_ids uuid[];
    v_floor timestamptz := outbox.current_claim_floor(v_now);
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);

    -- The fair slots: one in ten, rounded up, none in a batch of one.
    SELECT COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
          AND m.claimable_at >= v_floor
        ORDER BY m.claimable_at, m.created_at, m.id
        LIMIT CASE WHEN p_limit < 2 THEN 0 ELSE (p_limit + 9) / 10 END
        FOR UPDATE SKIP LOCKED
    ) AS f;

    -- The rest by priority. SKIP LOCKED does not skip this transaction's own locks, so the
    -- fair slots already taken are left out by id.
    FOR v_level IN REVERSE 2..0 LOOP
        EXIT WHEN pg_catalog.cardinality(v_ids) >= p_limit;
        SELECT v_ids || COALESCE(pg_catalog.array_agg(l.id), '{}') INTO v_ids
        FROM (
            SELECT m.id
            FROM outbox.messages AS m
            WHERE m.state IN ('pending', 'leased')
              AND m.priority = v_level
              AND m.claimable_at <= v_now
              AND m.claimable_at >= v_floor
              AND m.id <> ALL (v_ids)
            ORDER BY m.claimable_at, m.created_at, m.id
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS l;
    END LOOP;

    -- Never more than p_limit rows, whatever the scans above returned.
    RETURN QUERY
    SELECT * FROM outbox.lease_picked(v_ids[1:p_limit], p_owner, v_now, v_lease_expires_at, v_floor);
END
$$;

-- The reserved slot's claim: up to p_limit due high-priority messages, oldest first, leased
-- to p_owner, with their envelopes. The same lease, expiry and fencing as claim_messages.
CREATE FUNCTION outbox.claim_urgent_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_floor timestamptz := outbox.current_claim_floor(v_now);
    v_ids uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT COALESCE(pg_catalog.array_agg(u.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased')
          AND m.priority = 2
          AND m.claimable_at <= v_now
          AND m.claimable_at >= v_floor
        ORDER BY m.claimable_at, m.created_at, m.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ) AS u;

    RETURN QUERY
    SELECT * FROM outbox.lease_picked(
        v_ids, p_owner, v_now, v_now + pg_catalog.make_interval(secs => p_lease_seconds), v_floor
    );
END
$$;

REVOKE ALL ON FUNCTION outbox.claim_urgent_messages(text, integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.claim_urgent_messages(text, integer, double precision)
    TO outbox_worker;

RESET ROLE;
