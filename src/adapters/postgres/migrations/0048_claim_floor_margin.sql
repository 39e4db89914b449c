-- The claim floor's margin: one second instead of five (issue 31, docs/benchmarks.md).
--
-- Under a held xmin horizon every claim still walks the dead versions between the floor and
-- now: at 300 messages a second, five seconds of margin were about 1,500 dead entries per
-- scan, up to four scans a claim. The margin only spares a late commit (a transaction that
-- enqueued before a floor was computed and committed after it) the wait for the worker's next
-- refresh, which runs every second and always finds the oldest live message, late or not.
-- One second of margin covers the same refresh period with a fifth of the walk.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION outbox.refresh_claim_floor() RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_oldest timestamptz;
    v_floor timestamptz;
BEGIN
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('outbox.claim_floor')) THEN
        SELECT f.floor INTO v_floor FROM outbox.claim_floor AS f WHERE f.only_row;
        RETURN COALESCE(v_floor, '-infinity');
    END IF;
    SELECT m.claimable_at INTO v_oldest
    FROM outbox.messages AS m
    -- The claim index's predicate (0051): the only index this statement may read.
    WHERE m.state IN ('pending', 'leased') AND m.claimable_at IS NOT NULL
    ORDER BY m.claimable_at, m.created_at, m.id
    LIMIT 1;
    v_floor := LEAST(COALESCE(v_oldest, v_now), v_now) - interval '1 second';
    INSERT INTO outbox.claim_floor AS f (only_row, floor, computed_at)
    VALUES (true, v_floor, v_now)
    ON CONFLICT (only_row) DO UPDATE SET floor = excluded.floor, computed_at = excluded.computed_at;
    RETURN v_floor;
END
$$;

RESET ROLE;
