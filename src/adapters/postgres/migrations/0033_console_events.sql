-- The operator console (SPEC §20) over the tenant events outbox: consumers' lag and an event's
-- repair audit, for staff with a fresh step-up (outbox.require_elevation, 0009).

SET LOCAL ROLE outbox_owner;

-- events.consumer_lag (0021) for staff.
CREATE FUNCTION events.staff_consumer_lag(p_actor uuid, p_elevation text)
RETURNS TABLE (
    consumer text,
    owner_module text,
    active boolean,
    ordered boolean,
    max_attempts integer,
    replay_round integer,
    subscriptions text[],
    events_behind bigint,
    oldest_undelivered_seconds double precision,
    dead_letters bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT l.* FROM events.consumer_lag() AS l;
END
$$;

-- The repairs of one event's dead letters (republish, release), oldest first, with their
-- reasons. No idempotency key: it names a request, not what happened.
CREATE FUNCTION events.staff_event_audit(p_actor uuid, p_elevation text, p_event_id uuid)
RETURNS TABLE (
    action text,
    actor_id uuid,
    dead_letter_id uuid,
    new_record_id uuid,
    reason text,
    occurred_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT a.action, a.actor_id, a.dead_letter_id, a.new_record_id, a.reason, a.occurred_at
    FROM events.operator_audit AS a
    WHERE a.domain_event_id = p_event_id
    ORDER BY a.id;
END
$$;

REVOKE ALL ON FUNCTION
    events.staff_consumer_lag(uuid, text),
    events.staff_event_audit(uuid, text, uuid)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    events.staff_consumer_lag(uuid, text),
    events.staff_event_audit(uuid, text, uuid)
TO identity_service;

RESET ROLE;
