-- A batch of consumer deliveries completes in one statement (issue 30, docs/consumers.md).
--
-- A consumer process used to give each delivery a transaction of its own, so it was bound by
-- one commit per delivery. It now handles a batch in one transaction, a savepoint per
-- delivery, and records every attempt of the batch in one call before the commit:
-- events.record_consumer_processing_attempts takes one element per delivery in each array and
-- answers one result per delivery, in the order given. Each element is fenced exactly as the
-- single record was (lease token, live lease, attempt number): an element failing its fence
-- answers 'lease_lost' and changes nothing, the others are recorded. The caller must then
-- not commit, since the lost delivery's effect is in the same transaction.
--
-- The rules live here once: record_consumer_processing_attempt (0021) is now this function
-- called with one element, with the same arguments, answers and grant.
--
-- Refusals are the single record's and refuse the whole call: an unmapped role or another
-- module's consumer (42501), a paused consumer (OXE04), an element that breaks an argument
-- rule (22023, naming the array). Locks are taken in one order, the fan-out's: the
-- consumers' advisory locks shared (by consumer id), the ordered consumers' aggregate locks
-- (by key), then the delivery rows (by id), so batches, single records and fan-outs never
-- wait on one another in a cycle.

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION events.record_consumer_processing_attempts(
    p_delivery_ids uuid[],
    p_lease_tokens uuid[],
    p_attempts integer[],
    p_outcomes text[],
    p_error_classes text[],
    p_codes text[],
    p_retry_at timestamptz[]
) RETURNS TABLE (result text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_module text := events.calling_module();
    v_count integer := pg_catalog.cardinality(p_delivery_ids);
    v_refused record;
    v_consumer_id uuid;
    v_key bigint;
    v_ok bigint[];
    v_outcomes text[];  -- per element: what is recorded (a retry at the cap dead-letters), or
                        -- NULL when its fence failed
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_error_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'p_delivery_ids: every array needs exactly one element per delivery'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_outcomes) AS o (outcome)
        WHERE o.outcome IS NULL OR o.outcome NOT IN ('completed', 'retry', 'dead_letter')
    ) THEN
        RAISE EXCEPTION 'p_outcomes: expected completed, retry or dead_letter'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (pg_catalog.unnest(p_outcomes), pg_catalog.unnest(p_retry_at))
            AS r (outcome, retry_at)
        WHERE (r.outcome = 'retry') <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'p_retry_at: a retry names its time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(p_retry_at) AS r (at) WHERE r.at <= v_now) THEN
        RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_error_classes) AS e (error_class)
        WHERE e.error_class !~ '^[A-Za-z_][A-Za-z0-9_.]{0,99}$'
    ) THEN
        RAISE EXCEPTION 'p_error_classes: expected class names'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_codes) AS c (code)
        WHERE pg_catalog.length(COALESCE(c.code, '')) > 100
    ) THEN
        RAISE EXCEPTION 'p_codes: at most 100 characters each'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- A delivery not found was purged with its event, or never there: it answers lease_lost.
    -- Every one found must be the caller's module's, of an active consumer.
    SELECT c.code, c.owner_module_code INTO v_refused
    FROM events.consumer_deliveries AS d
    JOIN events.consumers AS c ON c.id = d.consumer_id
    WHERE d.id = ANY (p_delivery_ids) AND c.owner_module_code <> v_module
    ORDER BY c.code
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'consumer % is module %''s, not %''s', v_refused.code,
            v_refused.owner_module_code, v_module
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT c.code INTO v_refused
    FROM events.consumer_deliveries AS d
    JOIN events.consumers AS c ON c.id = d.consumer_id
    WHERE d.id = ANY (p_delivery_ids) AND NOT c.active
    ORDER BY c.code
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'consumer % is paused', v_refused.code USING ERRCODE = 'OXE04';
    END IF;

    FOR v_consumer_id IN
        SELECT DISTINCT d.consumer_id
        FROM events.consumer_deliveries AS d
        WHERE d.id = ANY (p_delivery_ids)
        ORDER BY d.consumer_id
    LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer_id));
    END LOOP;
    FOR v_key IN
        SELECT DISTINCT events.consumer_aggregate_lock_key(
                   d.consumer_id, d.organization_id, d.aggregate_type, d.aggregate_id
               ) AS lock_key
        FROM events.consumer_deliveries AS d
        JOIN events.consumers AS c ON c.id = d.consumer_id
        WHERE d.id = ANY (p_delivery_ids) AND c.ordered
        ORDER BY lock_key
    LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock(v_key);
    END LOOP;

    -- The elements whose fence holds, their deliveries locked; a delivery named twice counts
    -- once (the first).
    SELECT COALESCE(pg_catalog.array_agg(i.ord), '{}') INTO v_ok
    FROM (
        SELECT DISTINCT ON (u.delivery_id) u.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts)
        ) WITH ORDINALITY AS u (delivery_id, lease_token, attempt, ord)
        ORDER BY u.delivery_id, u.ord
    ) AS i
    JOIN LATERAL (
        SELECT d.id FROM events.consumer_deliveries AS d
        WHERE d.id = i.delivery_id AND d.state = 'leased' AND d.lease_token = i.lease_token
          AND d.lease_expires_at > v_now AND i.attempt = d.attempt_count + 1
        FOR UPDATE
    ) AS locked ON true;

    SELECT pg_catalog.array_agg(
               CASE
                   WHEN NOT (i.ord = ANY (v_ok)) THEN NULL
                   WHEN i.outcome = 'retry' AND i.attempt >= c.max_attempts THEN 'dead_letter'
                   ELSE i.outcome
               END
               ORDER BY i.ord
           )
    INTO v_outcomes
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_attempts),
        pg_catalog.unnest(p_outcomes)
    ) WITH ORDINALITY AS i (delivery_id, attempt, outcome, ord)
    LEFT JOIN events.consumer_deliveries AS d ON d.id = i.delivery_id
    LEFT JOIN events.consumers AS c ON c.id = d.consumer_id;

    -- The history first, while each delivery is still under its lease (the sequence trigger
    -- checks it against the delivery), then the deliveries.
    INSERT INTO events.consumer_processing_attempts (
        delivery_id, attempt, outcome, error_class, code, recorded_at, retry_at, lease_token
    )
    SELECT i.delivery_id, i.attempt, i.recorded, i.error_class, COALESCE(i.code, ''), v_now,
           CASE WHEN i.recorded = 'retry' THEN i.retry_at END, i.lease_token
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_lease_tokens),
        pg_catalog.unnest(p_attempts), pg_catalog.unnest(v_outcomes),
        pg_catalog.unnest(p_error_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_retry_at)
    ) WITH ORDINALITY AS i (
        delivery_id, lease_token, attempt, recorded, error_class, code, retry_at, ord
    )
    WHERE i.recorded IS NOT NULL
    ORDER BY i.ord;

    UPDATE events.consumer_deliveries AS d
    SET state = CASE i.recorded
            WHEN 'completed' THEN 'completed' WHEN 'retry' THEN 'pending' ELSE 'dead_lettered'
        END,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        attempt_count = i.attempt,
        available_at = CASE WHEN i.recorded = 'retry' THEN i.retry_at ELSE d.available_at END,
        completed_at = CASE WHEN i.recorded = 'completed' THEN v_now END,
        dead_lettered_at = CASE WHEN i.recorded = 'dead_letter' THEN v_now END,
        dead_letter_reason = CASE
            WHEN i.recorded = 'dead_letter' AND i.asked = 'retry' THEN 'attempts_exhausted'
            WHEN i.recorded = 'dead_letter' THEN 'rejected'
        END,
        dead_letter_code = CASE
            WHEN i.recorded = 'dead_letter' THEN COALESCE(NULLIF(i.code, ''), i.error_class, '')
            ELSE ''
        END
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_attempts),
        pg_catalog.unnest(p_outcomes), pg_catalog.unnest(v_outcomes),
        pg_catalog.unnest(p_error_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_retry_at)
    ) AS i (delivery_id, attempt, asked, recorded, error_class, code, retry_at)
    WHERE d.id = i.delivery_id AND i.recorded IS NOT NULL;

    -- An ordered consumer's delivery that ended hands its aggregate on: the next delivery
    -- of that aggregate becomes pending.
    UPDATE events.consumer_deliveries AS d
    SET state = 'pending', available_at = v_now
    FROM (
        SELECT (
            SELECT n.id FROM events.consumer_deliveries AS n
            WHERE n.consumer_id = e.consumer_id
              AND n.organization_id = e.organization_id
              AND n.aggregate_type = e.aggregate_type
              AND n.aggregate_id = e.aggregate_id
              AND n.state IN ('waiting', 'pending', 'leased')
            ORDER BY n.delivery_sequence
            LIMIT 1
        ) AS id
        FROM ROWS FROM (pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(v_outcomes))
            AS o (delivery_id, recorded)
        JOIN events.consumer_deliveries AS e ON e.id = o.delivery_id
        JOIN events.consumers AS c ON c.id = e.consumer_id
        WHERE c.ordered AND o.recorded IN ('completed', 'dead_letter')
    ) AS following
    WHERE d.id = following.id AND d.state = 'waiting';

    RETURN QUERY
    SELECT CASE WHEN o.recorded IS NULL THEN 'lease_lost' ELSE 'recorded' END
    FROM pg_catalog.unnest(v_outcomes) WITH ORDINALITY AS o (recorded, ord)
    ORDER BY o.ord;
END
$$;
REVOKE ALL ON FUNCTION events.record_consumer_processing_attempts(
    uuid[], uuid[], integer[], text[], text[], text[], timestamptz[]
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION events.record_consumer_processing_attempts(
    uuid[], uuid[], integer[], text[], text[], text[], timestamptz[]
) TO events_consumer;

-- One attempt: the batch of one. Same arguments, answers and grant as in 0021.
CREATE OR REPLACE FUNCTION events.record_consumer_processing_attempt(
    p_delivery_id uuid,
    p_lease_token uuid,
    p_attempt integer,
    p_outcome text,
    p_error_class text DEFAULT NULL,
    p_code text DEFAULT '',
    p_retry_at timestamptz DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (
        SELECT r.result
        FROM events.record_consumer_processing_attempts(
            ARRAY[p_delivery_id], ARRAY[p_lease_token], ARRAY[p_attempt], ARRAY[p_outcome],
            ARRAY[p_error_class], ARRAY[p_code], ARRAY[p_retry_at]
        ) AS r
    );
END
$$;

RESET ROLE;
