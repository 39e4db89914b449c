-- A codes claim that finds less than its fair slots ends there: one walk instead of two.
--
-- The claim (0047, 0049) takes its fair slots first (one in ten of the batch, the oldest due
-- rows of any priority between the claim floor and now), then the rest by priority, one
-- scan per level. At a steady load most claims find fewer due rows than their fair slots
-- ask for. Such a fair scan has read every due row it could lock, of every level, so the
-- scans by priority can find nothing more; yet each walked its level's entries between the
-- floor and now again. Under a held xmin horizon those are the dead versions of every code
-- enqueued since the floor: the fair scan walked them once and the levels a second time.
-- A held ten-minute run (`python -m bench.held_horizon`, half rate) put the codes claim at
-- 1.73 ms of server time per call, against 0.45 ms clean.
--
-- The claim now skips the scans by priority when its fair scan came back short (a batch of
-- one has no fair slots and skips nothing). What it returns is the same: the rows a scan by
-- priority could still find are those that became due or were unlocked between the two
-- statements, which the next claim takes.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_ids uuid[];
    v_floor timestamptz := outbox.current_claim_floor(v_now);
    v_fair integer := CASE WHEN p_limit < 2 THEN 0 ELSE (p_limit + 9) / 10 END;
    v_all_seen boolean;  -- the fair slots' scan found fewer than it asked for: every due row
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);

    -- The fair slots: one in ten, rounded up, none in a batch of one.
    SELECT COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
          AND m.claimable_at >= v_floor
        ORDER BY m.claimable_at, m.created_at, m.id
        LIMIT v_fair
        FOR UPDATE SKIP LOCKED
    ) AS f;
    -- Its scan reads every level between the floor and now, so when it came back short it
    -- took every row the scans by priority below could lock: they would only walk the same
    -- entries again (under a held horizon, every dead version between the floor and now).
    v_all_seen := pg_catalog.cardinality(v_ids) < v_fair;

    -- The rest by priority. SKIP LOCKED does not skip this transaction's own locks, so the
    -- fair slots already taken are left out by id.
    FOR v_level IN REVERSE 2..0 LOOP
        EXIT WHEN v_all_seen OR pg_catalog.cardinality(v_ids) >= p_limit;
        SELECT v_ids || COALESCE(pg_catalog.array_agg(l.id), '{}') INTO v_ids
        FROM (
            SELECT m.id
            FROM outbox.messages AS m
            WHERE m.state IN ('pending', 'leased')
              AND m.priority = v_level
              AND m.claimable_at <= v_now
              AND m.claimable_at >= v_floor
              AND m.id <> ALL (v_ids)
            ORDER BY m.claimable_at, m.created_at, m.id
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS l;
    END LOOP;

    -- Never more than p_limit rows, whatever the scans above returned.
    RETURN QUERY
    SELECT * FROM outbox.lease_picked(v_ids[1:p_limit], p_owner, v_now, v_lease_expires_at, v_floor);
END
$$;

RESET ROLE;
