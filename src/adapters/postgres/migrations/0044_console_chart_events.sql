-- The overview's chart covers the tenant events outbox too (docs/operations.md, "The console").
--
-- The chart of the last hour showed the security outbox alone (outbox.staff_activity, 0032),
-- so an operator could not see tenant events pile up or drain. events.staff_activity gives
-- the same minutes for the events outbox's records: how many were waiting (pending or leased)
-- at each minute's end, and how many were published and dead-lettered in it. A staff read: it
-- takes a step-up of the last eight hours (outbox.require_read_elevation, 0042).

SET LOCAL ROLE outbox_owner;

-- Every minute of the last p_minutes (1 to 240), oldest first, zero-filled; the last is the
-- current minute, so far. The waiting count is worked back from the records live now: a record
-- waited at a minute's end unless it was created after it or finished before it, so
-- waiting(end) = live now - created since + finished since. Every record created in the
-- window is live now or finished in it, so the three parts read the live records and the
-- window's finished ones, each by its partial index, never the whole table.
CREATE FUNCTION events.staff_activity(p_actor uuid, p_elevation text, p_minutes integer)
RETURNS TABLE (minute timestamptz, pending bigint, published bigint, dead_lettered bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_end timestamptz := pg_catalog.date_trunc('minute', pg_catalog.statement_timestamp());
    v_start timestamptz;
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    IF p_minutes IS NULL OR p_minutes < 1 OR p_minutes > 240 THEN
        RAISE EXCEPTION 'minutes: must be between 1 and 240'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_start := v_end - pg_catalog.make_interval(mins => p_minutes - 1);
    RETURN QUERY
    WITH records AS (
        SELECT r.created_at, NULL::timestamptz AS published_at,
               NULL::timestamptz AS dead_lettered_at
        FROM events.outbox_records AS r WHERE r.state IN ('pending', 'leased')
        UNION ALL
        SELECT r.created_at, r.published_at, NULL
        FROM events.outbox_records AS r
        WHERE r.state = 'published' AND r.published_at >= v_start
        UNION ALL
        SELECT r.created_at, NULL, r.dead_lettered_at
        FROM events.outbox_records AS r
        WHERE r.state = 'dead_lettered' AND r.dead_lettered_at >= v_start
    ),
    live AS (
        SELECT pg_catalog.count(*) AS n
        FROM records AS r WHERE r.published_at IS NULL AND r.dead_lettered_at IS NULL
    ),
    minutes AS (
        SELECT g AS minute
        FROM pg_catalog.generate_series(v_start, v_end, interval '1 minute') AS g
    ),
    created AS (
        SELECT pg_catalog.date_trunc('minute', r.created_at) AS minute, pg_catalog.count(*) AS n
        FROM records AS r WHERE r.created_at >= v_start GROUP BY 1
    ),
    published AS (
        SELECT pg_catalog.date_trunc('minute', r.published_at) AS minute,
               pg_catalog.count(*) AS n
        FROM records AS r WHERE r.published_at IS NOT NULL GROUP BY 1
    ),
    dead AS (
        SELECT pg_catalog.date_trunc('minute', r.dead_lettered_at) AS minute,
               pg_catalog.count(*) AS n
        FROM records AS r WHERE r.dead_lettered_at IS NOT NULL GROUP BY 1
    ),
    counted AS (
        SELECT t.minute,
               COALESCE(c.n, 0) AS created,
               COALESCE(p.n, 0) AS published,
               COALESCE(d.n, 0) AS dead_lettered
        FROM minutes AS t
        LEFT JOIN created AS c ON c.minute = t.minute
        LEFT JOIN published AS p ON p.minute = t.minute
        LEFT JOIN dead AS d ON d.minute = t.minute
    )
    SELECT k.minute,
           GREATEST(
               (SELECT l.n FROM live AS l)
               - COALESCE(pg_catalog.sum(k.created) OVER later, 0)
               + COALESCE(pg_catalog.sum(k.published + k.dead_lettered) OVER later, 0),
               0
           )::bigint,
           k.published,
           k.dead_lettered
    FROM counted AS k
    WINDOW later AS (ORDER BY k.minute ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
    ORDER BY k.minute;
END
$$;

REVOKE ALL ON FUNCTION events.staff_activity(uuid, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION events.staff_activity(uuid, text, integer) TO staff_service;

RESET ROLE;
