-- Retention keeps what a consumer has not finished (SPEC §8, §17). 0020's events.purge_events
-- deleted a published event 30 days after its publication whatever its consumers had done, and
-- the deletion cascades to consumer deliveries (0021): a consumer more than 30 days behind, or
-- paused that long, lost the event without a trace, and a consumer's dead letter vanished
-- before the operator's 90 days. The purge now also keeps an event while any delivery of it is
-- live (waiting, pending or leased) or dead-lettered within the dead-letter window.
--
-- Only published events can have deliveries (the fan-out runs at publication), so the second
-- half of the purge, never-published events, is unchanged. The signature and grants stay.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION events.purge_events(
    p_published interval,
    p_dead_lettered interval,
    p_limit integer
) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_published_before timestamptz;
    v_dead_before timestamptz;
    v_published integer;
    v_dead integer := 0;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_published IS NULL OR p_published < interval '0' THEN
        RAISE EXCEPTION 'p_published: a retention period of zero or more is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_dead_lettered IS NULL OR p_dead_lettered < interval '0' THEN
        RAISE EXCEPTION 'p_dead_lettered: a retention period of zero or more is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('events.purge_events', 0)
    ) THEN
        RETURN 0;
    END IF;
    v_published_before := v_now - p_published;
    v_dead_before := v_now - p_dead_lettered;

    -- Events whose (last) record was published, oldest publication first.
    WITH doomed AS (
        SELECT r.domain_event_id AS id
        FROM events.outbox_records AS r
        WHERE r.state = 'published' AND r.published_at <= v_published_before
          AND NOT EXISTS (
              SELECT 1 FROM events.outbox_records AS o
              WHERE o.domain_event_id = r.domain_event_id
                AND (o.state IN ('pending', 'leased')
                     OR (o.state = 'published' AND o.published_at > v_published_before)
                     OR (o.state = 'dead_lettered' AND o.dead_lettered_at > v_dead_before))
          )
          AND NOT EXISTS (
              SELECT 1 FROM events.dead_letters AS d
              WHERE d.domain_event_id = r.domain_event_id AND d.resolution IS NULL
          )
          AND NOT EXISTS (
              SELECT 1 FROM events.consumer_deliveries AS c
              WHERE c.domain_event_id = r.domain_event_id
                AND (c.state IN ('waiting', 'pending', 'leased')
                     OR (c.state = 'dead_lettered' AND c.dead_lettered_at > v_dead_before))
          )
        ORDER BY r.published_at
        LIMIT p_limit
    ), gone AS (
        DELETE FROM events.domain_events AS e USING doomed AS d WHERE e.id = d.id RETURNING e.id
    )
    SELECT pg_catalog.count(*) INTO v_published FROM gone;

    -- Then events that were never published: their last record is a released dead letter
    -- (an earlier one was republished as a later record), oldest dead letter first.
    IF v_published < p_limit THEN
        WITH doomed AS (
            SELECT d.domain_event_id AS id
            FROM events.dead_letters AS d
            WHERE d.resolution = 'released' AND d.dead_lettered_at <= v_dead_before
              AND NOT EXISTS (
                  SELECT 1 FROM events.outbox_records AS o
                  WHERE o.domain_event_id = d.domain_event_id
                    AND (o.state <> 'dead_lettered' OR o.dead_lettered_at > v_dead_before)
              )
              AND NOT EXISTS (
                  SELECT 1 FROM events.dead_letters AS u
                  WHERE u.domain_event_id = d.domain_event_id AND u.resolution IS NULL
              )
            ORDER BY d.dead_lettered_at
            LIMIT p_limit - v_published
        ), gone AS (
            DELETE FROM events.domain_events AS e USING doomed AS d WHERE e.id = d.id
            RETURNING e.id
        )
        SELECT pg_catalog.count(*) INTO v_dead FROM gone;
    END IF;
    RETURN v_published + v_dead;
END
$$;

RESET ROLE;
