-- What operators need to find a message and to tell what a provider said (SPEC §11):
-- - the attempt history keeps a provider's sanitised reason beside its code (an SMTP reply's
--   enhanced status code and text, with no address and no secret: the worker sanitises it,
--   the column's length check bounds it);
-- - a search over every message for the database operator (outboxctl messages list):
--   filters, a keyset page stable under inserts, a destination matched on its SHA-256 digest
--   so the address itself never travels in the query, and shown masked;
-- - what became of each dead letter (reissued or requeued as which message).
-- The reads are the database operator's only, like grant_staff in 0007: EXECUTE is granted
-- to no role, and each checks outbox.require_operator first.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.attempts ADD COLUMN detail text NOT NULL DEFAULT ''
    CONSTRAINT attempts_detail_short CHECK (pg_catalog.length(detail) <= 200);

-- The operator's list reads messages newest first.
CREATE INDEX messages_created ON outbox.messages (created_at, id);

-- Recording ----------------------------------------------------------------------------------

-- record_outcomes (0003) with one more array: each record's detail, the provider's sanitised
-- reason ('' when it gave none), cut to 200 characters.
CREATE FUNCTION outbox.record_outcomes_detailed(
    p_message_ids uuid[],
    p_lease_tokens uuid[],
    p_attempts integer[],
    p_outcomes text[],
    p_failure_classes text[],
    p_codes text[],
    p_providers text[],
    p_provider_message_ids text[],
    p_retry_at timestamptz[],
    p_attempted boolean[],
    p_details text[]
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
        OR pg_catalog.cardinality(p_details) IS DISTINCT FROM v_count
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
            pg_catalog.unnest(p_attempted),
            pg_catalog.unnest(p_details)
        ) WITH ORDINALITY AS r (
            message_id, lease_token, attempt, outcome, failure_class,
            code, provider, provider_message_id, retry_at, attempted, detail, ord
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
                  i.provider, i.provider_message_id, i.retry_at, i.lease_token, i.detail
    ), history AS (
        INSERT INTO outbox.attempts (
            message_id, attempt, counted, outcome, failure_class, code, provider,
            provider_message_id, recorded_at, retry_at, lease_token, detail
        )
        SELECT r.id,
               CASE WHEN r.counted THEN r.attempt_count ELSE r.attempt_count + 1 END,
               r.counted, r.outcome, r.failure_class, COALESCE(r.code, ''),
               COALESCE(r.provider, ''), COALESCE(r.provider_message_id, ''), v_now, r.retry_at,
               r.lease_token, pg_catalog.left(COALESCE(r.detail, ''), 200)
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

-- The ten-array form stays for workers that do not send details yet (during a rolling
-- upgrade the old workers keep recording); it records every detail as ''.
CREATE OR REPLACE FUNCTION outbox.record_outcomes(
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
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.message_id, r.result
    FROM outbox.record_outcomes_detailed(
        p_message_ids, p_lease_tokens, p_attempts, p_outcomes, p_failure_classes, p_codes,
        p_providers, p_provider_message_ids, p_retry_at, p_attempted,
        pg_catalog.array_fill(''::text, ARRAY[pg_catalog.cardinality(p_message_ids)])
    ) AS r
$$;

-- Reads (database operator only) ---------------------------------------------------------------

-- A message's attempt history, oldest first, with each attempt's detail.
CREATE FUNCTION outbox.message_history(p_message_id uuid)
RETURNS TABLE (
    attempt integer,
    counted boolean,
    outcome text,
    failure_class text,
    code text,
    detail text,
    provider text,
    provider_message_id text,
    recorded_at timestamptz,
    retry_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(NULL);
    RETURN QUERY
    SELECT a.attempt, a.counted, a.outcome, a.failure_class, a.code, a.detail, a.provider,
           a.provider_message_id, a.recorded_at, a.retry_at
    FROM outbox.attempts AS a
    WHERE a.message_id = p_message_id
    ORDER BY a.id;
END
$$;

-- The newest reissue or requeue of each of the given dead letters (none: no row).
CREATE FUNCTION outbox.dead_letter_repairs(p_message_ids uuid[])
RETURNS TABLE (message_id uuid, action text, new_message_id uuid, occurred_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(NULL);
    RETURN QUERY
    SELECT DISTINCT ON (a.message_id) a.message_id, a.action, a.new_message_id, a.occurred_at
    FROM outbox.staff_audit AS a
    WHERE a.message_id = ANY (p_message_ids) AND a.action IN ('reissue', 'requeue')
    ORDER BY a.message_id, a.id DESC;
END
$$;

-- One keyset page of messages, newest first (created-at, then id), matching every filter
-- given (NULL: any). p_reason is the dead-letter reason; p_provider matches a message any of
-- whose attempts went through that provider; p_since and p_until bound created_at (since
-- inclusive, until exclusive); p_destination_digest is the SHA-256 (hex) of the exact
-- destination. p_after: the page of older rows after that message; p_before: the page of
-- newer rows before it (still returned newest first). The cursor must name a message; rows
-- enqueued meanwhile are newer than any cursor, so paging on never repeats or skips a row.
-- provider is the last attempt's; repair_* say what became of a dead letter.
CREATE FUNCTION outbox.find_messages(
    p_state text,
    p_purpose text,
    p_reason text,
    p_provider text,
    p_since timestamptz,
    p_until timestamptz,
    p_message_id uuid,
    p_destination_digest text,
    p_after uuid,
    p_before uuid,
    p_limit integer
)
RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    state text,
    attempt_count integer,
    created_at timestamptz,
    dead_letter_reason text,
    provider text,
    repair_action text,
    repair_message_id uuid,
    repaired_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_operator(NULL);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.created_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no message has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    WITH page AS (
        SELECT m.*
        FROM outbox.messages AS m
        WHERE (p_state IS NULL OR m.state = p_state)
          AND (p_purpose IS NULL OR m.purpose = p_purpose)
          AND (p_reason IS NULL OR m.dead_letter_reason = p_reason)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at < p_until)
          AND (p_message_id IS NULL OR m.id = p_message_id)
          AND (p_destination_digest IS NULL OR pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(m.destination, 'UTF8')), 'hex'
          ) = p_destination_digest)
          AND (p_provider IS NULL OR EXISTS (
              SELECT 1 FROM outbox.attempts AS a
              WHERE a.message_id = m.id AND a.provider = p_provider
          ))
          AND (v_cursor_id IS NULL
               OR (p_before IS NULL AND (m.created_at, m.id) < (v_cursor_at, v_cursor_id))
               OR (p_before IS NOT NULL AND (m.created_at, m.id) > (v_cursor_at, v_cursor_id)))
        ORDER BY
            CASE WHEN p_before IS NULL THEN m.created_at END DESC,
            CASE WHEN p_before IS NULL THEN m.id END DESC,
            CASE WHEN p_before IS NOT NULL THEN m.created_at END,
            CASE WHEN p_before IS NOT NULL THEN m.id END
        LIMIT p_limit
    )
    SELECT p.id, p.purpose, p.channel, outbox.mask_destination(p.destination), p.state,
           p.attempt_count, p.created_at, p.dead_letter_reason,
           (
               SELECT a.provider FROM outbox.attempts AS a
               WHERE a.message_id = p.id
               ORDER BY a.id DESC
               LIMIT 1
           ),
           r.action, r.new_message_id, r.occurred_at
    FROM page AS p
    LEFT JOIN LATERAL (
        SELECT s.action, s.new_message_id, s.occurred_at
        FROM outbox.staff_audit AS s
        WHERE s.message_id = p.id AND s.action IN ('reissue', 'requeue')
        ORDER BY s.id DESC
        LIMIT 1
    ) AS r ON true
    ORDER BY p.created_at DESC, p.id DESC;
END
$$;

-- Grants -----------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    outbox.record_outcomes_detailed(
        uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamptz[],
        boolean[], text[]
    ),
    outbox.message_history(uuid),
    outbox.dead_letter_repairs(uuid[]),
    outbox.find_messages(
        text, text, text, text, timestamptz, timestamptz, uuid, text, uuid, uuid, integer
    )
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.record_outcomes_detailed(
    uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamptz[], boolean[],
    text[]
) TO outbox_worker;

RESET ROLE;
