-- Traces (docs/observability.md, "Traces"): a message keeps the W3C trace context of the
-- request that enqueued it, so the worker's claim, send and record spans join the producer's
-- trace. enqueue_message takes it (p_trace_context, a traceparent; NULL: untraced) and the
-- claim returns it. It is never a secret: a trace id, a span id and the sampling flags.
--
-- Both functions change their signature again, so each is dropped and created again with
-- 0013's body plus the new column, and its EXECUTE grants are copied as 0013 copied them.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.messages
    ADD COLUMN trace_context text
        CONSTRAINT messages_trace_context_shape
            CHECK (trace_context ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');

SELECT pg_catalog.set_config(
    'outbox_migration.enqueue_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'outbox.enqueue_message(uuid, text, text, text, uuid, text, jsonb, text, text, '
              'timestamptz, integer, timestamptz)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';
SELECT pg_catalog.set_config(
    'outbox_migration.claim_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'outbox.claim_messages(text, integer, double precision)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';

DROP FUNCTION outbox.enqueue_message(
    uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz, integer, timestamptz
);
DROP FUNCTION outbox.claim_messages(text, integer, double precision);

-- Producer contract: as in 0013, plus p_trace_context (the producer's W3C traceparent, or
-- NULL). A malformed one is refused, naming the parameter, like every other bad argument.
CREATE OR REPLACE FUNCTION outbox.enqueue_message(
    p_id uuid,
    p_purpose text,
    p_channel text,
    p_destination text,
    p_subject_id uuid,
    p_template text,
    p_params jsonb DEFAULT '{}',
    p_locale text DEFAULT 'en',
    p_sealed_secret text DEFAULT NULL,
    p_expires_at timestamptz DEFAULT NULL,
    p_priority integer DEFAULT NULL,
    p_not_before timestamptz DEFAULT NULL,
    p_trace_context text DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
            DELETE FROM outbox.envelopes AS e USING superseded AS s WHERE e.message_id = s.id
        )
        SELECT pg_catalog.count(*) INTO v_superseded FROM superseded;
    END IF;

    -- A payload-free wake-up hint; identical notifications fold into one per transaction.
    PERFORM pg_catalog.pg_notify('outbox_work', '');
    RETURN v_superseded;
END
$$;
REVOKE ALL ON FUNCTION outbox.enqueue_message(
    uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz, integer, timestamptz, text
) FROM PUBLIC;

-- The claim of 0013, returning each message's trace context as well.
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
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
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
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);

    -- The fair slots: one in ten, rounded up, none in a batch of one.
    SELECT COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
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
              AND m.id <> ALL (v_ids)
            ORDER BY m.claimable_at, m.created_at, m.id
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS l;
    END LOOP;

    RETURN QUERY
    WITH picked AS (
        -- Never more than p_limit rows, whatever the scans above returned.
        SELECT p.id FROM pg_catalog.unnest(v_ids) AS p (id) LIMIT p_limit
    ), taken AS (
        UPDATE outbox.messages AS m
        SET state = CASE WHEN m.expires_at <= v_now THEN 'dead_lettered' ELSE 'leased' END,
            lease_owner = CASE WHEN m.expires_at <= v_now THEN NULL ELSE p_owner END,
            lease_token = CASE
                WHEN m.expires_at <= v_now THEN NULL ELSE pg_catalog.gen_random_uuid()
            END,
            lease_expires_at = CASE WHEN m.expires_at <= v_now THEN NULL ELSE v_lease_expires_at END,
            dead_lettered_at = CASE WHEN m.expires_at <= v_now THEN v_now END,
            dead_letter_reason = CASE WHEN m.expires_at <= v_now THEN
                CASE m.purpose WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired' END
            END
        -- By primary key, whatever the statistics say: a join on the CTE let the planner
        -- pick a hash join over a sequential scan of the table (docs/benchmarks.md).
        WHERE m.id = ANY (ARRAY(SELECT picked.id FROM picked))
          AND m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
        RETURNING m.*
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e
        USING taken AS t
        WHERE e.message_id = t.id AND t.state = 'dead_lettered'
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale, e.sealed, t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at,
           t.priority, t.trace_context
    FROM taken AS t
    LEFT JOIN outbox.envelopes AS e ON e.message_id = t.id
    WHERE t.state = 'leased'
    ORDER BY t.priority DESC, t.available_at, t.created_at, t.id;
END
$$;
REVOKE ALL ON FUNCTION outbox.claim_messages(text, integer, double precision) FROM PUBLIC;

-- The copied grants.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY pg_catalog.string_to_array(
        pg_catalog.current_setting('outbox_migration.enqueue_grantees'), ','
    ) LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION outbox.enqueue_message(uuid, text, text, text, uuid, '
            'text, jsonb, text, text, timestamptz, integer, timestamptz, text) TO %s', v_role
        );
    END LOOP;
    FOREACH v_role IN ARRAY pg_catalog.string_to_array(
        pg_catalog.current_setting('outbox_migration.claim_grantees'), ','
    ) LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION outbox.claim_messages(text, integer, double precision) '
            'TO %s', v_role
        );
    END LOOP;
END
$$;

RESET ROLE;
