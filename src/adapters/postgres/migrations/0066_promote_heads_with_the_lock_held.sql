-- The record hands a head on with the lock held: its promotion in a statement of its own.
--
-- 0061 took the batch's try-locks, noted the vacancies and promoted the next heads in one
-- statement, so the promotion read the aggregate in a snapshot taken before the locks. A
-- producer that appended to the aggregate and committed between that snapshot and the try
-- had seen the published head still live and appended behind it (not a head); the try then
-- succeeded, noted no vacancy, and the promotion did not see the new event: the aggregate
-- stalled with nobody to hand it on. The broker-outage reliability test caught it once, 82
-- events left pending with appends racing the relay's recovery.
--
-- The try-locks and the vacancies stay one statement; the promotions are a second one,
-- whose snapshot is taken with the locks held (as 0061's per-aggregate function before it
-- had, being a statement of its own).

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_locked_organizations uuid[];
    v_locked_types text[];
    v_locked_ids text[];
    v_locked_through bigint[];
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_record_ids);
    v_ok bigint[];
    v_published uuid[];
    v_woken boolean := false;
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
        -- By primary key, whatever the statistics say (0057): `state = 'leased'` implied the
        -- live records' partial index, which an analyze under a hold makes look empty.
        SELECT r.id FROM events.outbox_records AS r
        WHERE r.id = i.record_id
          AND CASE WHEN r.state = 'leased'
                   THEN r.lease_token = i.lease_token AND r.lease_expires_at > v_now
                        AND i.attempt = r.attempt_count + 1
                   ELSE false END
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

    -- Hand each published head on: now, when no producer holds the aggregate (its lock
    -- tried in lock-key order, though a try never waits); else a vacancy the next claim
    -- fills. One statement for the batch.
    IF pg_catalog.cardinality(v_published) > 0 THEN  -- an empty = ANY: see outbox.lease_picked
        -- First the try-locks and the vacancies, in one statement.
        WITH aggregates AS (
            SELECT d.organization_id, d.aggregate_type, d.aggregate_id,
                   events.aggregate_lock_key(d.organization_id, d.aggregate_type, d.aggregate_id)
                       AS lock_key,
                   pg_catalog.max(d.append_sequence) AS published_through
            FROM events.outbox_records AS d
            WHERE d.id = ANY (v_published)
            GROUP BY d.organization_id, d.aggregate_type, d.aggregate_id
        ), tried AS MATERIALIZED (
            SELECT a.*, pg_catalog.pg_try_advisory_xact_lock(a.lock_key) AS locked
            FROM (SELECT * FROM aggregates ORDER BY lock_key OFFSET 0) AS a
        ), vacancies AS (
            INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
            SELECT t.organization_id, t.aggregate_type, t.aggregate_id
            FROM tried AS t
            WHERE NOT t.locked
            ON CONFLICT DO NOTHING
        )
        SELECT COALESCE(pg_catalog.array_agg(t.organization_id) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.aggregate_type) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.aggregate_id) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.published_through) FILTER (WHERE t.locked), '{}'),
               pg_catalog.bool_or(NOT t.locked)
        INTO v_locked_organizations, v_locked_types, v_locked_ids, v_locked_through, v_woken
        FROM tried AS t;
        v_woken := COALESCE(v_woken, false);

        -- Then the promotions, in a statement of their own: its snapshot is taken with the
        -- locks held, so it sees an event a producer committed before it let its lock go.
        -- (In the first statement's snapshot, taken before the tries, such an event was
        -- missing: the producer had seen the published head still live and appended behind
        -- it, the try then succeeded, and the aggregate stalled with nobody to hand on.)
        WITH promoted AS (
            -- Claimable from now on: a recent claim's window starts at most a few seconds
            -- ago, and a head promoted behind a backlog would lie below it until the next
            -- full claim (0058).
            UPDATE events.outbox_records AS r
            SET head = true,
                available_at = GREATEST(r.available_at, pg_catalog.statement_timestamp())
            -- By primary key, as the claims lease (see outbox.lease_picked).
            WHERE r.id = ANY (ARRAY(
                SELECT next.id
                FROM ROWS FROM (
                    pg_catalog.unnest(v_locked_organizations), pg_catalog.unnest(v_locked_types),
                    pg_catalog.unnest(v_locked_ids), pg_catalog.unnest(v_locked_through)
                ) AS t (organization_id, aggregate_type, aggregate_id, published_through)
                CROSS JOIN LATERAL (
                    SELECT n.id FROM events.outbox_records AS n
                    WHERE n.state IN ('pending', 'leased')
                      AND n.organization_id = t.organization_id
                      AND n.aggregate_type = t.aggregate_type
                      AND n.aggregate_id = t.aggregate_id
                      AND n.append_sequence > t.published_through
                    ORDER BY n.append_sequence
                    LIMIT 1
                ) AS next
                WHERE NOT EXISTS (
                    SELECT 1 FROM events.dead_letters AS d
                    WHERE d.resolution IS NULL AND d.organization_id = t.organization_id
                      AND d.aggregate_type = t.aggregate_type
                      AND d.aggregate_id = t.aggregate_id
                )
            ))
            RETURNING r.id
        )
        SELECT v_woken OR EXISTS (SELECT 1 FROM promoted) INTO v_woken;
    END IF;
    IF v_woken THEN
        PERFORM pg_catalog.pg_notify('events_work', '');
    END IF;

    RETURN QUERY
    SELECT CASE WHEN i.ord = ANY (v_ok) THEN 'recorded' ELSE 'lease_lost' END
    FROM pg_catalog.unnest(p_record_ids) WITH ORDINALITY AS i (record_id, ord)
    ORDER BY i.ord;
END
$$;

RESET ROLE;
