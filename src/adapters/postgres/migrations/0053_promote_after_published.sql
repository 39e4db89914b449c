-- A published head hands on to the next live record after it, found by its sequence
-- (issue 31).
--
-- When a head is published, the recording transaction promotes the aggregate's next live
-- record (events.promote_head), which it found by walking the aggregate's live records from
-- the oldest sequence, and first checked that no other head exists. Under a held xmin horizon
-- both walks read every dead version of every record the aggregate ever published: after
-- 20,000 events over 64 aggregates one record of 64 read 60,128 entries of
-- `outbox_records_live_by_aggregate` and 40,128 of `outbox_records_one_head_per_aggregate`
-- (`python -m bench.events_hold_walks`, docs/benchmarks.md).
--
-- The head just published was its aggregate's oldest live record, and every record the
-- aggregate appended since has a later sequence (appends of one aggregate are serialised by
-- its lock and take their sequence in that order; a republished record, the one exception,
-- is made only while the aggregate is parked, when it has no head). So the next head is the
-- oldest live record after the published one's sequence: the probe starts there. Nor can
-- another head exist while this transaction holds the aggregate's lock and has just
-- retired the only one (the unique index still refuses a second); the check is left to
-- promote_head, which the claim's vacancies and the repairs still call, and which now makes
-- its promotion through promote_head_after.

SET LOCAL ROLE outbox_owner;

CREATE FUNCTION events.promote_head_after(
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_after bigint
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.dead_letters AS d
        WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
          AND d.aggregate_type = p_aggregate_type AND d.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    UPDATE events.outbox_records AS r
    SET head = true
    WHERE r.id = (
        SELECT n.id FROM events.outbox_records AS n
        WHERE n.state IN ('pending', 'leased') AND n.organization_id = p_organization_id
          AND n.aggregate_type = p_aggregate_type AND n.aggregate_id = p_aggregate_id
          AND n.append_sequence > p_after
        ORDER BY n.append_sequence
        LIMIT 1
    );
    RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION events.promote_head_after(uuid, text, text, bigint) FROM PUBLIC;

-- The vacancies' and the repairs' promotion: the same hand-on, from the oldest record, once
-- no head is found (append sequences start at 1).
CREATE OR REPLACE FUNCTION events.promote_head(
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.outbox_records AS r
        WHERE r.head AND r.organization_id = p_organization_id
          AND r.aggregate_type = p_aggregate_type AND r.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    RETURN events.promote_head_after(p_organization_id, p_aggregate_type, p_aggregate_id, 0);
END
$$;

CREATE OR REPLACE FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_record_ids);
    v_ok bigint[];
    v_published uuid[];
    v_aggregate record;
    v_reopened boolean := false;
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_targets) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'p_record_ids: every array needs exactly one element per record'
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
        RAISE EXCEPTION 'p_outcomes: a published outcome has no failure class, every other has '
            'one; retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (pg_catalog.unnest(p_outcomes), pg_catalog.unnest(p_failure_classes))
            AS r (outcome, failure_class)
        WHERE r.failure_class NOT IN (
                'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
                'unexpected_worker_error'
            )
           OR (r.outcome = 'dead_letter' AND r.failure_class = 'PROVIDER_SUSPENDED')
    ) THEN
        RAISE EXCEPTION 'p_failure_classes: REJECTED, THROTTLED, UNAVAILABLE, INDETERMINATE, '
            'PROVIDER_SUSPENDED (not for a dead letter) or unexpected_worker_error'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The records whose fence holds, locked; a record named twice counts once (the first).
    SELECT COALESCE(pg_catalog.array_agg(i.ord), '{}') INTO v_ok
    FROM (
        SELECT DISTINCT ON (u.record_id) u.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts)
        ) WITH ORDINALITY AS u (record_id, lease_token, attempt, ord)
        ORDER BY u.record_id, u.ord
    ) AS i
    JOIN LATERAL (
        SELECT r.id FROM events.outbox_records AS r
        WHERE r.id = i.record_id AND r.state = 'leased' AND r.lease_token = i.lease_token
          AND r.lease_expires_at > v_now AND i.attempt = r.attempt_count + 1
        FOR UPDATE
    ) AS locked ON true;

    -- The history first, while each record is still under its lease (the sequence trigger
    -- checks it against the record), then the records.
    INSERT INTO events.publication_attempts (
        outbox_record_id, attempt, counted, outcome, failure_class, code, target, recorded_at,
        retry_at, lease_token
    )
    SELECT i.record_id, i.attempt, i.outcome <> 'release', i.outcome, i.failure_class,
           pg_catalog.left(COALESCE(i.code, ''), 100), pg_catalog.left(COALESCE(i.target, ''), 100),
           v_now, i.retry_at, i.lease_token
    FROM ROWS FROM (
        pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
        pg_catalog.unnest(p_attempts), pg_catalog.unnest(p_outcomes),
        pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_targets), pg_catalog.unnest(p_retry_at)
    ) WITH ORDINALITY AS i (
        record_id, lease_token, attempt, outcome, failure_class, code, target, retry_at, ord
    )
    WHERE i.ord = ANY (v_ok)
    ORDER BY i.ord;

    WITH input AS (
        SELECT i.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_retry_at)
        ) WITH ORDINALITY AS i (record_id, outcome, failure_class, retry_at, ord)
        WHERE i.ord = ANY (v_ok)
    ), recorded AS (
        UPDATE events.outbox_records AS r
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            head = i.outcome IN ('retry', 'release'),
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = r.attempt_count + CASE WHEN i.outcome = 'release' THEN 0 ELSE 1 END,
            available_at = COALESCE(i.retry_at, r.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE r.id = i.record_id
        RETURNING r.id, i.outcome, i.failure_class, r.organization_id, r.aggregate_type,
                  r.aggregate_id, r.domain_event_id, r.append_sequence
    ), publications AS (
        INSERT INTO events.domain_event_publications (
            domain_event_id, outbox_record_id, organization_id, event_type_code,
            contract_version, published_at
        )
        SELECT e.id, d.id, e.organization_id, e.event_type_code, e.contract_version, v_now
        FROM recorded AS d
        JOIN events.domain_events AS e ON e.id = d.domain_event_id
        WHERE d.outcome = 'published'
        ORDER BY d.append_sequence
    ), parked AS (
        INSERT INTO events.dead_letters (
            outbox_record_id, domain_event_id, organization_id, aggregate_type, aggregate_id,
            append_sequence, reason, dead_lettered_at
        )
        SELECT d.id, d.domain_event_id, d.organization_id, d.aggregate_type, d.aggregate_id,
               d.append_sequence, d.failure_class, v_now
        FROM recorded AS d
        WHERE d.outcome = 'dead_letter'
    )
    SELECT COALESCE(pg_catalog.array_agg(d.id) FILTER (WHERE d.outcome = 'published'), '{}')
    INTO v_published
    FROM recorded AS d;

    -- Hand each published head on: now, when no producer holds the aggregate; else at the
    -- next claim. In lock-key order, though a try never waits.
    FOR v_aggregate IN
        SELECT d.organization_id, d.aggregate_type, d.aggregate_id,
               events.aggregate_lock_key(d.organization_id, d.aggregate_type, d.aggregate_id)
                   AS lock_key,
               pg_catalog.max(d.append_sequence) AS published_through
        FROM events.outbox_records AS d
        WHERE d.id = ANY (v_published)
        GROUP BY d.organization_id, d.aggregate_type, d.aggregate_id
        ORDER BY lock_key
    LOOP
        v_reopened := true;
        IF pg_catalog.pg_try_advisory_xact_lock(v_aggregate.lock_key) THEN
            PERFORM events.promote_head_after(
                v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id,
                v_aggregate.published_through
            );
        ELSE
            INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
            VALUES (
                v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id
            )
            ON CONFLICT DO NOTHING;
        END IF;
    END LOOP;
    IF v_reopened THEN
        PERFORM pg_catalog.pg_notify('events_work', '');
    END IF;

    RETURN QUERY
    SELECT CASE WHEN i.ord = ANY (v_ok) THEN 'recorded' ELSE 'lease_lost' END
    FROM pg_catalog.unnest(p_record_ids) WITH ORDINALITY AS i (record_id, ord)
    ORDER BY i.ord;
END
$$;

RESET ROLE;
