-- The queue's SQL API (SPEC §6, docs/sql-api.md): SECURITY DEFINER functions owned by
-- outbox_owner, with a fixed search_path and schema-qualified bodies, each with its EXECUTE
-- revoked from PUBLIC and granted to exactly one role here. The database clock is the truth:
-- no function takes "now" from its caller.

SET LOCAL ROLE outbox_owner;

-- Producer contract: one message (and its envelope) in the caller's transaction.
CREATE FUNCTION outbox.enqueue_message(
    p_id uuid,
    p_purpose text,
    p_channel text,
    p_destination text,
    p_subject_id uuid,
    p_template text,
    p_params jsonb DEFAULT '{}',
    p_locale text DEFAULT 'en',
    p_sealed_secret text DEFAULT NULL,
    p_expires_at timestamptz DEFAULT NULL
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
        'invitation', 'magic_link', 'notification'
    ) THEN
        RAISE EXCEPTION 'p_purpose: unknown purpose %', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_purpose = 'notification' AND p_sealed_secret IS NOT NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a notification carries no secret'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_purpose <> 'notification' AND p_sealed_secret IS NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a % message needs a sealed secret', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_expires_at IS NOT NULL AND p_expires_at <= v_now THEN
        RAISE EXCEPTION 'p_expires_at: the message would be born expired'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO outbox.messages (
        id, purpose, channel, destination, subject_id, template, params, locale,
        available_at, expires_at, created_at
    ) VALUES (
        p_id, p_purpose, p_channel, p_destination, p_subject_id, p_template,
        COALESCE(p_params, '{}'), COALESCE(p_locale, 'en'), v_now, p_expires_at, v_now
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
    uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.enqueue_message(
    uuid, text, text, text, uuid, text, jsonb, text, text, timestamptz
) TO outbox_runtime;

-- Withdraw every live message of a subject that was consumed or revoked; fences leases.
CREATE FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_cancelled integer;
BEGIN
    IF p_reason IS NULL OR p_reason NOT IN ('challenge_consumed', 'invitation_revoked') THEN
        RAISE EXCEPTION 'p_reason: expected challenge_consumed or invitation_revoked, got %',
            p_reason USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH cancelled AS (
        UPDATE outbox.messages AS m
        SET state = 'dead_lettered',
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            dead_lettered_at = v_now,
            dead_letter_reason = p_reason
        WHERE m.subject_id = p_subject_id AND m.state IN ('pending', 'leased')
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING cancelled AS c WHERE e.message_id = c.id
    )
    SELECT pg_catalog.count(*) INTO v_cancelled FROM cancelled;
    RETURN v_cancelled;
END
$$;
REVOKE ALL ON FUNCTION outbox.cancel_by_subject(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.cancel_by_subject(uuid, text) TO outbox_runtime;

-- Lease up to p_limit due messages, pending or under an expired lease (a dead worker's);
-- expired candidates are dead-lettered instead, unsent, and not returned. Every condition
-- is re-checked on the locked row.
CREATE FUNCTION outbox.claim_messages(
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
    lease_expires_at timestamptz
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
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

    RETURN QUERY
    WITH picked AS (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
        ORDER BY m.claimable_at, m.created_at, m.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
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
        -- pick a hash join over a sequential scan of the table (8 ms a claim at 10,000
        -- pending rows, against 3 ms through the key; docs/benchmarks.md).
        WHERE m.id = ANY (ARRAY(SELECT picked.id FROM picked))
          AND m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
        RETURNING m.*
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e
        USING taken AS t
        WHERE e.message_id = t.id AND t.state = 'dead_lettered'
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale, e.sealed, t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at
    FROM taken AS t
    LEFT JOIN outbox.envelopes AS e ON e.message_id = t.id
    WHERE t.state = 'leased'
    ORDER BY t.available_at, t.created_at, t.id;
END
$$;
REVOKE ALL ON FUNCTION outbox.claim_messages(text, integer, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.claim_messages(text, integer, double precision) TO outbox_worker;

-- Record a batch of outcomes in one call (SPEC §3, §6). Each record is fenced by its lease
-- token, the lease expiry and (for counted outcomes) the attempt number; a record that fails
-- any check changes nothing and answers 'lease_lost'. Terminal outcomes delete the envelope
-- in the same statement. Each history row keeps the lease token it was recorded under.
CREATE FUNCTION outbox.record_outcomes(
    p_message_ids uuid[],
    p_lease_tokens uuid[],
    p_attempts integer[],
    p_outcomes text[],
    p_failure_classes text[],
    p_codes text[],
    p_providers text[],
    p_provider_message_ids text[],
    p_retry_at timestamptz[],
    p_attempted boolean[]
) RETURNS TABLE (message_id uuid, result text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_message_ids);
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_providers) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_provider_message_ids) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempted) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'every array needs exactly one element per record'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_retry_at)
        ) AS r (outcome, failure_class, retry_at)
        WHERE r.outcome IS NULL
           OR r.outcome NOT IN ('published', 'retry', 'release', 'dead_letter')
           OR (r.outcome = 'published') <> (r.failure_class IS NULL)
           OR (r.outcome IN ('retry', 'release')) <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'a published outcome has no failure class, every other has one; '
            'retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT r.*,
               r.outcome NOT IN ('release', 'dead_letter')
                   OR (r.outcome = 'dead_letter' AND r.attempted IS DISTINCT FROM false)
                   AS counted
        FROM ROWS FROM (
            pg_catalog.unnest(p_message_ids),
            pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts),
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_codes),
            pg_catalog.unnest(p_providers),
            pg_catalog.unnest(p_provider_message_ids),
            pg_catalog.unnest(p_retry_at),
            pg_catalog.unnest(p_attempted)
        ) WITH ORDINALITY AS r (
            message_id, lease_token, attempt, outcome, failure_class,
            code, provider, provider_message_id, retry_at, attempted, ord
        )
    ), recorded AS (
        UPDATE outbox.messages AS m
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = m.attempt_count + CASE WHEN i.counted THEN 1 ELSE 0 END,
            available_at = COALESCE(i.retry_at, m.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE m.id = i.message_id
          AND m.state = 'leased'
          AND m.lease_token = i.lease_token
          AND m.lease_expires_at > v_now
          AND (NOT i.counted OR i.attempt = m.attempt_count + 1)
        RETURNING i.ord, m.id, m.attempt_count, i.counted, i.outcome, i.failure_class, i.code,
                  i.provider, i.provider_message_id, i.retry_at, i.lease_token
    ), history AS (
        INSERT INTO outbox.attempts (
            message_id, attempt, counted, outcome, failure_class, code, provider,
            provider_message_id, recorded_at, retry_at, lease_token
        )
        SELECT r.id,
               CASE WHEN r.counted THEN r.attempt_count ELSE r.attempt_count + 1 END,
               r.counted, r.outcome, r.failure_class, COALESCE(r.code, ''),
               COALESCE(r.provider, ''), COALESCE(r.provider_message_id, ''), v_now, r.retry_at,
               r.lease_token
        FROM recorded AS r
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e
        USING recorded AS r
        WHERE e.message_id = r.id AND r.outcome IN ('published', 'dead_letter')
    )
    SELECT i.message_id, CASE WHEN r.ord IS NULL THEN 'lease_lost' ELSE 'recorded' END
    FROM input AS i
    LEFT JOIN recorded AS r ON r.ord = i.ord
    ORDER BY i.ord;
END
$$;
REVOKE ALL ON FUNCTION outbox.record_outcomes(
    uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamptz[], boolean[]
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.record_outcomes(
    uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamptz[], boolean[]
) TO outbox_worker;

-- Dead-letter up to p_limit expired messages nobody holds (SPEC §8). A row under a live lease,
-- or locked by a worker recording right now, is left to its worker. One sweep at a time:
-- while another holds the sweep's advisory lock this returns 0.
CREATE FUNCTION outbox.expire_messages(p_limit integer) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_expired integer;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('outbox.expire_messages', 0)
    ) THEN
        RETURN 0;
    END IF;
    WITH picked AS (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased')
          AND m.expires_at <= v_now
          AND (m.state = 'pending' OR m.lease_expires_at <= v_now)
        ORDER BY m.expires_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), expired AS (
        UPDATE outbox.messages AS m
        SET state = 'dead_lettered',
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            dead_lettered_at = v_now,
            dead_letter_reason = CASE m.purpose
                WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired'
            END
        FROM picked
        WHERE m.id = picked.id
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING expired AS x WHERE e.message_id = x.id
    )
    SELECT pg_catalog.count(*) INTO v_expired FROM expired;
    RETURN v_expired;
END
$$;
REVOKE ALL ON FUNCTION outbox.expire_messages(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.expire_messages(integer) TO outbox_worker;

-- Delete up to p_limit final messages past retention, with their attempt history (SPEC §8).
-- Live rows are never touched. One sweep at a time, like expire_messages.
CREATE FUNCTION outbox.purge_messages(
    p_published_retention interval,
    p_dead_lettered_retention interval,
    p_limit integer
) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_published integer;
    v_dead_lettered integer := 0;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_published_retention IS NULL OR p_dead_lettered_retention IS NULL THEN
        RAISE EXCEPTION 'both retention periods are required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('outbox.purge_messages', 0)
    ) THEN
        RETURN 0;
    END IF;
    WITH doomed AS (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state = 'published' AND m.published_at <= v_now - p_published_retention
        ORDER BY m.published_at
        LIMIT p_limit
    ), gone AS (
        DELETE FROM outbox.messages AS m USING doomed AS d WHERE m.id = d.id RETURNING m.id
    )
    SELECT pg_catalog.count(*) INTO v_published FROM gone;
    IF v_published < p_limit THEN
        WITH doomed AS (
            SELECT m.id
            FROM outbox.messages AS m
            WHERE m.state = 'dead_lettered'
              AND m.dead_lettered_at <= v_now - p_dead_lettered_retention
            ORDER BY m.dead_lettered_at
            LIMIT p_limit - v_published
        ), gone AS (
            DELETE FROM outbox.messages AS m USING doomed AS d WHERE m.id = d.id RETURNING m.id
        )
        SELECT pg_catalog.count(*) INTO v_dead_lettered FROM gone;
    END IF;
    RETURN v_published + v_dead_lettered;
END
$$;
REVOKE ALL ON FUNCTION outbox.purge_messages(interval, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.purge_messages(interval, interval, integer) TO outbox_worker;

RESET ROLE;
