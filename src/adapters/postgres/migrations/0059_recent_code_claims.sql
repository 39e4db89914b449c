-- Recent claims for the codes: the security outbox's claims bounded by a window, as the
-- events' are (0058).
--
-- Every scan of `outbox.claim_messages` (the fair slots, then each priority level) and of
-- the reserved slot's `outbox.claim_urgent_messages` starts at the claim floor (0047-0052):
-- a second below the oldest live message when the sweep last refreshed it, which it does
-- every one to three seconds. Under a held xmin horizon each scan walks every dead version
-- between the floor and now, and at a steady load most claims find little: a held ten-minute
-- run put the codes' claim p99 at 3.2x the clean run's. With `p_window_seconds` a claim
-- starts at the later of the floor and the window's start. The worker makes a full claim
-- (from the floor) at least every second and after any claim that came back full, and
-- recent claims of one second between; a recent claim misses only what became claimable
-- before the last full claim started and was not visible to it (a late commit), which the
-- next full claim takes.
--
-- Both signatures change, so each function is dropped and created again, its EXECUTE
-- grants copied.

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
SELECT pg_catalog.set_config(
    'outbox_migration.urgent_grantees',
    COALESCE(pg_catalog.string_agg(pg_catalog.quote_ident(r.rolname), ','), ''),
    true
)
FROM pg_catalog.pg_proc AS p
CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS a
JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
WHERE p.oid = 'outbox.claim_urgent_messages(text, integer, double precision)'::pg_catalog.regprocedure
  AND a.privilege_type = 'EXECUTE' AND r.rolname <> 'outbox_owner';

DROP FUNCTION outbox.claim_messages(text, integer, double precision);
DROP FUNCTION outbox.claim_urgent_messages(text, integer, double precision);

CREATE OR REPLACE FUNCTION outbox.claim_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision,
    p_window_seconds double precision DEFAULT NULL
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_ids uuid[];
    v_floor timestamptz := outbox.current_claim_floor(v_now);
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0
       OR p_lease_seconds IN ('NaN', 'Infinity') THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_window_seconds IS NOT NULL AND NOT (p_window_seconds > 0 AND p_window_seconds <= 3600) THEN
        RAISE EXCEPTION 'p_window_seconds: from 0 to 3600 seconds, or NULL for a full claim'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A recent claim reads from the window's start, when that is above the floor.
    IF p_window_seconds IS NOT NULL THEN
        v_floor := GREATEST(v_floor, v_now - pg_catalog.make_interval(secs => p_window_seconds));
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
        LIMIT CASE WHEN p_limit < 2 THEN 0 ELSE (p_limit + 9) / 10 END
        FOR UPDATE SKIP LOCKED
    ) AS f;

    -- The rest by priority. SKIP LOCKED does not skip this transaction's own locks, so the
    -- fair slots already taken are left out by id.
    FOR v_level IN REVERSE 2..0 LOOP
        EXIT WHEN pg_catalog.cardinality(v_ids) >= p_limit;
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

CREATE OR REPLACE FUNCTION outbox.claim_urgent_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision,
    p_window_seconds double precision DEFAULT NULL
) RETURNS TABLE (
    id uuid,
    purpose text,
    channel text,
    destination text,
    subject_id uuid,
    template text,
    params jsonb,
    locale text,
    sealed_secret text,
    attempt_count integer,
    expires_at timestamptz,
    lease_token uuid,
    lease_expires_at timestamptz,
    priority smallint,
    trace_context text
)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_floor timestamptz := outbox.current_claim_floor(v_now);
    v_ids uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0
       OR p_lease_seconds IN ('NaN', 'Infinity') THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_window_seconds IS NOT NULL AND NOT (p_window_seconds > 0 AND p_window_seconds <= 3600) THEN
        RAISE EXCEPTION 'p_window_seconds: from 0 to 3600 seconds, or NULL for a full claim'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A recent claim reads from the window's start, when that is above the floor.
    IF p_window_seconds IS NOT NULL THEN
        v_floor := GREATEST(v_floor, v_now - pg_catalog.make_interval(secs => p_window_seconds));
    END IF;

    SELECT COALESCE(pg_catalog.array_agg(u.id), '{}') INTO v_ids
    FROM (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased')
          AND m.priority = 2
          AND m.claimable_at <= v_now
          AND m.claimable_at >= v_floor
        ORDER BY m.claimable_at, m.created_at, m.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ) AS u;

    RETURN QUERY
    SELECT * FROM outbox.lease_picked(
        v_ids, p_owner, v_now, v_now + pg_catalog.make_interval(secs => p_lease_seconds), v_floor
    );
END
$$;

REVOKE ALL ON FUNCTION
    outbox.claim_messages(text, integer, double precision, double precision),
    outbox.claim_urgent_messages(text, integer, double precision, double precision)
FROM PUBLIC;

DO $grant$
BEGIN
    IF pg_catalog.current_setting('outbox_migration.claim_grantees') <> '' THEN
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION outbox.claim_messages(text, integer, double precision, '
            'double precision) TO %s',
            pg_catalog.current_setting('outbox_migration.claim_grantees')
        );
    END IF;
    IF pg_catalog.current_setting('outbox_migration.urgent_grantees') <> '' THEN
        EXECUTE pg_catalog.format(
            'GRANT EXECUTE ON FUNCTION outbox.claim_urgent_messages(text, integer, '
            'double precision, double precision) TO %s',
            pg_catalog.current_setting('outbox_migration.urgent_grantees')
        );
    END IF;
END
$grant$;

RESET ROLE;
