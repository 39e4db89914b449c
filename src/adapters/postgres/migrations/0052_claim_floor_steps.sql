-- The claim floor moves in steps; the whole walk is paced by what it costs (issue 31).
--
-- The worker refreshed the floor every second by walking the claim index from its start to
-- the oldest live message. Under a held xmin horizon that start is the hold's: the walk read
-- every dead version kept since (378,000 after ten minutes at 300 messages a second, with a
-- heap visit each) once a second, and the cost grew with the hold, competing with the claims
-- for the same cores (docs/benchmarks.md: claim p99 4.5-7.5x the clean run's).
--
-- A refresh now starts five seconds below the floor it replaces: a message can only appear
-- below a floor by a late commit (its transaction enqueued before the floor was computed and
-- committed after), and one that commits within five seconds of the last floor is still
-- found a second later. A whole walk, which finds any late commit however late, runs when
-- it is due: at the next refresh again when the last one took less than 10 ms (a clean
-- index, as without a hold: every refresh is whole, as before), else after fifty times what
-- the last one took, never more than a minute later. Under a hold the whole walk so costs at most a fiftieth of
-- one core, and a message committed long after it was enqueued waits at most a minute more.
-- The gauges' readers of live messages (health_work, workers) start at the stored floor too.

SET LOCAL ROLE outbox_owner;

ALTER TABLE outbox.claim_floor ADD COLUMN walk_due_at timestamptz;

COMMENT ON COLUMN outbox.claim_floor.walk_due_at IS
    'When the next refresh walks the claim index whole (NULL: the next one does).';

CREATE OR REPLACE FUNCTION outbox.refresh_claim_floor() RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_stored outbox.claim_floor%ROWTYPE;
    v_whole boolean;
    v_from timestamptz := '-infinity';
    v_started timestamptz;
    v_took interval;
    v_oldest timestamptz;
    v_floor timestamptz;
    v_due timestamptz;
BEGIN
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('outbox.claim_floor')) THEN
        SELECT f.floor INTO v_floor FROM outbox.claim_floor AS f WHERE f.only_row;
        RETURN COALESCE(v_floor, '-infinity');
    END IF;
    SELECT f.* INTO v_stored FROM outbox.claim_floor AS f WHERE f.only_row;
    v_whole := NOT FOUND OR v_stored.walk_due_at IS NULL OR v_stored.walk_due_at <= v_now;
    IF NOT v_whole THEN
        v_from := LEAST(v_stored.floor, v_now) - interval '5 seconds';
    END IF;
    v_started := pg_catalog.clock_timestamp();
    SELECT m.claimable_at INTO v_oldest
    FROM outbox.messages AS m
    -- The claim index's predicate (0051): the only index this statement may read.
    WHERE m.state IN ('pending', 'leased') AND m.claimable_at IS NOT NULL
      AND m.claimable_at >= v_from
    ORDER BY m.claimable_at, m.created_at, m.id
    LIMIT 1;
    v_floor := LEAST(COALESCE(v_oldest, v_now), v_now) - interval '1 second';
    v_took := pg_catalog.clock_timestamp() - v_started;
    v_due := CASE
        WHEN NOT v_whole THEN v_stored.walk_due_at
        WHEN v_took < interval '10 milliseconds' THEN NULL  -- cheap: the next one walks too
        ELSE v_now + LEAST(interval '1 minute', v_took * 50)
    END;
    INSERT INTO outbox.claim_floor AS f (only_row, floor, computed_at, walk_due_at)
    VALUES (true, v_floor, v_now, v_due)
    ON CONFLICT (only_row) DO UPDATE
    SET floor = excluded.floor, computed_at = excluded.computed_at,
        walk_due_at = excluded.walk_due_at;
    RETURN v_floor;
END
$$;

-- The stored floor, for readers that must not write (the gauges): '-infinity' when none is
-- stored. A stale one is lower than a fresh one, so it hides nothing but a late commit.
CREATE FUNCTION outbox.stored_claim_floor() RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT COALESCE(pg_catalog.min(f.floor), '-infinity') FROM outbox.claim_floor AS f
$$;

REVOKE ALL ON FUNCTION outbox.stored_claim_floor() FROM PUBLIC;

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
$$;

CREATE OR REPLACE FUNCTION outbox.workers(p_actor uuid) RETURNS TABLE(owner text, lane text, started_at timestamp with time zone, seen_at timestamp with time zone, stopped_at timestamp with time zone, running boolean, lag_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_security double precision;
    v_events double precision;
    v_consumers double precision;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    SELECT pg_catalog.date_part('epoch', v_now - pg_catalog.min(m.available_at))
    INTO v_security
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= v_now
      AND m.claimable_at <= v_now  -- the claim index (0051)
      AND m.claimable_at >= outbox.stored_claim_floor();  -- from the floor (0052)
    SELECT pg_catalog.date_part('epoch', v_now - pg_catalog.min(r.claimable_at))
    INTO v_events
    FROM events.outbox_records AS r
    WHERE r.state IN ('pending', 'leased') AND r.claimable_at <= v_now;
    SELECT pg_catalog.max(l.oldest_undelivered_seconds) INTO v_consumers
    FROM events.consumer_lag() AS l;
    RETURN QUERY
    SELECT w.owner, w.lane, w.started_at, w.seen_at, w.stopped_at,
           w.stopped_at IS NULL AND w.seen_at > v_now - interval '30 seconds',
           CASE w.lane WHEN 'security' THEN v_security WHEN 'events' THEN v_events
                       ELSE v_consumers END
    FROM outbox.worker_lanes AS w
    ORDER BY w.stopped_at IS NULL AND w.seen_at > v_now - interval '30 seconds' DESC,
             w.owner, w.lane;
END
$$;

RESET ROLE;
