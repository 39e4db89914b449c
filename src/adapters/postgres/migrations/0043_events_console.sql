-- Tenant events and consumers first-class for operators, a workers view, and a break-glass
-- step-up.
--
-- The Events page listed only dead letters and parked aggregates, filtered by organization
-- and id, with no bulk action; consumers had no staff route at all; nobody could see which
-- processes ran which lanes; and staff step-up codes are outbox messages, so with the email
-- provider paused no staff member could step up. This file adds:
-- - events.search_events: browse events by state, type, organization, aggregate and time;
-- - events.count_bulk / events.bulk_repair: republish or release the unresolved dead letters
--   a filter matches, or cancel its pending events, one audit row each, only what the action
--   changes (the count is exactly that);
-- - consumers for staff: dead letters, replay, pause, resume, each change audited
--   (events.consumer_audit, the database operator's changes too);
-- - outbox.worker_lanes: each worker process's lanes, since when, last seen; the read adds
--   each lane's lag;
-- - outbox.break_glass_step_up: the database operator opens a staff member's step-up
--   challenge with a code shown on the operator's terminal, never sent; audited.
-- Every staff read takes outbox.require_read_elevation, every change a fresh step-up.

SET LOCAL ROLE outbox_owner;

-- Cancel: a pending event the operator withdraws is never published. Its record ends
-- dead-lettered with reason CANCELLED, and its dead letter is resolved 'cancelled' at once,
-- so it parks nothing.
ALTER TABLE events.outbox_records DROP CONSTRAINT outbox_records_reason_known;
ALTER TABLE events.outbox_records ADD CONSTRAINT outbox_records_reason_known CHECK (
    dead_letter_reason IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'unexpected_worker_error',
        'CANCELLED'
    )
);
ALTER TABLE events.dead_letters DROP CONSTRAINT dead_letters_resolution_known;
ALTER TABLE events.dead_letters ADD CONSTRAINT dead_letters_resolution_known CHECK (
    resolution IN ('released', 'republished', 'cancelled')
);
ALTER TABLE events.operator_audit DROP CONSTRAINT operator_audit_action_known;
ALTER TABLE events.operator_audit ADD CONSTRAINT operator_audit_action_known CHECK (
    action IN ('republish', 'release', 'cancel')
);

-- Granted to nobody: the events a filter matches, each with its current record (the live
-- one, else the newest). Every filter is optional; time bounds are on the append time,
-- p_since inclusive and p_until exclusive.
CREATE FUNCTION events.filtered_events(
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz
)
RETURNS TABLE (
    domain_event_id uuid,
    append_sequence bigint,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    appended_at timestamptz,
    record_id uuid,
    state text,
    attempt_count integer,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    resolution text
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT e.id, e.append_sequence, e.organization_id, e.event_type_code, e.contract_version,
           e.aggregate_type, e.aggregate_id, e.appended_at, r.id, r.state, r.attempt_count,
           r.published_at, r.dead_lettered_at, d.resolution
    FROM events.domain_events AS e
    CROSS JOIN LATERAL (
        SELECT c.* FROM events.outbox_records AS c
        WHERE c.domain_event_id = e.id
        ORDER BY c.state <> 'dead_lettered' DESC, c.created_at DESC, c.id DESC
        LIMIT 1
    ) AS r
    LEFT JOIN events.dead_letters AS d ON d.outbox_record_id = r.id
    WHERE (p_event_type IS NULL OR e.event_type_code = p_event_type)
      AND (p_organization_id IS NULL OR e.organization_id = p_organization_id)
      AND (p_aggregate_type IS NULL OR e.aggregate_type = p_aggregate_type)
      AND (p_aggregate_id IS NULL OR e.aggregate_id = p_aggregate_id)
      AND (p_since IS NULL OR e.appended_at >= p_since)
      AND (p_until IS NULL OR e.appended_at < p_until)
$$;

-- One page of the events a filter matches, newest first: those appended before the event
-- of append sequence p_before (None: from the newest). p_state: pending, leased, published,
-- dead_lettered (the state of the event's current record) or NULL for any.
CREATE FUNCTION events.search_events(
    p_actor uuid,
    p_state text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_before bigint,
    p_limit integer
)
RETURNS TABLE (
    domain_event_id uuid,
    append_sequence bigint,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    appended_at timestamptz,
    record_id uuid,
    state text,
    attempt_count integer,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    resolution text
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1001 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_state IS NOT NULL
       AND p_state NOT IN ('pending', 'leased', 'published', 'dead_lettered') THEN
        RAISE EXCEPTION 'p_state: pending, leased, published or dead_lettered'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT f.*
    FROM events.filtered_events(
        p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id, p_since, p_until
    ) AS f
    WHERE (p_state IS NULL OR f.state = p_state)
      AND (p_before IS NULL OR f.append_sequence < p_before)
    ORDER BY f.append_sequence DESC
    LIMIT p_limit;
END
$$;

-- Granted to nobody: the ids an action over a filter would change, as of p_as_of, in append
-- order. republish and release: the unresolved dead letters (of events appended by then);
-- cancel: the pending records (created by then). Nothing else, so a count is exact.
CREATE FUNCTION events.bulk_targets(
    p_action text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz
)
RETURNS TABLE (record_id uuid, append_sequence bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('republish', 'release', 'cancel') THEN
        RAISE EXCEPTION 'p_action: republish, release or cancel'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_as_of IS NULL THEN
        RAISE EXCEPTION 'p_as_of: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_action = 'cancel' THEN
        RETURN QUERY
        SELECT r.id, r.append_sequence
        FROM events.outbox_records AS r
        JOIN events.domain_events AS e ON e.id = r.domain_event_id
        WHERE r.state = 'pending' AND r.created_at <= p_as_of
          AND (p_event_type IS NULL OR e.event_type_code = p_event_type)
          AND (p_organization_id IS NULL OR e.organization_id = p_organization_id)
          AND (p_aggregate_type IS NULL OR e.aggregate_type = p_aggregate_type)
          AND (p_aggregate_id IS NULL OR e.aggregate_id = p_aggregate_id)
          AND (p_since IS NULL OR e.appended_at >= p_since)
          AND (p_until IS NULL OR e.appended_at < p_until)
        ORDER BY r.append_sequence;
    ELSE
        RETURN QUERY
        SELECT d.outbox_record_id, d.append_sequence
        FROM events.dead_letters AS d
        JOIN events.domain_events AS e ON e.id = d.domain_event_id
        WHERE d.resolution IS NULL AND d.dead_lettered_at <= p_as_of
          AND (p_event_type IS NULL OR e.event_type_code = p_event_type)
          AND (p_organization_id IS NULL OR e.organization_id = p_organization_id)
          AND (p_aggregate_type IS NULL OR e.aggregate_type = p_aggregate_type)
          AND (p_aggregate_id IS NULL OR e.aggregate_id = p_aggregate_id)
          AND (p_since IS NULL OR e.appended_at >= p_since)
          AND (p_until IS NULL OR e.appended_at < p_until)
        ORDER BY d.append_sequence;
    END IF;
END
$$;

-- How many events the action would change (see events.bulk_targets), as of p_as_of or, when
-- it is NULL, now: the database's clock, which wrote the rows' times. Send that as_of back
-- with the action.
CREATE FUNCTION events.count_bulk(
    p_actor uuid,
    p_action text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz
)
RETURNS TABLE (matched bigint, as_of timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_as_of timestamptz := COALESCE(p_as_of, pg_catalog.statement_timestamp());
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT pg_catalog.count(*), v_as_of
    FROM events.bulk_targets(
        p_action, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id, p_since,
        p_until, v_as_of
    );
END
$$;

-- Granted to nobody: cancel one pending record for p_actor (a staff member), audited under
-- p_idempotency_key; false when it is no longer pending (a worker took it, or it was
-- cancelled). The head of its aggregate, when it was one, is handed on.
CREATE FUNCTION events.cancel_record(
    p_actor uuid, p_elevation uuid, p_record_id uuid, p_reason text, p_idempotency_key text
)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_record events.outbox_records%ROWTYPE;
BEGIN
    -- The row lock waits for a worker's claim in flight; a claimed record is left alone.
    SELECT r.* INTO v_record FROM events.outbox_records AS r
    WHERE r.id = p_record_id
    FOR UPDATE;
    IF NOT FOUND OR v_record.state <> 'pending' THEN
        RETURN false;
    END IF;
    UPDATE events.outbox_records AS r
    SET state = 'dead_lettered', head = false, dead_lettered_at = v_now,
        dead_letter_reason = 'CANCELLED'
    WHERE r.id = p_record_id;
    INSERT INTO events.dead_letters (
        outbox_record_id, domain_event_id, organization_id, aggregate_type, aggregate_id,
        append_sequence, reason, dead_lettered_at, resolution, resolved_at, resolved_by
    ) VALUES (
        v_record.id, v_record.domain_event_id, v_record.organization_id,
        v_record.aggregate_type, v_record.aggregate_id, v_record.append_sequence, 'CANCELLED',
        v_now, 'cancelled', v_now, p_actor::text
    );
    INSERT INTO events.operator_audit (
        action, actor_id, elevation_id, dead_letter_id, domain_event_id, organization_id,
        reason, idempotency_key, occurred_at
    ) VALUES (
        'cancel', p_actor, p_elevation, v_record.id, v_record.domain_event_id,
        v_record.organization_id, p_reason, p_idempotency_key, v_now
    );
    IF v_record.head THEN
        PERFORM events.reopen_aggregate(
            v_record.organization_id, v_record.aggregate_type, v_record.aggregate_id
        );
    END IF;
    RETURN true;
END
$$;

-- Republish, release or cancel, for staff member p_actor, at most p_limit of what the filter
-- matches as of p_as_of (the preview's time: nothing that arrived since is touched), in
-- append order, one audit row each. Each item's request key is p_idempotency_key and its
-- id, so sending the same form again changes nothing more: those items count as replayed.
-- Answers what changed, what was replayed, and how many still match beyond p_limit.
CREATE FUNCTION events.bulk_repair(
    p_actor uuid,
    p_elevation uuid,
    p_action text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz,
    p_reason text,
    p_idempotency_key text,
    p_limit integer
)
RETURNS TABLE (changed integer, replayed integer, remaining bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_target record;
    v_key text;
    v_outcome text;
    v_changed integer := 0;
    v_replayed integer := 0;
    v_seen integer := 0;
    v_total bigint;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    IF p_reason IS NULL OR pg_catalog.length(p_reason) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'p_reason: 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_idempotency_key IS NULL OR pg_catalog.length(p_idempotency_key) NOT BETWEEN 1 AND 200
    THEN
        RAISE EXCEPTION 'p_idempotency_key: 1 to 200 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A replay of this form: the items it already changed no longer match, so count them.
    SELECT pg_catalog.count(*) INTO v_replayed
    FROM events.operator_audit AS a
    WHERE a.actor_id = p_actor AND a.action = p_action
      AND a.idempotency_key LIKE p_idempotency_key || ':%';
    SELECT pg_catalog.count(*) INTO v_total
    FROM events.bulk_targets(
        p_action, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id, p_since,
        p_until, p_as_of
    );
    FOR v_target IN
        SELECT t.record_id
        FROM events.bulk_targets(
            p_action, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id,
            p_since, p_until, p_as_of
        ) AS t
        LIMIT p_limit
    LOOP
        v_seen := v_seen + 1;
        v_key := p_idempotency_key || ':' || v_target.record_id::text;
        IF p_action = 'cancel' THEN
            IF events.cancel_record(p_actor, p_elevation, v_target.record_id, p_reason, v_key)
            THEN
                v_changed := v_changed + 1;
            END IF;
            CONTINUE;
        ELSIF p_action = 'republish' THEN
            SELECT r.outcome INTO v_outcome
            FROM events.republish_dead_letter(
                p_actor, v_target.record_id, gen_random_uuid(), p_reason, v_key
            ) AS r;
        ELSE
            SELECT r.outcome INTO v_outcome
            FROM events.release_dead_letter(p_actor, v_target.record_id, p_reason, v_key) AS r;
        END IF;
        IF v_outcome IN ('republished', 'released') THEN
            v_changed := v_changed + 1;
        END IF;
    END LOOP;
    UPDATE events.operator_audit AS a
    SET elevation_id = p_elevation
    WHERE p_elevation IS NOT NULL AND a.actor_id = p_actor AND a.elevation_id IS NULL
      AND a.occurred_at = pg_catalog.statement_timestamp()
      AND a.idempotency_key LIKE p_idempotency_key || ':%';
    RETURN QUERY SELECT v_changed, v_replayed, GREATEST(v_total - v_seen, 0);
END
$$;

CREATE FUNCTION events.staff_search_events(
    p_actor uuid,
    p_elevation text,
    p_state text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_before bigint,
    p_limit integer
)
RETURNS TABLE (
    domain_event_id uuid,
    append_sequence bigint,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    appended_at timestamptz,
    record_id uuid,
    state text,
    attempt_count integer,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    resolution text
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT s.* FROM events.search_events(
        p_actor, p_state, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id,
        p_since, p_until, p_before, p_limit
    ) AS s;
END
$$;

CREATE FUNCTION events.staff_count_bulk(
    p_actor uuid,
    p_elevation text,
    p_action text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz
)
RETURNS TABLE (matched bigint, as_of timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT c.* FROM events.count_bulk(
        p_actor, p_action, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id,
        p_since, p_until, p_as_of
    ) AS c;
END
$$;

CREATE FUNCTION events.staff_bulk_repair(
    p_actor uuid,
    p_elevation text,
    p_action text,
    p_event_type text,
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_since timestamptz,
    p_until timestamptz,
    p_as_of timestamptz,
    p_reason text,
    p_idempotency_key text,
    p_limit integer
)
RETURNS TABLE (changed integer, replayed integer, remaining bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY SELECT b.* FROM events.bulk_repair(
        p_actor, v_elevation, p_action, p_event_type, p_organization_id, p_aggregate_type,
        p_aggregate_id, p_since, p_until, p_as_of, p_reason, p_idempotency_key, p_limit
    ) AS b;
END
$$;

-- Consumers for staff --------------------------------------------------------------------------

-- Every change to a consumer: who (NULL: the database operator without a staff name), with
-- which elevation, why, and what (a replay's starting point and deliveries written).
CREATE TABLE events.consumer_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action text NOT NULL CONSTRAINT consumer_audit_action_known CHECK (
        action IN ('replay', 'pause', 'resume')
    ),
    consumer text NOT NULL,
    actor_id uuid,
    elevation_id uuid,
    reason text CONSTRAINT consumer_audit_reason_length CHECK (
        pg_catalog.length(reason) BETWEEN 1 AND 500
    ),
    from_sequence bigint,
    since timestamptz,
    deliveries integer,
    occurred_at timestamptz NOT NULL
);
CREATE INDEX consumer_audit_by_consumer ON events.consumer_audit (consumer, id);

-- Granted to nobody: replay (p_action 'replay'), pause or resume a consumer, audited; the
-- deliveries written (replay) or 1 when the state changed and 0 when it was already so.
CREATE FUNCTION events.operate_consumer(
    p_action text,
    p_actor uuid,
    p_elevation uuid,
    p_consumer text,
    p_from_sequence bigint,
    p_since timestamptz,
    p_reason text
)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_result integer;
BEGIN
    IF p_actor IS NOT NULL THEN
        PERFORM outbox.require_staff(p_actor);
    END IF;
    IF p_reason IS NOT NULL AND pg_catalog.length(p_reason) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'p_reason: 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_action = 'replay' THEN
        v_result := events.replay_consumer(p_consumer, p_from_sequence, p_since);
    ELSIF p_action IN ('pause', 'resume') THEN
        v_result := CASE WHEN events.set_consumer_active(p_consumer, p_action = 'resume')
                         THEN 1 ELSE 0 END;
    ELSE
        RAISE EXCEPTION 'p_action: replay, pause or resume'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_action = 'replay' OR v_result > 0 THEN
        INSERT INTO events.consumer_audit (
            action, consumer, actor_id, elevation_id, reason, from_sequence, since, deliveries,
            occurred_at
        ) VALUES (
            p_action, p_consumer, p_actor, p_elevation, p_reason, p_from_sequence, p_since,
            CASE WHEN p_action = 'replay' THEN v_result END, pg_catalog.statement_timestamp()
        );
    END IF;
    RETURN v_result;
END
$$;

CREATE FUNCTION events.staff_consumer_dead_letters(
    p_actor uuid, p_elevation text, p_consumer text, p_before bigint, p_limit integer
)
RETURNS TABLE (
    delivery_id uuid,
    delivery_sequence bigint,
    domain_event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    publication_sequence bigint,
    replay_round integer,
    attempts integer,
    reason text,
    code text,
    dead_lettered_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM events.consumer_dead_letters(p_consumer, p_before, p_limit) AS d;
END
$$;

CREATE FUNCTION events.staff_operate_consumer(
    p_actor uuid,
    p_elevation text,
    p_action text,
    p_consumer text,
    p_from_sequence bigint,
    p_since timestamptz,
    p_reason text
)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    IF p_reason IS NULL THEN
        RAISE EXCEPTION 'p_reason: 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN events.operate_consumer(
        p_action, p_actor, v_elevation, p_consumer, p_from_sequence, p_since, p_reason
    );
END
$$;

-- The workers view -------------------------------------------------------------------------------

-- One row per lane of a worker process (owner is its lease owner name, host and pid),
-- refreshed by the process every few seconds while it runs. Rows not seen for a day go.
CREATE TABLE outbox.worker_lanes (
    owner text NOT NULL CONSTRAINT worker_lanes_owner_short CHECK (
        pg_catalog.length(owner) BETWEEN 1 AND 200
    ),
    lane text NOT NULL CONSTRAINT worker_lanes_lane_known CHECK (
        lane IN ('security', 'events', 'consumers')
    ),
    started_at timestamptz NOT NULL,
    seen_at timestamptz NOT NULL,
    stopped_at timestamptz,
    PRIMARY KEY (owner, lane)
);

CREATE FUNCTION outbox.worker_heartbeat(
    p_owner text, p_lane text, p_started_at timestamptz, p_stopped boolean
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO outbox.worker_lanes AS w (owner, lane, started_at, seen_at, stopped_at)
    VALUES (
        p_owner, p_lane, p_started_at, pg_catalog.statement_timestamp(),
        CASE WHEN p_stopped THEN pg_catalog.statement_timestamp() END
    )
    ON CONFLICT (owner, lane) DO UPDATE
    SET started_at = excluded.started_at, seen_at = excluded.seen_at,
        stopped_at = excluded.stopped_at;
    DELETE FROM outbox.worker_lanes AS w
    WHERE w.seen_at < pg_catalog.statement_timestamp() - interval '1 day';
$$;

-- Every lane of every process seen in the last day, whether it runs (not stopped, and seen
-- within three of its 10-second beats), and the lane's lag: how long its oldest due work has
-- waited (security: the oldest due message; events: the oldest due record;
-- consumers: the oldest undelivered delivery of any consumer). NULL when nothing waits.
CREATE FUNCTION outbox.workers(p_actor uuid)
RETURNS TABLE (
    owner text,
    lane text,
    started_at timestamptz,
    seen_at timestamptz,
    stopped_at timestamptz,
    running boolean,
    lag_seconds double precision
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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
    WHERE m.state = 'pending' AND m.available_at <= v_now;
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

CREATE FUNCTION outbox.staff_workers(p_actor uuid, p_elevation text)
RETURNS TABLE (
    owner text,
    lane text,
    started_at timestamptz,
    seen_at timestamptz,
    stopped_at timestamptz,
    running boolean,
    lag_seconds double precision
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT w.* FROM outbox.workers(p_actor) AS w;
END
$$;

-- Break glass: a step-up the database operator hands over -------------------------------------

ALTER TABLE outbox.staff_audit DROP CONSTRAINT staff_audit_action_known;
ALTER TABLE outbox.staff_audit ADD CONSTRAINT staff_audit_action_known CHECK (
    action IN ('reissue', 'requeue', 'staff_grant', 'staff_revoke', 'break_glass_step_up')
);
ALTER TABLE outbox.staff_audit DROP CONSTRAINT staff_audit_membership_shape;
ALTER TABLE outbox.staff_audit ADD CONSTRAINT staff_audit_membership_shape CHECK (
    (action IN ('staff_grant', 'staff_revoke', 'break_glass_step_up'))
        = (target_identity_id IS NOT NULL)
);

-- Open a step-up challenge of the active staff member who signs in with p_email, with the
-- code hashed as p_code_hash, closing any open one; nothing is sent (the operator reads the
-- code to the staff member). Outcomes: opened, unknown_identity, not_staff.
CREATE FUNCTION outbox.break_glass_step_up(
    p_email text, p_challenge_id uuid, p_code_hash text, p_expires_at timestamptz,
    p_reason text
)
RETURNS TABLE (outcome text, identity_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_identity uuid := outbox.staff_identity(p_email);
BEGIN
    IF p_reason IS NULL OR pg_catalog.length(p_reason) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'p_reason: 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_identity IS NULL THEN
        RETURN QUERY SELECT 'unknown_identity'::text, NULL::uuid;
        RETURN;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM identity.staff_members AS s
        WHERE s.identity_id = v_identity AND s.revoked_at IS NULL
    ) THEN
        RETURN QUERY SELECT 'not_staff'::text, v_identity;
        RETURN;
    END IF;
    UPDATE identity.challenges AS c
    SET state = 'closed', ended_at = v_now
    WHERE c.identity_id = v_identity AND c.purpose = 'step_up' AND c.state = 'open';
    INSERT INTO identity.challenges (
        id, purpose, identity_id, identifier, channel, code_hash, created_at, expires_at
    ) VALUES (
        p_challenge_id, 'step_up', v_identity, p_email, 'email', p_code_hash, v_now,
        p_expires_at
    );
    INSERT INTO outbox.staff_audit (action, target_identity_id, console_reason, occurred_at)
    VALUES ('break_glass_step_up', v_identity, p_reason, v_now);
    RETURN QUERY SELECT 'opened'::text, v_identity;
END
$$;

-- Grants -----------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    events.filtered_events(text, uuid, text, text, timestamptz, timestamptz),
    events.search_events(
        uuid, text, text, uuid, text, text, timestamptz, timestamptz, bigint, integer
    ),
    events.bulk_targets(text, text, uuid, text, text, timestamptz, timestamptz, timestamptz),
    events.count_bulk(
        uuid, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz
    ),
    events.cancel_record(uuid, uuid, uuid, text, text),
    events.bulk_repair(
        uuid, uuid, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz, text,
        text, integer
    ),
    events.staff_search_events(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, bigint, integer
    ),
    events.staff_count_bulk(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz
    ),
    events.staff_bulk_repair(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz, text,
        text, integer
    ),
    events.operate_consumer(text, uuid, uuid, text, bigint, timestamptz, text),
    events.staff_consumer_dead_letters(uuid, text, text, bigint, integer),
    events.staff_operate_consumer(uuid, text, text, text, bigint, timestamptz, text),
    outbox.worker_heartbeat(text, text, timestamptz, boolean),
    outbox.workers(uuid),
    outbox.staff_workers(uuid, text),
    outbox.break_glass_step_up(text, uuid, text, timestamptz, text)
FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    events.staff_search_events(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, bigint, integer
    ),
    events.staff_count_bulk(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz
    ),
    events.staff_bulk_repair(
        uuid, text, text, text, uuid, text, text, timestamptz, timestamptz, timestamptz, text,
        text, integer
    ),
    events.staff_consumer_dead_letters(uuid, text, text, bigint, integer),
    events.staff_operate_consumer(uuid, text, text, text, bigint, timestamptz, text),
    outbox.staff_workers(uuid, text)
TO staff_service;

GRANT EXECUTE ON FUNCTION outbox.worker_heartbeat(text, text, timestamptz, boolean)
TO outbox_worker, events_consumer;

RESET ROLE;
