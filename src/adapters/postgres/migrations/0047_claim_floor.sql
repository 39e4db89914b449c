-- Claims walk no dead versions below the oldest live message (issue 31).
--
-- Every claim scanned the claim index from its start (the oldest claimable_at). Under a held
-- xmin horizon nothing can be vacuumed, so the entries of every message published since the
-- hold began stay in the index, and each claim (up to four scans of it: the fair slots and
-- each priority) walked them all: at 300 messages/s, about 118,000 entries per claim after
-- ten minutes (docs/benchmarks.md). A claim now starts at a floor: the oldest claimable_at of
-- any live message, less five seconds, which the worker recomputes every second off the
-- claim's path (a claim computes it itself only when it is ten seconds old). Below the floor
-- there is nothing live but what a transaction committed late (it enqueued more than five
-- seconds before its commit, and a floor was computed in between): the next recompute, a
-- second later, finds it. The floor is kept in an unlogged table: it costs no WAL, and after
-- a crash it is simply computed again.

SET LOCAL ROLE outbox_owner;

CREATE UNLOGGED TABLE outbox.claim_floor (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT claim_floor_one_row CHECK (only_row),
    floor timestamptz NOT NULL,
    computed_at timestamptz NOT NULL
);

-- The worker's: compute the floor now and store it (one caller at a time; another gets the
-- stored one). The oldest live claimable_at, less five seconds, never later than now less
-- five seconds. This is the one statement that walks the dead versions, once a second.
CREATE FUNCTION outbox.refresh_claim_floor() RETURNS timestamptz
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
    WHERE m.state IN ('pending', 'leased')
    ORDER BY m.claimable_at, m.created_at, m.id
    LIMIT 1;
    v_floor := LEAST(COALESCE(v_oldest, v_now), v_now) - interval '5 seconds';
    INSERT INTO outbox.claim_floor AS f (only_row, floor, computed_at)
    VALUES (true, v_floor, v_now)
    ON CONFLICT (only_row) DO UPDATE SET floor = excluded.floor, computed_at = excluded.computed_at;
    RETURN v_floor;
END
$$;

-- Granted to nobody: the floor a claim at p_now starts from. The worker refreshes it every
-- second off the claim's path (its claim_floor sweep); when it is older than ten seconds (no
-- worker refreshes it: an old worker, a drain) the claim computes it itself.
CREATE FUNCTION outbox.current_claim_floor(p_now timestamptz) RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_stored outbox.claim_floor%ROWTYPE;
BEGIN
    SELECT f.* INTO v_stored FROM outbox.claim_floor AS f WHERE f.only_row;
    IF FOUND AND v_stored.computed_at > p_now - interval '10 seconds' THEN
        RETURN v_stored.floor;
    END IF;
    RETURN outbox.refresh_claim_floor();
END
$$;

REVOKE ALL ON FUNCTION outbox.current_claim_floor(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION outbox.refresh_claim_floor() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.refresh_claim_floor() TO outbox_worker;

CREATE OR REPLACE FUNCTION outbox.claim_messages(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision
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
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

    RETURN QUERY
    WITH picked AS (
        -- Never more than p_limit rows, whatever the scans above returned.
        SELECT p.id FROM pg_catalog.unnest(v_ids) AS p (id) LIMIT p_limit
    ), taken AS (
        UPDATE outbox.messages AS m
        SET state = CASE WHEN m.expires_at <= v_now THEN 'dead_lettered' ELSE 'leased' END,
            lease_owner = CASE WHEN m.expires_at <= v_now THEN NULL ELSE p_owner END,
            lease_token = CASE
                WHEN m.expires_at <= v_now THEN NULL ELSE pg_catalog.gen_random_uuid()
            END,
            lease_expires_at = CASE WHEN m.expires_at <= v_now THEN NULL ELSE v_lease_expires_at END,
            dead_lettered_at = CASE WHEN m.expires_at <= v_now THEN v_now END,
            dead_letter_reason = CASE WHEN m.expires_at <= v_now THEN
                CASE m.purpose WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired' END
            END
        -- By primary key, whatever the statistics say: a join on the CTE let the planner
        -- pick a hash join over a sequential scan of the table (docs/benchmarks.md).
        WHERE m.id = ANY (ARRAY(SELECT picked.id FROM picked))
          AND m.state IN ('pending', 'leased') AND m.claimable_at <= v_now
          -- The planner may still read these rows through a claim index: from the floor.
          AND m.claimable_at >= v_floor
        RETURNING m.*
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e
        USING taken AS t
        WHERE e.message_id = t.id AND t.state = 'dead_lettered'
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale, e.sealed, t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at,
           t.priority, t.trace_context
    FROM taken AS t
    LEFT JOIN outbox.envelopes AS e ON e.message_id = t.id
    WHERE t.state = 'leased'
    ORDER BY t.priority DESC, t.available_at, t.created_at, t.id;
END
$$;

RESET ROLE;
