-- The attempt history names the lease each outcome was recorded under (SPEC §13): with it, an
-- audit can compare every recorded result with the leases workers held and prove that none was
-- recorded under a stale token. Rows recorded before this migration keep a NULL token.
--
-- record_outcomes is replaced with the same signature, so its owner and its grants (EXECUTE for
-- outbox_worker only, 0003) are kept. Its body is 0003's with the token added to the history
-- insert: a change to the function belongs here from now on, not in 0003.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.attempts ADD COLUMN lease_token uuid;

-- Record a batch of outcomes in one call (OX-W3, OX-S6). Each record is fenced by its lease
-- token, the lease expiry and (for counted outcomes) the attempt number; a record that fails
-- any check changes nothing and answers 'lease_lost'. Terminal outcomes delete the envelope
-- in the same statement.
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

RESET ROLE;
