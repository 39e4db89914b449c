-- An ordered consumer's fan-out under a held xmin horizon (issue 31).
--
-- Each delivery the fan-out writes for an ordered consumer is pending when its aggregate has
-- no live delivery and waiting when it has one, and the fan-out asked whether one EXISTS in
-- `consumer_deliveries_live_by_aggregate`. When none does, which is the common case for a
-- consumer that keeps up, the scan has to read every entry of the aggregate to be sure, and
-- under a held horizon those are every version of every delivery the aggregate ever had:
-- after 20,000 events delivered under a hold the publication of 100 events read 59,936
-- entries of that index, one walk per event that grows with the hold
-- (`python -m bench.events_hold_walks`, docs/benchmarks.md).
--
-- An ordered consumer's live deliveries of an aggregate are always its newest ones: they are
-- inserted in sequence order under the aggregate's lock (the replay under the consumer's), a
-- delivery ends only as its aggregate's head (its oldest live one), and a final delivery
-- never becomes live again. So the aggregate has a live delivery exactly when its newest
-- delivery is live, and the fan-out and the replay now read that one: the index over an
-- aggregate's deliveries keeps every delivery, live or not, and a scan down from the top
-- finds the newest in the few versions it left. The same index serves the record's
-- promotion of the next delivery, which probes after the delivery that ended (0055).
--
-- Rebuilding the index locks out writes to events.consumer_deliveries while it is built.

SET LOCAL ROLE outbox_owner;

DROP INDEX events.consumer_deliveries_live_by_aggregate;
CREATE INDEX consumer_deliveries_by_aggregate
    ON events.consumer_deliveries (
        consumer_id, organization_id, aggregate_type, aggregate_id, delivery_sequence
    );

CREATE OR REPLACE FUNCTION events.fan_out_publication() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumers uuid[];
    v_aggregate_keys bigint[];
    v_key bigint;
    v_consumer_id uuid;
    v_written integer;
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT s.consumer_id ORDER BY s.consumer_id)
    INTO v_consumers
    FROM published AS p
    JOIN events.consumer_subscriptions AS s
        ON s.event_type_code = p.event_type_code
       AND p.contract_version BETWEEN s.min_version AND s.max_version;
    IF v_consumers IS NULL THEN
        RETURN NULL;  -- nobody subscribes to what this statement published
    END IF;

    FOREACH v_consumer_id IN ARRAY v_consumers LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer_id));
    END LOOP;
    SELECT pg_catalog.array_agg(DISTINCT events.consumer_aggregate_lock_key(
               c.id, e.organization_id, e.aggregate_type, e.aggregate_id
           ) ORDER BY events.consumer_aggregate_lock_key(
               c.id, e.organization_id, e.aggregate_type, e.aggregate_id
           ))
    INTO v_aggregate_keys
    FROM published AS p
    JOIN events.domain_events AS e ON e.id = p.domain_event_id
    JOIN events.consumer_subscriptions AS s
        ON s.event_type_code = p.event_type_code
       AND p.contract_version BETWEEN s.min_version AND s.max_version
    JOIN events.consumers AS c ON c.id = s.consumer_id
    WHERE c.ordered;
    FOREACH v_key IN ARRAY COALESCE(v_aggregate_keys, '{}') LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock(v_key);
    END LOOP;

    INSERT INTO events.consumer_deliveries (
        consumer_id, domain_event_id, replay_round, organization_id, aggregate_type,
        aggregate_id, publication_sequence, state, available_at, created_at
    )
    SELECT f.consumer_id, f.domain_event_id, f.replay_round, f.organization_id,
           f.aggregate_type, f.aggregate_id, f.publication_sequence,
           CASE WHEN f.ordered AND (f.nth > 1 OR (
               -- The aggregate's newest delivery is live exactly when any is (0056).
               SELECT d.state FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = f.consumer_id
                 AND d.organization_id = f.organization_id
                 AND d.aggregate_type = f.aggregate_type
                 AND d.aggregate_id = f.aggregate_id
               ORDER BY d.delivery_sequence DESC
               LIMIT 1
           ) IN ('waiting', 'pending', 'leased')) THEN 'waiting' ELSE 'pending' END,
           v_now, v_now
    FROM (
        SELECT c.id AS consumer_id, c.ordered, c.replay_round, e.id AS domain_event_id,
               e.organization_id, e.aggregate_type, e.aggregate_id, p.publication_sequence,
               pg_catalog.row_number() OVER (
                   PARTITION BY c.id, e.organization_id, e.aggregate_type, e.aggregate_id
                   ORDER BY p.publication_sequence
               ) AS nth
        FROM published AS p
        JOIN events.domain_events AS e ON e.id = p.domain_event_id
        JOIN events.consumer_subscriptions AS s
            ON s.event_type_code = p.event_type_code
           AND p.contract_version BETWEEN s.min_version AND s.max_version
        JOIN events.consumers AS c ON c.id = s.consumer_id
    ) AS f
    ORDER BY f.publication_sequence, f.consumer_id
    ON CONFLICT ON CONSTRAINT consumer_deliveries_once_per_round DO NOTHING;
    GET DIAGNOSTICS v_written = ROW_COUNT;
    IF v_written > 0 THEN
        PERFORM pg_catalog.pg_notify('consumers_work', '');
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events.replay_consumer(p_consumer text, p_from_sequence bigint DEFAULT NULL::bigint, p_since timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_written integer;
BEGIN
    IF (p_from_sequence IS NULL) = (p_since IS NULL) THEN
        RAISE EXCEPTION 'p_from_sequence: give a publication sequence or p_since, not both'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_from_sequence < 1 THEN
        RAISE EXCEPTION 'p_from_sequence: publication sequences start at 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_consumer FROM events.consumers AS c WHERE c.code = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(events.consumer_lock_key(v_consumer.id));
    UPDATE events.consumers AS c SET replay_round = c.replay_round + 1
    WHERE c.id = v_consumer.id
    RETURNING * INTO v_consumer;

    INSERT INTO events.consumer_deliveries (
        consumer_id, domain_event_id, replay_round, organization_id, aggregate_type,
        aggregate_id, publication_sequence, state, available_at, created_at
    )
    SELECT v_consumer.id, r.domain_event_id, v_consumer.replay_round, r.organization_id,
           r.aggregate_type, r.aggregate_id, r.publication_sequence,
           CASE WHEN v_consumer.ordered AND (r.nth > 1 OR (
               -- The aggregate's newest delivery is live exactly when any is (0056).
               SELECT d.state FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = v_consumer.id
                 AND d.organization_id = r.organization_id
                 AND d.aggregate_type = r.aggregate_type
                 AND d.aggregate_id = r.aggregate_id
               ORDER BY d.delivery_sequence DESC
               LIMIT 1
           ) IN ('waiting', 'pending', 'leased')) THEN 'waiting' ELSE 'pending' END,
           v_now, v_now
    FROM (
        SELECT p.domain_event_id, p.publication_sequence, e.organization_id, e.aggregate_type,
               e.aggregate_id,
               pg_catalog.row_number() OVER (
                   PARTITION BY e.organization_id, e.aggregate_type, e.aggregate_id
                   ORDER BY p.publication_sequence
               ) AS nth
        FROM events.domain_event_publications AS p
        JOIN events.domain_events AS e ON e.id = p.domain_event_id
        JOIN events.consumer_subscriptions AS s
            ON s.consumer_id = v_consumer.id
           AND s.event_type_code = p.event_type_code
           AND p.contract_version BETWEEN s.min_version AND s.max_version
        WHERE (p_from_sequence IS NULL OR p.publication_sequence >= p_from_sequence)
          AND (p_since IS NULL OR p.published_at >= p_since)
    ) AS r
    ORDER BY r.publication_sequence;
    GET DIAGNOSTICS v_written = ROW_COUNT;
    RETURN v_written;
END
$$;
