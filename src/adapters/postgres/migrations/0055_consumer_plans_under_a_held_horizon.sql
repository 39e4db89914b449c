-- The consumers' claim and record under a held xmin horizon (issue 31).
--
-- The same trap as the security outbox's (0051): under a held horizon an ANALYZE of
-- events.consumer_deliveries samples no live delivery (the table's rows are mostly completed
-- ones) and sets every partial index over live deliveries to no entries at all. Each then
-- looks free to read whole, and the planner took `consumer_deliveries_live_age` for
-- statements it does not serve: each probe, share and fill of the claim, the claim's UPDATE,
-- the record's promotion of an ordered aggregate's next delivery, and the fan-out's check for
-- an aggregate's live delivery, each walking every dead version of every delivery the
-- consumer ever had. After 20,000 events delivered under a hold, one claim of 50 read
-- 1,200,000 entries of that index and took 59 ms, one record of 50 read 3,062,550 and took
-- 130 ms (`python -m bench.events_hold_walks`, docs/benchmarks.md).
--
-- Each partial index now carries a predicate that only the statements it serves imply:
--
-- - `consumer_deliveries_claim_by_organization`: `claimable_at IS NOT NULL` instead of the
--   state, the same entries (claimable_at is set exactly while a delivery is pending or
--   leased). The claim's probes and shares name claimable_at and no state, so the claim
--   order's index is not theirs to read.
-- - `consumer_deliveries_claim_order`: the state and `claimable_at IS NOT NULL`, implied only
--   by the fill (and the health reading, which now names claimable_at).
-- - `consumer_deliveries_live_by_aggregate`: and `aggregate_id IS NOT NULL`, implied only by
--   the statements that name an aggregate.
-- - `consumer_deliveries_live_age`: and `created_at IS NOT NULL`, implied only by the lag,
--   which now names created_at.
--
-- The claim's UPDATE finds the picked deliveries by primary key only (its re-check is a
-- CASE, as the events claim's in 0054). Beside the plans, three walks fewer:
--
-- - The probes for organizations read each organization's entries down from now, where its
--   newest due deliveries are, not up from the bottom, where a hold keeps its dead versions;
--   and they look for due deliveries only, so an organization whose deliveries are all
--   leased or waiting for a retry takes no share of the claim.
-- - The fill runs only when it can find something: the probes stopped before they had seen
--   every organization, or an organization gave its whole share.
-- - The promotion of an ordered aggregate's next delivery starts after the delivery that
--   ended. It was the aggregate's oldest live delivery, and every delivery of the aggregate
--   inserted since has a later sequence: the fan-out inserts them under the aggregate's lock
--   and the replay under the consumer's, and a final delivery never becomes live again.
--
-- Rebuilding the four indexes locks out writes to events.consumer_deliveries while they are
-- built.

SET LOCAL ROLE outbox_owner;

DROP INDEX events.consumer_deliveries_claim_order;
CREATE INDEX consumer_deliveries_claim_order
    ON events.consumer_deliveries (consumer_id, claimable_at, delivery_sequence)
    WHERE state IN ('pending', 'leased') AND claimable_at IS NOT NULL;

DROP INDEX events.consumer_deliveries_claim_by_organization;
CREATE INDEX consumer_deliveries_claim_by_organization
    ON events.consumer_deliveries (consumer_id, organization_id, claimable_at, delivery_sequence)
    WHERE claimable_at IS NOT NULL;

DROP INDEX events.consumer_deliveries_live_by_aggregate;
CREATE INDEX consumer_deliveries_live_by_aggregate
    ON events.consumer_deliveries (
        consumer_id, organization_id, aggregate_type, aggregate_id, delivery_sequence
    )
    WHERE state IN ('waiting', 'pending', 'leased') AND aggregate_id IS NOT NULL;

DROP INDEX events.consumer_deliveries_live_age;
CREATE INDEX consumer_deliveries_live_age ON events.consumer_deliveries (consumer_id, created_at)
    WHERE state IN ('waiting', 'pending', 'leased') AND created_at IS NOT NULL;

CREATE OR REPLACE FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(delivery_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, publication_sequence bigint, replay_round integer, payload jsonb, occurred_at timestamp with time zone, trace_context text, attempt_count integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_organizations uuid[];
    v_share integer;
    v_ids uuid[];
    v_share_filled boolean;  -- an organization gave its whole share: it may have more
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its process' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_consumer := events.own_consumer(p_consumer);
    IF NOT v_consumer.active THEN
        RETURN;
    END IF;

    -- Organizations with due deliveries, by a loose index scan that reads each organization's
    -- entries down from now, where its newest due deliveries are: below them lie the dead
    -- versions a held horizon keeps, which a scan from the bottom would walk first. One probe
    -- each, from a random organization down, then from the highest down to it.
    WITH RECURSIVE from_start AS (
        (SELECT d.organization_id FROM events.consumer_deliveries AS d
         WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
           AND d.organization_id <= v_start
         ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
        UNION ALL
        SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                  AND d.organization_id < a.organization_id
                ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
        FROM from_start AS a WHERE a.organization_id IS NOT NULL
    )
    SELECT pg_catalog.array_agg(o.organization_id) INTO v_organizations
    FROM (SELECT a.organization_id FROM from_start AS a WHERE a.organization_id IS NOT NULL
          LIMIT p_limit) AS o;
    v_organizations := COALESCE(v_organizations, '{}');
    IF pg_catalog.cardinality(v_organizations) < p_limit THEN
        WITH RECURSIVE from_top AS (
            (SELECT d.organization_id FROM events.consumer_deliveries AS d
             WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
               AND d.organization_id > v_start
             ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                    WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                      AND d.organization_id < b.organization_id AND d.organization_id > v_start
                    ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            FROM from_top AS b WHERE b.organization_id IS NOT NULL
        )
        SELECT v_organizations || COALESCE(pg_catalog.array_agg(o.organization_id), '{}')
        INTO v_organizations
        FROM (SELECT b.organization_id FROM from_top AS b
              WHERE b.organization_id IS NOT NULL
              LIMIT p_limit - pg_catalog.cardinality(v_organizations)) AS o;
    END IF;
    IF pg_catalog.cardinality(v_organizations) = 0 THEN
        RETURN;
    END IF;

    -- An equal share for each organization, then what is left in claim order.
    v_share := p_limit / pg_catalog.cardinality(v_organizations);
    -- (A share names no state: a claimable_at is set exactly while a delivery is pending or
    -- leased, and naming the state would let it read the claim order's index instead.)
    SELECT COALESCE(pg_catalog.array_agg(p.id), '{}'), COALESCE(pg_catalog.max(p.taken), 0) >= v_share
    INTO v_ids, v_share_filled
    FROM (
        SELECT x.id, pg_catalog.count(*) OVER (PARTITION BY o.organization_id) AS taken
        FROM pg_catalog.unnest(v_organizations) AS o (organization_id)
        CROSS JOIN LATERAL (
            SELECT d.id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.organization_id = o.organization_id
              AND d.claimable_at <= v_now
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT v_share
            FOR UPDATE SKIP LOCKED
        ) AS x
    ) AS p;
    -- The fill can find something only when the probes stopped before they had seen every
    -- organization, or one gave its whole share.
    IF pg_catalog.cardinality(v_ids) < p_limit
        AND (pg_catalog.cardinality(v_organizations) >= p_limit OR v_share_filled)
    THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(x.id), '{}') INTO v_ids
        FROM (
            SELECT d.id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.state IN ('pending', 'leased')
              AND d.claimable_at <= v_now
              AND d.id <> ALL (v_ids)
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS x;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.consumer_deliveries AS d
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_now + pg_catalog.make_interval(secs => p_lease_seconds)
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE d.id = ANY (v_ids)
          AND CASE WHEN d.state IN ('pending', 'leased') THEN d.claimable_at <= v_now
                   ELSE false END
        RETURNING d.*
    )
    SELECT t.id, e.id, e.organization_id, e.event_type_code, e.contract_version,
           e.aggregate_type, e.aggregate_id, e.append_sequence, t.publication_sequence,
           t.replay_round, e.payload, e.occurred_at, e.trace_context, t.attempt_count,
           v_consumer.max_attempts, t.lease_token, t.lease_expires_at
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.delivery_sequence;
END
$$;

CREATE OR REPLACE FUNCTION events.record_consumer_processing_attempts(p_delivery_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_error_classes text[], p_codes text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
    -- of that aggregate becomes pending. It is the oldest live one after the delivery that
    -- ended (0055), so the probe starts there.
    UPDATE events.consumer_deliveries AS d
    SET state = 'pending', available_at = v_now
    FROM (
        SELECT (
            SELECT n.id FROM events.consumer_deliveries AS n
            WHERE n.consumer_id = e.consumer_id
              AND n.organization_id = e.organization_id
              AND n.aggregate_type = e.aggregate_type
              AND n.aggregate_id = e.aggregate_id
              AND n.delivery_sequence > e.delivery_sequence
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
$_$;

CREATE OR REPLACE FUNCTION events.consumer_lag() RETURNS TABLE(consumer text, owner_module text, active boolean, ordered boolean, max_attempts integer, replay_round integer, subscriptions text[], events_behind bigint, oldest_undelivered_seconds double precision, dead_letters bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT c.code, c.owner_module_code, c.active, c.ordered, c.max_attempts, c.replay_round,
           ARRAY(
               SELECT s.event_type_code || ':' || s.min_version || '-' || s.max_version
               FROM events.consumer_subscriptions AS s
               WHERE s.consumer_id = c.id
               ORDER BY s.event_type_code
           ),
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')
              AND d.created_at > '-infinity'),  -- the age index (0055)
           (SELECT pg_catalog.date_part('epoch',
                       pg_catalog.statement_timestamp() - pg_catalog.min(d.created_at))
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')
              AND d.created_at > '-infinity'),  -- the age index (0055)
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state = 'dead_lettered')
    FROM events.consumers AS c
    ORDER BY c.code
$$;

CREATE OR REPLACE FUNCTION outbox.health_work() RETURNS TABLE(lane text, due bigint, oldest_due_seconds double precision, last_published_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT 'security', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(m.available_at)),
           NULL::double precision
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= pg_catalog.clock_timestamp()
      AND m.claimable_at <= pg_catalog.clock_timestamp()  -- the claim index (0051)
      AND m.claimable_at >= outbox.stored_claim_floor()  -- from the floor (0052)
    UNION ALL
    SELECT 'events', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(r.available_at)),
           (SELECT EXTRACT(epoch FROM pg_catalog.clock_timestamp() - p.published_at)
            FROM events.domain_event_publications AS p
            ORDER BY p.publication_sequence DESC
            LIMIT 1)
    FROM events.outbox_records AS r
    WHERE r.state = 'pending' AND r.available_at <= pg_catalog.clock_timestamp()
    UNION ALL
    SELECT 'consumers', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(d.available_at)),
           NULL::double precision
    FROM events.consumer_deliveries AS d
    WHERE d.state = 'pending' AND d.available_at <= pg_catalog.clock_timestamp()
      AND d.claimable_at <= pg_catalog.clock_timestamp()  -- the claim index (0055)
$$;

