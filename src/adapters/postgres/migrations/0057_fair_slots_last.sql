-- The codes' claim fills its fair slots last (issue 31).
--
-- A claim took one slot in ten (rounded up) for the oldest due messages first, then the rest
-- by priority, highest first. Under a held xmin horizon each of those scans walks every dead
-- version between the claim floor and now (0047, 0052), and at a steady load, when the lane
-- keeps up, a claim finds fewer due messages than it asks for: the fair slots' scan walked
-- every level's dead versions to the end, and the scans by priority walked them again, each
-- its own level's. docs/benchmarks.md ("The codes' bursts") found that every held claim is
-- slower by those walks.
--
-- The priorities now take all but the fair slots first, and the fair slots go to the oldest
-- due messages the priorities left. When the priorities found fewer than they asked for,
-- they took every due message nobody holds, and the fair slots' scan is skipped: one walk
-- instead of two. The guarantee is the same: the oldest candidates, as many as there are
-- fair slots, are taken by one or the other, so a flood of codes still cannot starve a
-- notification (src/domain/delivery/priorities.py, whose model the tests' store follows).
-- Which messages a batch takes differs only when the priorities would take one of the
-- oldest anyway: its fair slot then goes to the oldest message they left.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_ids uuid[] := '{}';
    -- One in ten, rounded up, goes to the oldest; none in a batch of one.
    v_slots integer := CASE WHEN p_limit < 2 THEN 0 ELSE (p_limit + 9) / 10 END;
    v_floor timestamptz := outbox.current_claim_floor(v_now);
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

    -- All but the fair slots by priority, highest first.
    FOR v_level IN REVERSE 2..0 LOOP
        EXIT WHEN pg_catalog.cardinality(v_ids) >= p_limit - v_slots;
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
            LIMIT p_limit - v_slots - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS l;
    END LOOP;

    -- The fair slots: the oldest due messages the priorities left. When the priorities found
    -- fewer than they asked for, they took every due message nobody holds and there is none
    -- to look for. SKIP LOCKED does not skip this transaction's own locks, so the messages
    -- already taken are left out by id.
    IF v_slots > 0 AND pg_catalog.cardinality(v_ids) >= p_limit - v_slots THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
        FROM (
            SELECT m.id
            FROM outbox.messages AS m
            WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
              AND m.claimable_at >= v_floor
              AND m.id <> ALL (v_ids)
            ORDER BY m.claimable_at, m.created_at, m.id
            LIMIT v_slots
            FOR UPDATE SKIP LOCKED
        ) AS f;
    END IF;

    -- Never more than p_limit rows, whatever the scans above returned.
    RETURN QUERY
    SELECT * FROM outbox.lease_picked(v_ids[1:p_limit], p_owner, v_now, v_lease_expires_at, v_floor);
END
$$;
