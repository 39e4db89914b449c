-- The lane's batches can leave a fresh code to the reserved slot running in another process.
--
-- With `outboxctl worker --lane-processes` the security lane's reserved slot runs in a
-- process of its own (0049's claim_urgent_messages, woken by outbox_urgent), and the lane's
-- batches in another. The batches' claim still took high priority first, so under a flood
-- of notifications about half the codes went into a batch of a hundred notifications and
-- waited for its sends: a code's p99 of 45-56 ms against the 50 ms bar (docs/benchmarks.md,
-- issue 30), where the slot alone answers in a few milliseconds.
--
-- claim_messages takes p_leave_urgent_seconds (default 0: as before): a high-priority row
-- due for less than that is left out of both the fair slots and the scan by priority, for
-- the slot to take. One due for longer is anybody's again, so a code is never stranded when
-- the slot's process is down or behind: it waits that long, then a batch takes it.
--
-- The signature changes, so the function is dropped and created again with 0060's body and
-- the new parameter, and its EXECUTE grants are copied as 0014 copied them.

SET LOCAL ROLE outbox_owner;

SELECT pg_catalog.set_config(
    'outbox_migration.claim_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'outbox.claim_messages(text, integer, double precision)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';

DROP FUNCTION outbox.claim_messages(text, integer, double precision);

CREATE OR REPLACE FUNCTION outbox.claim_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision,
    p_leave_urgent_seconds double precision DEFAULT 0
) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
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
    v_urgent_due timestamptz;  -- high priority due at or before this is anybody's
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
    IF p_leave_urgent_seconds IS NULL OR p_leave_urgent_seconds < 0 THEN
        RAISE EXCEPTION 'p_leave_urgent_seconds: must be zero or more' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);
    v_urgent_due := v_now - pg_catalog.make_interval(secs => p_leave_urgent_seconds);

    -- The fair slots: one in ten, rounded up, none in a batch of one.
    SELECT COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
          AND m.claimable_at >= v_floor
          AND (m.priority < 2 OR m.claimable_at <= v_urgent_due)
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
              AND m.claimable_at <= CASE WHEN v_level = 2 THEN v_urgent_due ELSE v_now END
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

REVOKE ALL ON FUNCTION outbox.claim_messages(text, integer, double precision, double precision)
    FROM PUBLIC;

-- The copied grants.
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY pg_catalog.string_to_array(
        pg_catalog.current_setting('outbox_migration.claim_grantees'), ','
    ) LOOP
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION outbox.claim_messages(text, integer, double precision, '
            'double precision) TO %s', v_role
        );
    END LOOP;
END
$$;

RESET ROLE;
