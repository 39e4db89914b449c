-- The doctor's readings as gauges on the admin listener's /metrics.
--
-- `outboxctl doctor` reads the lanes' due work and the relay's progress straight from the
-- tables, as the database operator. The admin listener (staff_service), which serves
-- /metrics, may not read those tables: outbox.health_work() gives it the same figures and
-- nothing else (counts and ages, no row), and events.consumer_lag() its consumers' lag. The
-- statistics views (dead rows, sizes, autovacuum, slots) are readable by any login; the
-- sessions holding the horizon only by a member of pg_read_all_stats (pg_monitor), which
-- docs/operations.md says to grant the admin login.

SET LOCAL ROLE outbox_owner;

-- Per lane: due items and the age of the oldest; for the events lane, also how long ago the
-- relay last published (NULL: never).
CREATE FUNCTION outbox.health_work()
RETURNS TABLE (
    lane text,
    due bigint,
    oldest_due_seconds double precision,
    last_published_seconds double precision
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'security', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(m.available_at)),
           NULL::double precision
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= pg_catalog.clock_timestamp()
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

REVOKE ALL ON FUNCTION outbox.health_work() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION outbox.health_work() TO staff_service;
GRANT EXECUTE ON FUNCTION events.consumer_lag() TO staff_service;

RESET ROLE;
