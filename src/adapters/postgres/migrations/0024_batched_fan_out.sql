-- The consumers' fan-out once per recording statement, and a wake-up for the consumers.
--
-- 0021 fanned a publication out with a row-level trigger: one function call, one subscription
-- read and one INSERT per publication row, so recording a batch of 100 cost a hundred
-- statements per subscribed consumer. This trigger runs once per INSERT statement on
-- events.domain_event_publications, over the statement's new rows (`published`), and writes
-- every delivery of the batch in one INSERT ... SELECT.
--
-- The same deliveries as 0021: one per (publication, consumer subscribed to its type and
-- version, paused or not), in the consumer's current round, in publication order then consumer
-- order. An ordered consumer's delivery waits when its aggregate already has a live delivery,
-- or when an earlier publication of the same statement goes to the same aggregate (as the row
-- trigger saw the delivery it had just written); otherwise it is pending.
--
-- The same locks as 0021, taken before the INSERT, in one order: each consumer's advisory lock
-- shared (consumer id order), then each ordered consumer's aggregate lock exclusively (lock key
-- order), so a replay (consumer lock exclusive) and a completion of the aggregate's previous
-- delivery (aggregate lock) never interleave with the fan-out. The INSERT is a new statement
-- after the locks: it sees the round a replay just started and the completion that just freed
-- the aggregate.
--
-- When it wrote a delivery, it sends `pg_notify('consumers_work', '')`, delivered at commit:
-- a consumer listening on the channel claims at once instead of at its next poll.

SET LOCAL ROLE outbox_owner;

DROP TRIGGER domain_event_publications_fan_out ON events.domain_event_publications;

CREATE OR REPLACE FUNCTION events.fan_out_publication() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
           CASE WHEN f.ordered AND (f.nth > 1 OR EXISTS (
               SELECT 1 FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = f.consumer_id
                 AND d.organization_id = f.organization_id
                 AND d.aggregate_type = f.aggregate_type
                 AND d.aggregate_id = f.aggregate_id
                 AND d.state IN ('waiting', 'pending', 'leased')
           )) THEN 'waiting' ELSE 'pending' END,
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
REVOKE ALL ON FUNCTION events.fan_out_publication() FROM PUBLIC;

CREATE TRIGGER domain_event_publications_fan_out
    AFTER INSERT ON events.domain_event_publications
    REFERENCING NEW TABLE AS published
    FOR EACH STATEMENT
    EXECUTE FUNCTION events.fan_out_publication();

RESET ROLE;
