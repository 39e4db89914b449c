-- The outbox's SQL objects as a fresh `outboxctl db migrate` leaves them: tables, indexes,
-- functions, triggers and grants, in pg_dump's order. Generated, never edited: after adding a
-- migration, run `outboxctl db schema --output src/adapters/postgres/schema.sql`
-- (tests/integration/postgres/test_schema_file.py checks it). Roles are made by the
-- migrations and are cluster-wide, so they are not here.

--
-- PostgreSQL database dump
--

--
-- Name: events; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA events;

--
-- Name: identity; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA identity;

--
-- Name: inbox; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA inbox;

--
-- Name: notifications; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA notifications;

--
-- Name: outbox; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA outbox;

--
-- Name: outbox_meta; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA outbox_meta;

--
-- Name: aggregate_lock_key(uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.aggregate_lock_key(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT pg_catalog.hashtextextended(
        'events.aggregate/' || p_organization_id::text || '/' || p_aggregate_type || '/'
            || p_aggregate_id,
        0
    )
$$;

--
-- Name: append_domain_event(uuid, text, integer, text, text, text, jsonb, timestamp with time zone, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.append_domain_event(p_organization_id uuid, p_event_type text, p_contract_version integer, p_aggregate_type text, p_aggregate_id text, p_idempotency_key text, p_payload jsonb, p_occurred_at timestamp with time zone, p_trace_context text DEFAULT NULL::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $_$
DECLARE
    v_role text := CASE pg_catalog.current_setting('role')
        WHEN 'none' THEN SESSION_USER::text ELSE pg_catalog.current_setting('role') END;
    v_module text;
    v_owner text;
    v_retired_at timestamptz;
    v_published boolean;
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_id uuid;
    v_same boolean;
    v_head boolean;  -- the appended record is its aggregate's head
BEGIN
    -- The role's module, the type and its version, in one look.
    SELECT p.module_code, t.owner_module_code, t.retired_at, EXISTS (
               SELECT 1 FROM events.event_type_versions AS v
               WHERE v.event_type_code = t.code AND v.contract_version = p_contract_version
           )
    INTO v_module, v_owner, v_retired_at, v_published
    FROM events.producer_roles AS p
    LEFT JOIN events.event_types AS t ON t.code = p_event_type
    WHERE p.role_name = v_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % is not an events producer', v_role
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_organization_id IS NULL THEN
        RAISE EXCEPTION 'p_organization_id: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_event_type IS NULL THEN
        RAISE EXCEPTION 'p_event_type: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_contract_version IS NULL OR p_contract_version < 1 THEN
        RAISE EXCEPTION 'p_contract_version: a contract version is at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_aggregate_type IS NULL OR p_aggregate_type !~ '^[a-z][a-z0-9_]{0,63}$' THEN
        RAISE EXCEPTION 'p_aggregate_type: a lowercase word of up to 64 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_aggregate_id IS NULL OR pg_catalog.length(p_aggregate_id) NOT BETWEEN 1 AND 200 THEN
        RAISE EXCEPTION 'p_aggregate_id: 1 to 200 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_idempotency_key IS NULL OR pg_catalog.length(p_idempotency_key) NOT BETWEEN 1 AND 200
    THEN
        RAISE EXCEPTION 'p_idempotency_key: 1 to 200 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_payload IS NULL OR pg_catalog.jsonb_typeof(p_payload) <> 'object' THEN
        RAISE EXCEPTION 'p_payload: a JSON object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_occurred_at IS NULL OR NOT pg_catalog.isfinite(p_occurred_at) THEN
        RAISE EXCEPTION 'p_occurred_at: a finite time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_trace_context !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        RAISE EXCEPTION 'p_trace_context: a W3C traceparent (00-<trace>-<span>-<flags>)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_owner IS NULL THEN
        RAISE EXCEPTION 'p_event_type: no such event type' USING ERRCODE = 'OXE03';
    END IF;
    IF v_owner <> v_module THEN
        RAISE EXCEPTION 'p_event_type: the type belongs to another module'
            USING ERRCODE = 'insufficient_privilege';
    END IF;

    IF v_retired_at IS NULL AND v_published THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(
            events.aggregate_lock_key(p_organization_id, p_aggregate_type, p_aggregate_id)
        );
        -- One statement after the lock: in READ COMMITTED it sees every append and outcome
        -- of the aggregate committed before. An older snapshot (REPEATABLE READ, SERIALIZABLE)
        -- may miss some, so there the claim decides the head. A concurrent append of the same
        -- key waits on the key's index for the other to end, then adds nothing.
        WITH event AS (
            INSERT INTO events.domain_events AS e (
                id, organization_id, event_type_code, contract_version, producer_module_code,
                aggregate_type, aggregate_id, idempotency_key, payload, occurred_at,
                appended_at, trace_context
            ) VALUES (
                pg_catalog.gen_random_uuid(), p_organization_id, p_event_type,
                p_contract_version, v_module, p_aggregate_type, p_aggregate_id,
                p_idempotency_key, p_payload, p_occurred_at, v_now, p_trace_context
            )
            ON CONFLICT ON CONSTRAINT domain_events_idempotent DO NOTHING
            RETURNING e.id, e.append_sequence
        ), record AS (
            INSERT INTO events.outbox_records (
                id, domain_event_id, organization_id, aggregate_type, aggregate_id,
                append_sequence, available_at, created_at, head
            )
            SELECT pg_catalog.gen_random_uuid(), event.id, p_organization_id, p_aggregate_type,
                   p_aggregate_id, event.append_sequence, v_now, v_now,
                   pg_catalog.current_setting('transaction_isolation') = 'read committed'
                   AND NOT EXISTS (
                       SELECT 1 FROM events.outbox_records AS r
                       WHERE r.state IN ('pending', 'leased')
                         AND r.organization_id = p_organization_id
                         AND r.aggregate_type = p_aggregate_type
                         AND r.aggregate_id = p_aggregate_id
                   ) AND NOT EXISTS (
                       SELECT 1 FROM events.dead_letters AS d
                       WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
                         AND d.aggregate_type = p_aggregate_type
                         AND d.aggregate_id = p_aggregate_id
                   )
            FROM event
            RETURNING domain_event_id, head
        )
        SELECT event.id, record.head INTO v_id, v_head
        FROM event LEFT JOIN record ON record.domain_event_id = event.id;

        IF v_id IS NOT NULL THEN
            IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
                INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
                VALUES (p_organization_id, p_aggregate_type, p_aggregate_id)
                ON CONFLICT DO NOTHING;
                v_head := true;  -- the next claim decides the head: wake the lane
            END IF;
            -- Behind a live record the event waits for that record's publication, whose
            -- record hands the head on and notifies then (0061).
            IF v_head THEN
                PERFORM pg_catalog.pg_notify('events_work', '');
            END IF;
            RETURN v_id;
        END IF;
    END IF;

    -- The key was used before: a replay answers the first id, even once the type is retired.
    SELECT e.id,
           e.event_type_code = p_event_type AND e.contract_version = p_contract_version
           AND e.aggregate_type = p_aggregate_type AND e.aggregate_id = p_aggregate_id
           AND e.payload = p_payload AND e.occurred_at = p_occurred_at
    INTO v_id, v_same
    FROM events.domain_events AS e
    WHERE e.organization_id = p_organization_id AND e.producer_module_code = v_module
      AND e.idempotency_key = p_idempotency_key;
    IF NOT FOUND THEN
        IF v_retired_at IS NOT NULL THEN
            RAISE EXCEPTION 'p_event_type: the event type is retired' USING ERRCODE = 'OXE02';
        END IF;
        RAISE EXCEPTION 'p_contract_version: not published for this event type'
            USING ERRCODE = 'OXE03';
    END IF;
    IF NOT v_same THEN
        RAISE EXCEPTION 'p_idempotency_key: already used for an event with other content'
            USING ERRCODE = 'OXE01';
    END IF;
    RETURN v_id;
END
$_$;

--
-- Name: backlog(uuid, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.backlog(p_actor uuid, p_limit integer) RETURNS TABLE(organization_id uuid, pending bigint, leased bigint, oldest_due_age_seconds double precision, dead_letters bigint, parked_aggregates bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT b.*
    FROM events.count_backlog() AS b
    ORDER BY b.pending + b.leased DESC, b.dead_letters DESC, b.organization_id
    LIMIT p_limit;
END
$$;

--
-- Name: backlog_metrics(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.backlog_metrics() RETURNS TABLE(organization text, pending bigint, leased bigint, oldest_due_age_seconds double precision, dead_letters bigint, parked_aggregates bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH ranked AS (
        SELECT b.*,
               pg_catalog.row_number() OVER (
                   ORDER BY b.pending + b.leased DESC, b.dead_letters DESC, b.organization_id
               ) AS rank
        FROM events.count_backlog() AS b
    )
    SELECT r.organization_id::text, r.pending, r.leased, r.oldest_due_age_seconds,
           r.dead_letters, r.parked_aggregates
    FROM ranked AS r
    WHERE r.rank <= 10
    UNION ALL
    SELECT 'other',
           COALESCE(pg_catalog.sum(r.pending), 0)::bigint,
           COALESCE(pg_catalog.sum(r.leased), 0)::bigint,
           pg_catalog.max(r.oldest_due_age_seconds),
           COALESCE(pg_catalog.sum(r.dead_letters), 0)::bigint,
           COALESCE(pg_catalog.sum(r.parked_aggregates), 0)::bigint
    FROM ranked AS r
    WHERE r.rank > 10
$$;

--
-- Name: bulk_repair(uuid, uuid, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone, text, text, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.bulk_repair(p_actor uuid, p_elevation uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer) RETURNS TABLE(changed integer, replayed integer, remaining bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: bulk_targets(text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.bulk_targets(p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) RETURNS TABLE(record_id uuid, append_sequence bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: calling_module(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.calling_module() RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_role text := CASE pg_catalog.current_setting('role')
        WHEN 'none' THEN session_user::text ELSE pg_catalog.current_setting('role')
    END;
    v_module text;
BEGIN
    SELECT r.module_code INTO v_module FROM events.producer_roles AS r WHERE r.role_name = v_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % runs no module''s consumers', v_role
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_module;
END
$$;

--
-- Name: cancel_record(uuid, uuid, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.cancel_record(p_actor uuid, p_elevation uuid, p_record_id uuid, p_reason text, p_idempotency_key text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: check_processing_attempt(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.check_processing_attempt() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF EXISTS (
        SELECT 1
        FROM inserted AS n
        LEFT JOIN LATERAL (
            SELECT d.state, d.lease_token, d.lease_expires_at, d.attempt_count
            FROM events.consumer_deliveries AS d
            WHERE d.id = n.delivery_id
            OFFSET 0
        ) AS d ON true
        WHERE d.state IS DISTINCT FROM 'leased' OR d.lease_token IS DISTINCT FROM n.lease_token
           OR d.lease_expires_at <= pg_catalog.statement_timestamp()
           OR n.attempt <> d.attempt_count + 1
    ) THEN
        RAISE EXCEPTION 'a processing attempt must be its delivery''s next one, under its live lease'
            USING ERRCODE = 'integrity_constraint_violation',
                  SCHEMA = 'events', TABLE = 'consumer_processing_attempts',
                  CONSTRAINT = 'consumer_processing_attempts_in_sequence';
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: claim_consumer_deliveries(text, text, integer, double precision, double precision); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision DEFAULT NULL::double precision) RETURNS TABLE(delivery_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, publication_sequence bigint, replay_round integer, payload jsonb, occurred_at timestamp with time zone, trace_context text, attempt_count integer, max_attempts integer, lease_token uuid, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_organizations uuid[];
    v_share integer;
    v_ids uuid[];
    v_share_filled boolean;  -- an organization gave its whole share: it may have more
    -- A recent claim's lower bound (p_window_seconds): only what became claimable since.
    v_since timestamptz;
    v_sort text;  -- the caller's enable_sort, while the recent claim's scan runs without it
    v_window_ids uuid[];
    v_window_orgs uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its process' USING ERRCODE = 'invalid_parameter_value';
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
    v_consumer := events.own_consumer(p_consumer);
    IF NOT v_consumer.active THEN
        RETURN;
    END IF;

    -- A recent claim: the oldest deliveries that became claimable within the window, in
    -- claim order off `consumer_deliveries_claim_order` (a range whose dead versions below
    -- the window it never reads), then an equal share per organization by rank among them,
    -- locked by primary key. More due deliveries than it reads come back as a full batch,
    -- and the runner's next claim is full.
    IF p_window_seconds IS NOT NULL THEN
        v_since := v_now - pg_catalog.make_interval(secs => p_window_seconds);
        -- After an analyze under a held horizon, which samples no live delivery, every
        -- partial index over live deliveries looks empty, and the planner would as soon read
        -- another one whole and sort; so this statement alone runs without sorts, which it
        -- never needs: the index is in the order it asks for (as the events claim's, 0058).
        v_sort := pg_catalog.current_setting('enable_sort');
        PERFORM pg_catalog.set_config('enable_sort', 'off', true);
        SELECT COALESCE(pg_catalog.array_agg(w.id), '{}'),
               COALESCE(pg_catalog.array_agg(w.organization_id), '{}')
        INTO v_window_ids, v_window_orgs
        FROM (
            SELECT d.id, d.organization_id
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = v_consumer.id
              AND d.state IN ('pending', 'leased')
              AND d.claimable_at >= v_since AND d.claimable_at <= v_now
            ORDER BY d.claimable_at, d.delivery_sequence
            LIMIT 8::bigint * p_limit
        ) AS w;
        PERFORM pg_catalog.set_config('enable_sort', v_sort, true);

        -- Among them an equal share per organization, by rank, locked by primary key.
        SELECT COALESCE(pg_catalog.array_agg(l.id ORDER BY l.ord), '{}') INTO v_ids
        FROM (
            SELECT r.id, c.ord
            FROM (
                SELECT t.id, pg_catalog.row_number() OVER (ORDER BY t.rank, t.pos) AS ord
                FROM (
                    SELECT u.id, u.pos, pg_catalog.row_number() OVER (
                               PARTITION BY u.organization_id ORDER BY u.pos
                           ) AS rank
                    FROM ROWS FROM (
                        pg_catalog.unnest(v_window_ids), pg_catalog.unnest(v_window_orgs)
                    ) WITH ORDINALITY AS u (id, organization_id, pos)
                ) AS t
            ) AS c
            JOIN events.consumer_deliveries AS r ON r.id = c.id
            -- Still due once locked; a CASE, which implies no partial index's predicate.
            WHERE CASE WHEN r.state IN ('pending', 'leased') THEN r.claimable_at <= v_now
                       ELSE false END
            ORDER BY c.ord
            LIMIT p_limit
            FOR UPDATE OF r SKIP LOCKED
        ) AS l;
    ELSE
        -- Organizations with due deliveries, by a loose index scan that reads each organization's
        -- entries down from now, where its newest due deliveries are: below them lie the dead
        -- versions a held horizon keeps, which a scan from the bottom would walk first. One probe
        -- each, from a random organization down, then from the highest down to it.
        WITH RECURSIVE from_start AS (
            (SELECT d.organization_id FROM events.consumer_deliveries AS d
             WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
               AND d.organization_id <= v_start
             ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            UNION ALL
            SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                    WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                      AND d.organization_id < a.organization_id
                    ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
            FROM from_start AS a WHERE a.organization_id IS NOT NULL
        )
        SELECT pg_catalog.array_agg(o.organization_id) INTO v_organizations
        FROM (SELECT a.organization_id FROM from_start AS a WHERE a.organization_id IS NOT NULL
              LIMIT p_limit) AS o;
        v_organizations := COALESCE(v_organizations, '{}');
        IF pg_catalog.cardinality(v_organizations) < p_limit THEN
            WITH RECURSIVE from_top AS (
                (SELECT d.organization_id FROM events.consumer_deliveries AS d
                 WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                   AND d.organization_id > v_start
                 ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
                UNION ALL
                SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                        WHERE d.consumer_id = v_consumer.id AND d.claimable_at <= v_now
                          AND d.organization_id < b.organization_id AND d.organization_id > v_start
                        ORDER BY d.organization_id DESC, d.claimable_at DESC LIMIT 1)
                FROM from_top AS b WHERE b.organization_id IS NOT NULL
            )
            SELECT v_organizations || COALESCE(pg_catalog.array_agg(o.organization_id), '{}')
            INTO v_organizations
            FROM (SELECT b.organization_id FROM from_top AS b
                  WHERE b.organization_id IS NOT NULL
                  LIMIT p_limit - pg_catalog.cardinality(v_organizations)) AS o;
        END IF;
        IF pg_catalog.cardinality(v_organizations) = 0 THEN
            RETURN;
        END IF;

        -- An equal share for each organization, then what is left in claim order.
        v_share := p_limit / pg_catalog.cardinality(v_organizations);
        -- (A share names no state: a claimable_at is set exactly while a delivery is pending or
        -- leased, and naming the state would let it read the claim order's index instead.)
        SELECT COALESCE(pg_catalog.array_agg(p.id), '{}'), COALESCE(pg_catalog.max(p.taken), 0) >= v_share
        INTO v_ids, v_share_filled
        FROM (
            SELECT x.id, pg_catalog.count(*) OVER (PARTITION BY o.organization_id) AS taken
            FROM pg_catalog.unnest(v_organizations) AS o (organization_id)
            CROSS JOIN LATERAL (
                SELECT d.id
                FROM events.consumer_deliveries AS d
                WHERE d.consumer_id = v_consumer.id
                  AND d.organization_id = o.organization_id
                  AND d.claimable_at <= v_now
                ORDER BY d.claimable_at, d.delivery_sequence
                LIMIT v_share
                FOR UPDATE SKIP LOCKED
            ) AS x
        ) AS p;
        -- The fill can find something only when the probes stopped before they had seen every
        -- organization, or one gave its whole share.
        IF pg_catalog.cardinality(v_ids) < p_limit
            AND (pg_catalog.cardinality(v_organizations) >= p_limit OR v_share_filled)
        THEN
            SELECT v_ids || COALESCE(pg_catalog.array_agg(x.id), '{}') INTO v_ids
            FROM (
                SELECT d.id
                FROM events.consumer_deliveries AS d
                WHERE d.consumer_id = v_consumer.id
                  AND d.state IN ('pending', 'leased')
                  AND d.claimable_at <= v_now
                  AND d.id <> ALL (v_ids)
                ORDER BY d.claimable_at, d.delivery_sequence
                LIMIT p_limit - pg_catalog.cardinality(v_ids)
                FOR UPDATE SKIP LOCKED
            ) AS x;
        END IF;

    END IF;

    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF pg_catalog.cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.consumer_deliveries AS d
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_now + pg_catalog.make_interval(secs => p_lease_seconds)
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE d.id = ANY (v_ids)
          AND CASE WHEN d.state IN ('pending', 'leased') THEN d.claimable_at <= v_now
                   ELSE false END
        RETURNING d.*
    )
    SELECT t.id, e.id, e.organization_id, e.event_type_code, e.contract_version,
           e.aggregate_type, e.aggregate_id, e.append_sequence, t.publication_sequence,
           t.replay_round, e.payload, e.occurred_at, e.trace_context, t.attempt_count,
           v_consumer.max_attempts, t.lease_token, t.lease_expires_at
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.delivery_sequence;
END
$$;

--
-- Name: claim_outbox_batch(text, integer, double precision, double precision); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision DEFAULT NULL::double precision) RETURNS TABLE(record_id uuid, event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, payload jsonb, occurred_at timestamp with time zone, appended_at timestamp with time zone, attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_vacancy record;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_org uuid;
    v_next uuid;
    v_wrapped boolean := false;
    v_examined integer := 0;
    v_orgs uuid[] := '{}';
    v_share integer;
    v_ids uuid[];
    v_soonest timestamptz;
    -- With v_org, where the next probe starts: after v_org's heads ('infinity'), or at
    -- v_org's own heads once the loop wrapped to the lowest id ('-infinity'), so that an
    -- organization whose id is the nil UUID is visited too.
    v_after timestamptz := 'infinity';
    v_all_seen boolean := false;  -- the loop below visited every organization with a head
    v_share_filled boolean;  -- an organization gave its whole share: it may have more
    -- A recent claim's lower bound (p_window_seconds): only what became claimable since.
    v_since timestamptz := '-infinity';
    v_sort text;  -- the caller's enable_sort, while the recent claim's scan runs without it
    v_window_ids uuid[];
    v_window_orgs uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0
       OR p_lease_seconds IN ('NaN', 'Infinity') THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_window_seconds IS NOT NULL AND NOT (p_window_seconds > 0 AND p_window_seconds <= 3600) THEN
        RAISE EXCEPTION 'p_window_seconds: from 0 to 3600 seconds, or NULL for a full claim'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);
    IF p_window_seconds IS NOT NULL THEN
        v_since := v_now - pg_catalog.make_interval(secs => p_window_seconds);
    END IF;

    FOR v_vacancy IN
        SELECT v.organization_id, v.aggregate_type, v.aggregate_id
        FROM events.head_vacancies AS v
        WHERE v.noted_at >= v_since
        ORDER BY v.noted_at
        LIMIT 4 * p_limit
        FOR UPDATE SKIP LOCKED
    LOOP
        IF pg_catalog.pg_try_advisory_xact_lock(events.aggregate_lock_key(
            v_vacancy.organization_id, v_vacancy.aggregate_type, v_vacancy.aggregate_id
        )) THEN
            PERFORM events.promote_head(
                v_vacancy.organization_id, v_vacancy.aggregate_type, v_vacancy.aggregate_id
            );
            DELETE FROM events.head_vacancies AS v
            WHERE v.organization_id = v_vacancy.organization_id
              AND v.aggregate_type = v_vacancy.aggregate_type
              AND v.aggregate_id = v_vacancy.aggregate_id;
        END IF;
    END LOOP;

    -- A recent claim: the oldest heads that became claimable within the window, in claim
    -- order off `heads_due` (a range whose dead versions below the window it never reads;
    -- the order keeps the planner on it whatever the statistics say, as the fill), then an
    -- equal share per organization by rank among them, locked by primary key. More due
    -- heads than it reads come back as a full batch, and the worker's next claim is full.
    IF p_window_seconds IS NOT NULL THEN
        -- The oldest heads that became claimable within the window, in claim order off
        -- `heads_due`. After an analyze under a held horizon, which samples no live head,
        -- every partial index over heads looks empty, and the planner would as soon read
        -- another one whole and sort (`one_head_per_aggregate`, filtered: every dead head);
        -- so this statement alone runs without sorts, which it never needs: the index is in
        -- the order it asks for.
        v_sort := pg_catalog.current_setting('enable_sort');
        PERFORM pg_catalog.set_config('enable_sort', 'off', true);
        SELECT COALESCE(pg_catalog.array_agg(d.id), '{}'),
               COALESCE(pg_catalog.array_agg(d.organization_id), '{}')
        INTO v_window_ids, v_window_orgs
        FROM (
            SELECT w.id, w.organization_id
            FROM events.outbox_records AS w
            WHERE w.head AND w.state IN ('pending', 'leased')
              AND w.claimable_at >= v_since AND w.claimable_at <= v_now
            ORDER BY w.claimable_at, w.append_sequence
            LIMIT 8 * p_limit
        ) AS d;
        PERFORM pg_catalog.set_config('enable_sort', v_sort, true);

        -- Among them an equal share per organization, by rank, locked by primary key.
        SELECT COALESCE(pg_catalog.array_agg(l.id ORDER BY l.ord), '{}') INTO v_ids
        FROM (
            SELECT r.id, c.ord
            FROM (
                SELECT t.id, pg_catalog.row_number() OVER (ORDER BY t.rank, t.pos) AS ord
                FROM (
                    SELECT u.id, u.pos, pg_catalog.row_number() OVER (
                               PARTITION BY u.organization_id ORDER BY u.pos
                           ) AS rank
                    FROM ROWS FROM (
                        pg_catalog.unnest(v_window_ids), pg_catalog.unnest(v_window_orgs)
                    ) WITH ORDINALITY AS u (id, organization_id, pos)
                ) AS t
            ) AS c
            JOIN events.outbox_records AS r ON r.id = c.id
            -- Still a due head once locked; a CASE, which implies no partial index's predicate.
            WHERE CASE WHEN r.head THEN r.claimable_at <= v_now ELSE false END
            ORDER BY c.ord
            LIMIT p_limit
            FOR UPDATE OF r SKIP LOCKED
        ) AS l;
    ELSE

        -- The organizations with a due head, from a random one on, wrapping around once.
        v_org := v_start;
        LOOP
            EXIT WHEN pg_catalog.cardinality(v_orgs) >= p_limit OR v_examined >= 4 * p_limit;
            -- The next organization and its soonest head, in one probe of the index.
            SELECT r.organization_id, r.claimable_at INTO v_next, v_soonest
            FROM events.outbox_records AS r
            WHERE r.head AND (r.organization_id, r.claimable_at) > (v_org, v_after)
            ORDER BY r.organization_id, r.claimable_at
            LIMIT 1;
            IF v_next IS NULL THEN
                v_all_seen := v_wrapped;
                EXIT WHEN v_wrapped;
                v_wrapped := true;
                v_org := '00000000-0000-0000-0000-000000000000';  -- the lowest id, itself included
                v_after := '-infinity';
                CONTINUE;
            END IF;
            v_all_seen := v_wrapped AND v_next > v_start;
            EXIT WHEN v_all_seen;
            v_examined := v_examined + 1;
            IF v_soonest <= v_now THEN
                v_orgs := v_orgs || v_next;
            END IF;
            v_org := v_next;
            v_after := 'infinity';
        END LOOP;

        -- No due organization among those visited: the fill below still finds any due head
        -- (when the loop stopped before it had seen every organization).
        v_share := (p_limit + pg_catalog.cardinality(v_orgs) - 1)
            / GREATEST(pg_catalog.cardinality(v_orgs), 1);

        -- An equal share per organization, by rank: every organization's oldest first.
        SELECT COALESCE(pg_catalog.array_agg(s.id), '{}'),
               COALESCE(pg_catalog.bool_or(s.filled), false)
        INTO v_ids, v_share_filled
        FROM (
            SELECT t.id, t.rank >= v_share AS filled
            FROM (
                SELECT c.id, c.claimable_at, c.append_sequence,
                       pg_catalog.row_number() OVER (
                           PARTITION BY c.organization_id ORDER BY c.claimable_at, c.append_sequence
                       ) AS rank
                FROM pg_catalog.unnest(v_orgs) AS o (id)
                CROSS JOIN LATERAL (
                    SELECT r.id, r.organization_id, r.claimable_at, r.append_sequence
                    FROM events.outbox_records AS r
                    WHERE r.head AND r.organization_id = o.id AND r.claimable_at <= v_now
                    ORDER BY r.claimable_at, r.append_sequence
                    LIMIT v_share
                    FOR UPDATE SKIP LOCKED
                ) AS c
            ) AS t
            ORDER BY t.rank, t.claimable_at, t.append_sequence
            LIMIT p_limit
        ) AS s;

        -- The rest oldest first. SKIP LOCKED does not skip this transaction's own locks, so the
        -- shares already taken are left out by id. Only when it can find something: not when
        -- every organization was seen and none gave its whole share (the shares took every due
        -- head). `state` names the index this scan alone may read (0054).
        IF pg_catalog.cardinality(v_ids) < p_limit AND (v_share_filled OR NOT v_all_seen) THEN
            SELECT v_ids || COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
            FROM (
                SELECT r.id
                FROM events.outbox_records AS r
                WHERE r.head AND r.state IN ('pending', 'leased') AND r.claimable_at <= v_now
                  AND r.id <> ALL (v_ids)
                ORDER BY r.claimable_at, r.append_sequence
                LIMIT p_limit - pg_catalog.cardinality(v_ids)
                FOR UPDATE SKIP LOCKED
            ) AS f;
        END IF;
    END IF;

    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF pg_catalog.cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.outbox_records AS r
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_lease_expires_at
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE r.id = ANY (v_ids)
          AND CASE WHEN r.head THEN r.claimable_at <= v_now ELSE false END
        RETURNING r.*
    )
    SELECT t.id, e.id, t.organization_id, e.event_type_code, e.contract_version,
           t.aggregate_type, t.aggregate_id, t.append_sequence, e.payload, e.occurred_at,
           e.appended_at, t.attempt_count, t.lease_token, t.lease_expires_at, e.trace_context
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.organization_id, t.append_sequence;
END
$$;

--
-- Name: consumer_aggregate_lock_key(uuid, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.consumer_aggregate_lock_key(p_consumer_id uuid, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) RETURNS bigint
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT pg_catalog.hashtextextended(
        'events.aggregate:' || p_consumer_id::text || '/' || p_organization_id::text || '/'
            || p_aggregate_type || '/' || p_aggregate_id,
        0
    )
$$;

--
-- Name: consumer_dead_letters(text, bigint, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.consumer_dead_letters(p_consumer text, p_before bigint DEFAULT NULL::bigint, p_limit integer DEFAULT 50) RETURNS TABLE(delivery_id uuid, delivery_sequence bigint, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, publication_sequence bigint, replay_round integer, attempts integer, reason text, code text, dead_lettered_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_consumer_id uuid;
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'p_limit: expected 1 to 1000' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT c.id INTO v_consumer_id FROM events.consumers AS c WHERE c.code = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT d.id, d.delivery_sequence, d.domain_event_id, d.organization_id, e.event_type_code,
           e.contract_version, d.publication_sequence, d.replay_round, d.attempt_count,
           d.dead_letter_reason, d.dead_letter_code, d.dead_lettered_at
    FROM events.consumer_deliveries AS d
    JOIN events.domain_events AS e ON e.id = d.domain_event_id
    WHERE d.consumer_id = v_consumer_id AND d.state = 'dead_lettered'
      AND (p_before IS NULL OR d.delivery_sequence < p_before)
    ORDER BY d.delivery_sequence DESC
    LIMIT p_limit;
END
$$;

--
-- Name: consumer_lag(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.consumer_lag() RETURNS TABLE(consumer text, owner_module text, active boolean, ordered boolean, max_attempts integer, replay_round integer, subscriptions text[], events_behind bigint, oldest_undelivered_seconds double precision, dead_letters bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT c.code, c.owner_module_code, c.active, c.ordered, c.max_attempts, c.replay_round,
           ARRAY(
               SELECT s.event_type_code || ':' || s.min_version || '-' || s.max_version
               FROM events.consumer_subscriptions AS s
               WHERE s.consumer_id = c.id
               ORDER BY s.event_type_code
           ),
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')
              AND d.created_at > '-infinity'),  -- the age index (0055)
           (SELECT pg_catalog.date_part('epoch',
                       pg_catalog.statement_timestamp() - pg_catalog.min(d.created_at))
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')
              AND d.created_at > '-infinity'),  -- the age index (0055)
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state = 'dead_lettered')
    FROM events.consumers AS c
    ORDER BY c.code
$$;

--
-- Name: consumer_lock_key(uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.consumer_lock_key(p_consumer_id uuid) RETURNS bigint
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT pg_catalog.hashtextextended('events.consumer:' || p_consumer_id::text, 0)
$$;

--
-- Name: count_backlog(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.count_backlog() RETURNS TABLE(organization_id uuid, pending bigint, leased bigint, oldest_due_age_seconds double precision, dead_letters bigint, parked_aggregates bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH live AS (
        SELECT r.organization_id,
               pg_catalog.count(*) FILTER (WHERE r.state = 'pending') AS pending,
               pg_catalog.count(*) FILTER (WHERE r.state = 'leased') AS leased
        FROM events.outbox_records AS r
        WHERE r.state IN ('pending', 'leased')
        GROUP BY r.organization_id
    ), due AS (
        SELECT r.organization_id, pg_catalog.min(r.claimable_at) AS oldest
        FROM events.outbox_records AS r
        WHERE r.state = 'pending' AND r.claimable_at <= pg_catalog.statement_timestamp()
          AND NOT EXISTS (
              SELECT 1 FROM events.dead_letters AS d
              WHERE d.resolution IS NULL AND d.organization_id = r.organization_id
                AND d.aggregate_type = r.aggregate_type AND d.aggregate_id = r.aggregate_id
                AND d.append_sequence < r.append_sequence
          )
        GROUP BY r.organization_id
    ), dead AS (
        SELECT d.organization_id,
               pg_catalog.count(*) AS dead_letters,
               pg_catalog.count(DISTINCT (d.aggregate_type, d.aggregate_id)) AS parked
        FROM events.dead_letters AS d
        WHERE d.resolution IS NULL
        GROUP BY d.organization_id
    ), organizations AS (
        SELECT l.organization_id FROM live AS l
        UNION
        SELECT d.organization_id FROM dead AS d
    )
    SELECT o.organization_id,
           COALESCE(l.pending, 0),
           COALESCE(l.leased, 0),
           pg_catalog.date_part('epoch', pg_catalog.statement_timestamp() - u.oldest),
           COALESCE(d.dead_letters, 0),
           COALESCE(d.parked, 0)
    FROM organizations AS o
    LEFT JOIN live AS l ON l.organization_id = o.organization_id
    LEFT JOIN due AS u ON u.organization_id = o.organization_id
    LEFT JOIN dead AS d ON d.organization_id = o.organization_id
$$;

--
-- Name: count_bulk(uuid, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.count_bulk(p_actor uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) RETURNS TABLE(matched bigint, as_of timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: event_attempts(uuid, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.event_attempts(p_actor uuid, p_event_id uuid) RETURNS TABLE(outbox_record_id uuid, attempt integer, counted boolean, outcome text, failure_class text, code text, target text, recorded_at timestamp with time zone, retry_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT a.outbox_record_id, a.attempt, a.counted, a.outcome, a.failure_class, a.code,
           a.target, a.recorded_at, a.retry_at
    FROM events.publication_attempts AS a
    JOIN events.outbox_records AS r ON r.id = a.outbox_record_id
    WHERE r.domain_event_id = p_event_id
    ORDER BY a.id;
END
$$;

--
-- Name: event_detail(uuid, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.event_detail(p_actor uuid, p_event_id uuid) RETURNS TABLE(id uuid, organization_id uuid, event_type text, contract_version integer, producer_module text, aggregate_type text, aggregate_id text, append_sequence bigint, occurred_at timestamp with time zone, appended_at timestamp with time zone, payload_bytes integer, trace_context text, publication_sequence bigint, published_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT e.id, e.organization_id, e.event_type_code, e.contract_version,
           e.producer_module_code, e.aggregate_type, e.aggregate_id, e.append_sequence,
           e.occurred_at, e.appended_at, pg_catalog.octet_length(e.payload::text),
           e.trace_context, p.publication_sequence, p.published_at
    FROM events.domain_events AS e
    LEFT JOIN events.domain_event_publications AS p ON p.domain_event_id = e.id
    WHERE e.id = p_event_id;
END
$$;

--
-- Name: event_records(uuid, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.event_records(p_actor uuid, p_event_id uuid) RETURNS TABLE(id uuid, state text, attempt_count integer, republish_of uuid, created_at timestamp with time zone, available_at timestamp with time zone, lease_owner text, lease_expires_at timestamp with time zone, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, dead_letter_reason text, resolution text, resolved_at timestamp with time zone, resolved_by text, republished_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT r.id, r.state, r.attempt_count, r.republish_of, r.created_at, r.available_at,
           r.lease_owner, r.lease_expires_at, r.published_at, r.dead_lettered_at,
           r.dead_letter_reason, d.resolution, d.resolved_at, d.resolved_by, d.republished_as
    FROM events.outbox_records AS r
    LEFT JOIN events.dead_letters AS d ON d.outbox_record_id = r.id
    WHERE r.domain_event_id = p_event_id
    ORDER BY r.created_at, r.id;
END
$$;

--
-- Name: fan_out_publication(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.fan_out_publication() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumers uuid[];
    v_aggregate_keys bigint[];
    v_key bigint;
    v_consumer_id uuid;
    v_written integer;
BEGIN
    SELECT pg_catalog.array_agg(DISTINCT s.consumer_id ORDER BY s.consumer_id)
    INTO v_consumers
    FROM published AS p
    JOIN events.consumer_subscriptions AS s
        ON s.event_type_code = p.event_type_code
       AND p.contract_version BETWEEN s.min_version AND s.max_version;
    IF v_consumers IS NULL THEN
        RETURN NULL;  -- nobody subscribes to what this statement published
    END IF;

    FOREACH v_consumer_id IN ARRAY v_consumers LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer_id));
    END LOOP;
    SELECT pg_catalog.array_agg(DISTINCT events.consumer_aggregate_lock_key(
               c.id, e.organization_id, e.aggregate_type, e.aggregate_id
           ) ORDER BY events.consumer_aggregate_lock_key(
               c.id, e.organization_id, e.aggregate_type, e.aggregate_id
           ))
    INTO v_aggregate_keys
    FROM published AS p
    JOIN events.domain_events AS e ON e.id = p.domain_event_id
    JOIN events.consumer_subscriptions AS s
        ON s.event_type_code = p.event_type_code
       AND p.contract_version BETWEEN s.min_version AND s.max_version
    JOIN events.consumers AS c ON c.id = s.consumer_id
    WHERE c.ordered;
    FOREACH v_key IN ARRAY COALESCE(v_aggregate_keys, '{}') LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock(v_key);
    END LOOP;

    INSERT INTO events.consumer_deliveries (
        consumer_id, domain_event_id, replay_round, organization_id, aggregate_type,
        aggregate_id, publication_sequence, state, available_at, created_at
    )
    SELECT f.consumer_id, f.domain_event_id, f.replay_round, f.organization_id,
           f.aggregate_type, f.aggregate_id, f.publication_sequence,
           CASE WHEN f.ordered AND (f.nth > 1 OR (
               -- The aggregate's newest delivery is live exactly when any is (0056).
               SELECT d.state FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = f.consumer_id
                 AND d.organization_id = f.organization_id
                 AND d.aggregate_type = f.aggregate_type
                 AND d.aggregate_id = f.aggregate_id
               ORDER BY d.delivery_sequence DESC
               LIMIT 1
           ) IN ('waiting', 'pending', 'leased')) THEN 'waiting' ELSE 'pending' END,
           v_now, v_now
    FROM (
        SELECT c.id AS consumer_id, c.ordered, c.replay_round, e.id AS domain_event_id,
               e.organization_id, e.aggregate_type, e.aggregate_id, p.publication_sequence,
               pg_catalog.row_number() OVER (
                   PARTITION BY c.id, e.organization_id, e.aggregate_type, e.aggregate_id
                   ORDER BY p.publication_sequence
               ) AS nth
        FROM published AS p
        JOIN events.domain_events AS e ON e.id = p.domain_event_id
        JOIN events.consumer_subscriptions AS s
            ON s.event_type_code = p.event_type_code
           AND p.contract_version BETWEEN s.min_version AND s.max_version
        JOIN events.consumers AS c ON c.id = s.consumer_id
    ) AS f
    ORDER BY f.publication_sequence, f.consumer_id
    ON CONFLICT ON CONSTRAINT consumer_deliveries_once_per_round DO NOTHING;
    GET DIAGNOSTICS v_written = ROW_COUNT;
    IF v_written > 0 THEN
        PERFORM pg_catalog.pg_notify('consumers_work', '');
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: filtered_events(text, uuid, text, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.filtered_events(p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone) RETURNS TABLE(domain_event_id uuid, append_sequence bigint, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, appended_at timestamp with time zone, record_id uuid, state text, attempt_count integer, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, resolution text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: list_dead_letters(uuid, uuid, boolean, uuid, uuid, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.list_dead_letters(p_actor uuid, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(dead_letter_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, reason text, attempt_count integer, dead_lettered_at timestamp with time zone, resolution text, resolved_at timestamp with time zone, resolved_by text, republished_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_unresolved_only IS NULL THEN
        RAISE EXCEPTION 'p_unresolved_only: true or false'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'p_after, p_before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT d.dead_lettered_at, d.outbox_record_id INTO v_cursor_at, v_cursor_id
        FROM events.dead_letters AS d
        WHERE d.outbox_record_id = COALESCE(p_after, p_before);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no dead letter has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    WITH page AS (
        SELECT d.*
        FROM events.dead_letters AS d
        WHERE (p_organization_id IS NULL OR d.organization_id = p_organization_id)
          AND (NOT p_unresolved_only OR d.resolution IS NULL)
          AND (v_cursor_id IS NULL
               OR (p_before IS NULL
                   AND (d.dead_lettered_at, d.outbox_record_id) < (v_cursor_at, v_cursor_id))
               OR (p_before IS NOT NULL
                   AND (d.dead_lettered_at, d.outbox_record_id) > (v_cursor_at, v_cursor_id)))
        ORDER BY
            CASE WHEN p_before IS NULL THEN d.dead_lettered_at END DESC,
            CASE WHEN p_before IS NULL THEN d.outbox_record_id END DESC,
            CASE WHEN p_before IS NOT NULL THEN d.dead_lettered_at END,
            CASE WHEN p_before IS NOT NULL THEN d.outbox_record_id END
        LIMIT p_limit
    )
    SELECT p.outbox_record_id, p.domain_event_id, p.organization_id, e.event_type_code,
           e.contract_version, p.aggregate_type, p.aggregate_id, p.reason, r.attempt_count,
           p.dead_lettered_at, p.resolution, p.resolved_at, p.resolved_by, p.republished_as
    FROM page AS p
    JOIN events.domain_events AS e ON e.id = p.domain_event_id
    JOIN events.outbox_records AS r ON r.id = p.outbox_record_id
    ORDER BY p.dead_lettered_at DESC, p.outbox_record_id DESC;
END
$$;

--
-- Name: map_producer_role(name, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.map_producer_role(p_role name, p_module text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_module text;
BEGIN
    IF p_role IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS r WHERE r.rolname = p_role)
    THEN
        RAISE EXCEPTION 'p_role: no such role' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_role IN ('outbox_owner', 'outbox_worker')
        OR (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = p_role)
    THEN
        RAISE EXCEPTION 'p_role: the owner, the worker and superusers cannot be producers'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_module IS NULL OR NOT EXISTS (SELECT 1 FROM events.modules AS m WHERE m.code = p_module)
    THEN
        RAISE EXCEPTION 'p_module: no such module; register it first'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.producer_roles (role_name, module_code) VALUES (p_role, p_module)
    ON CONFLICT DO NOTHING;
    SELECT p.module_code INTO v_module FROM events.producer_roles AS p WHERE p.role_name = p_role;
    IF v_module <> p_module THEN
        RAISE EXCEPTION 'p_role: the role already produces for another module'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA events TO %I', p_role);
    EXECUTE pg_catalog.format(
        'GRANT EXECUTE ON FUNCTION events.append_domain_event(uuid, text, integer, text, text, '
        'text, jsonb, timestamptz, text) TO %I',
        p_role
    );
END
$$;

--
-- Name: open_repair(uuid, text, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.open_repair(p_actor uuid, p_action text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) RETURNS TABLE(outcome text, new_record_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_replay record;
    v_resolution text;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'p_dead_letter_id: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_reason IS NULL OR pg_catalog.length(p_reason) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'p_reason: 1 to 500 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT r.outcome, r.new_record_id INTO v_replay
    FROM events.operator_request_replay(p_actor, p_idempotency_key, p_action, p_dead_letter_id)
        AS r;
    IF FOUND THEN
        RETURN QUERY SELECT v_replay.outcome::text, v_replay.new_record_id::uuid;
        RETURN;
    END IF;
    -- The row lock serializes concurrent repairs of one dead letter: the loser finds it
    -- resolved.
    SELECT d.resolution INTO v_resolution
    FROM events.dead_letters AS d
    WHERE d.outbox_record_id = p_dead_letter_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid;
    ELSIF v_resolution IS NOT NULL THEN
        RETURN QUERY SELECT ('already_' || v_resolution)::text, NULL::uuid;
    END IF;
END
$$;

--
-- Name: operate_consumer(text, uuid, uuid, text, bigint, timestamp with time zone, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.operate_consumer(p_action text, p_actor uuid, p_elevation uuid, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: operator_request_replay(uuid, text, text, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.operator_request_replay(p_actor uuid, p_key text, p_action text, p_dead_letter_id uuid) RETURNS TABLE(outcome text, new_record_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_audit events.operator_audit%ROWTYPE;
BEGIN
    IF p_key IS NULL OR pg_catalog.length(p_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'p_idempotency_key: 1 to 255 characters required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        'events.operator_request:' || p_actor::text || ':' || p_key, 0
    )) THEN
        RETURN QUERY SELECT 'in_progress'::text, NULL::uuid;
        RETURN;
    END IF;
    SELECT a.* INTO v_audit
    FROM events.operator_audit AS a
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_key;
    IF FOUND THEN
        IF v_audit.action = p_action AND v_audit.dead_letter_id = p_dead_letter_id THEN
            RETURN QUERY SELECT 'replayed'::text, v_audit.new_record_id;
        ELSE
            RETURN QUERY SELECT 'key_reused'::text, NULL::uuid;
        END IF;
    END IF;
END
$$;

--
-- Name: consumers; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.consumers (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    code text NOT NULL,
    owner_module_code text NOT NULL,
    active boolean DEFAULT true NOT NULL,
    max_attempts integer DEFAULT 5 NOT NULL,
    ordered boolean DEFAULT true NOT NULL,
    replay_round integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT consumers_code_owned CHECK ((split_part(code, '.'::text, 1) = owner_module_code)),
    CONSTRAINT consumers_code_shape CHECK ((code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'::text)),
    CONSTRAINT consumers_max_attempts_range CHECK (((max_attempts >= 1) AND (max_attempts <= 100))),
    CONSTRAINT consumers_round_counted CHECK ((replay_round >= 0))
);

--
-- Name: own_consumer(text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.own_consumer(p_consumer text) RETURNS events.consumers
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_module text := events.calling_module();
    v_consumer events.consumers%ROWTYPE;
BEGIN
    SELECT * INTO v_consumer FROM events.consumers AS c WHERE c.code = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_consumer.owner_module_code <> v_module THEN
        RAISE EXCEPTION 'consumer % is module %''s, not %''s', p_consumer,
            v_consumer.owner_module_code, v_module
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_consumer;
END
$$;

--
-- Name: parked_aggregates(uuid, uuid, uuid, uuid, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.parked_aggregates(p_actor uuid, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(organization_id uuid, aggregate_type text, aggregate_id text, dead_letter_id uuid, domain_event_id uuid, event_type text, reason text, parked_since timestamp with time zone, waiting bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT d.organization_id, d.aggregate_type, d.aggregate_id, d.dead_letter_id,
           d.domain_event_id, d.event_type, d.reason, d.dead_lettered_at,
           (
               SELECT pg_catalog.count(*) FROM events.outbox_records AS r
               WHERE r.state IN ('pending', 'leased')
                 AND r.organization_id = d.organization_id
                 AND r.aggregate_type = d.aggregate_type AND r.aggregate_id = d.aggregate_id
                 AND r.append_sequence > (
                     SELECT x.append_sequence FROM events.dead_letters AS x
                     WHERE x.outbox_record_id = d.dead_letter_id
                 )
           )
    FROM events.list_dead_letters(
        p_actor, p_organization_id, true, p_after, p_before, p_limit
    ) AS d;
END
$$;

--
-- Name: promote_head(uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.promote_head(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.outbox_records AS r
        WHERE r.head AND r.organization_id = p_organization_id
          AND r.aggregate_type = p_aggregate_type AND r.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    RETURN events.promote_head_after(p_organization_id, p_aggregate_type, p_aggregate_id, 0);
END
$$;

--
-- Name: promote_head_after(uuid, text, text, bigint); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.promote_head_after(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_after bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.dead_letters AS d
        WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
          AND d.aggregate_type = p_aggregate_type AND d.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    -- Claimable from now on: a recent claim's window starts at most a few seconds ago, and
    -- a head promoted behind a backlog would lie below it until the next full claim.
    UPDATE events.outbox_records AS r
    SET head = true,
        available_at = GREATEST(r.available_at, pg_catalog.statement_timestamp())
    WHERE r.id = (
        SELECT n.id FROM events.outbox_records AS n
        WHERE n.state IN ('pending', 'leased') AND n.organization_id = p_organization_id
          AND n.aggregate_type = p_aggregate_type AND n.aggregate_id = p_aggregate_id
          AND n.append_sequence > p_after
        ORDER BY n.append_sequence
        LIMIT 1
    );
    RETURN FOUND;
END
$$;

--
-- Name: publish_contract_version(text, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.publish_contract_version(p_event_type text, p_version integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_retired_at timestamptz;
BEGIN
    IF p_version IS NULL OR p_version < 1 THEN
        RAISE EXCEPTION 'p_version: a contract version is at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT t.retired_at INTO v_retired_at FROM events.event_types AS t WHERE t.code = p_event_type;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_event_type: no such event type; register it first'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM events.event_type_versions AS v
        WHERE v.event_type_code = p_event_type AND v.contract_version = p_version
    ) THEN
        RETURN;
    END IF;
    IF v_retired_at IS NOT NULL THEN
        RAISE EXCEPTION 'p_event_type: the event type is retired' USING ERRCODE = 'OXE02';
    END IF;
    INSERT INTO events.event_type_versions (event_type_code, contract_version)
    VALUES (p_event_type, p_version)
    ON CONFLICT DO NOTHING;
END
$$;

--
-- Name: purge_events(interval, interval, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.purge_events(p_published interval, p_dead_lettered interval, p_limit integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_published_before timestamptz;
    v_dead_before timestamptz;
    v_published integer;
    v_dead integer := 0;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_published IS NULL OR p_published < interval '0' THEN
        RAISE EXCEPTION 'p_published: a retention period of zero or more is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_dead_lettered IS NULL OR p_dead_lettered < interval '0' THEN
        RAISE EXCEPTION 'p_dead_lettered: a retention period of zero or more is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('events.purge_events', 0)
    ) THEN
        RETURN 0;
    END IF;
    v_published_before := v_now - p_published;
    v_dead_before := v_now - p_dead_lettered;

    -- Events whose (last) record was published, oldest publication first.
    WITH doomed AS (
        SELECT r.domain_event_id AS id
        FROM events.outbox_records AS r
        WHERE r.state = 'published' AND r.published_at <= v_published_before
          AND NOT EXISTS (
              SELECT 1 FROM events.outbox_records AS o
              WHERE o.domain_event_id = r.domain_event_id
                AND (o.state IN ('pending', 'leased')
                     OR (o.state = 'published' AND o.published_at > v_published_before)
                     OR (o.state = 'dead_lettered' AND o.dead_lettered_at > v_dead_before))
          )
          AND NOT EXISTS (
              SELECT 1 FROM events.dead_letters AS d
              WHERE d.domain_event_id = r.domain_event_id AND d.resolution IS NULL
          )
          AND NOT EXISTS (
              SELECT 1 FROM events.consumer_deliveries AS c
              WHERE c.domain_event_id = r.domain_event_id
                AND (c.state IN ('waiting', 'pending', 'leased')
                     OR (c.state = 'dead_lettered' AND c.dead_lettered_at > v_dead_before))
          )
        ORDER BY r.published_at
        LIMIT p_limit
    ), gone AS (
        DELETE FROM events.domain_events AS e USING doomed AS d WHERE e.id = d.id RETURNING e.id
    )
    SELECT pg_catalog.count(*) INTO v_published FROM gone;

    -- Then events that were never published: their last record is a released dead letter
    -- (an earlier one was republished as a later record), oldest dead letter first.
    IF v_published < p_limit THEN
        WITH doomed AS (
            SELECT d.domain_event_id AS id
            FROM events.dead_letters AS d
            WHERE d.resolution = 'released' AND d.dead_lettered_at <= v_dead_before
              AND NOT EXISTS (
                  SELECT 1 FROM events.outbox_records AS o
                  WHERE o.domain_event_id = d.domain_event_id
                    AND (o.state <> 'dead_lettered' OR o.dead_lettered_at > v_dead_before)
              )
              AND NOT EXISTS (
                  SELECT 1 FROM events.dead_letters AS u
                  WHERE u.domain_event_id = d.domain_event_id AND u.resolution IS NULL
              )
            ORDER BY d.dead_lettered_at
            LIMIT p_limit - v_published
        ), gone AS (
            DELETE FROM events.domain_events AS e USING doomed AS d WHERE e.id = d.id
            RETURNING e.id
        )
        SELECT pg_catalog.count(*) INTO v_dead FROM gone;
    END IF;
    RETURN v_published + v_dead;
END
$$;

--
-- Name: record_consumer_processing_attempt(uuid, uuid, integer, text, text, text, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.record_consumer_processing_attempt(p_delivery_id uuid, p_lease_token uuid, p_attempt integer, p_outcome text, p_error_class text DEFAULT NULL::text, p_code text DEFAULT ''::text, p_retry_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (
        SELECT r.result
        FROM events.record_consumer_processing_attempts(
            ARRAY[p_delivery_id], ARRAY[p_lease_token], ARRAY[p_attempt], ARRAY[p_outcome],
            ARRAY[p_error_class], ARRAY[p_code], ARRAY[p_retry_at]
        ) AS r
    );
END
$$;

--
-- Name: record_consumer_processing_attempts(uuid[], uuid[], integer[], text[], text[], text[], timestamp with time zone[]); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.record_consumer_processing_attempts(p_delivery_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_error_classes text[], p_codes text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_module text := events.calling_module();
    v_count integer := pg_catalog.cardinality(p_delivery_ids);
    v_refused record;
    v_consumer_id uuid;
    v_key bigint;
    v_ok bigint[];
    v_outcomes text[];  -- per element: what is recorded (a retry at the cap dead-letters), or
                        -- NULL when its fence failed
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_error_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'p_delivery_ids: every array needs exactly one element per delivery'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_outcomes) AS o (outcome)
        WHERE o.outcome IS NULL OR o.outcome NOT IN ('completed', 'retry', 'dead_letter')
    ) THEN
        RAISE EXCEPTION 'p_outcomes: expected completed, retry or dead_letter'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (pg_catalog.unnest(p_outcomes), pg_catalog.unnest(p_retry_at))
            AS r (outcome, retry_at)
        WHERE (r.outcome = 'retry') <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'p_retry_at: a retry names its time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(p_retry_at) AS r (at) WHERE r.at <= v_now) THEN
        RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_error_classes) AS e (error_class)
        WHERE e.error_class !~ '^[A-Za-z_][A-Za-z0-9_.]{0,99}$'
    ) THEN
        RAISE EXCEPTION 'p_error_classes: expected class names'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1 FROM pg_catalog.unnest(p_codes) AS c (code)
        WHERE pg_catalog.length(COALESCE(c.code, '')) > 100
    ) THEN
        RAISE EXCEPTION 'p_codes: at most 100 characters each'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- A delivery not found was purged with its event, or never there: it answers lease_lost.
    -- Every one found must be the caller's module's, of an active consumer.
    SELECT c.code, c.owner_module_code INTO v_refused
    FROM events.consumer_deliveries AS d
    JOIN events.consumers AS c ON c.id = d.consumer_id
    WHERE d.id = ANY (p_delivery_ids) AND c.owner_module_code <> v_module
    ORDER BY c.code
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'consumer % is module %''s, not %''s', v_refused.code,
            v_refused.owner_module_code, v_module
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT c.code INTO v_refused
    FROM events.consumer_deliveries AS d
    JOIN events.consumers AS c ON c.id = d.consumer_id
    WHERE d.id = ANY (p_delivery_ids) AND NOT c.active
    ORDER BY c.code
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'consumer % is paused', v_refused.code USING ERRCODE = 'OXE04';
    END IF;

    FOR v_consumer_id IN
        SELECT DISTINCT d.consumer_id
        FROM events.consumer_deliveries AS d
        WHERE d.id = ANY (p_delivery_ids)
        ORDER BY d.consumer_id
    LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer_id));
    END LOOP;
    FOR v_key IN
        SELECT DISTINCT events.consumer_aggregate_lock_key(
                   d.consumer_id, d.organization_id, d.aggregate_type, d.aggregate_id
               ) AS lock_key
        FROM events.consumer_deliveries AS d
        JOIN events.consumers AS c ON c.id = d.consumer_id
        WHERE d.id = ANY (p_delivery_ids) AND c.ordered
        ORDER BY lock_key
    LOOP
        PERFORM pg_catalog.pg_advisory_xact_lock(v_key);
    END LOOP;

    -- The elements whose fence holds, their deliveries locked; a delivery named twice counts
    -- once (the first).
    SELECT COALESCE(pg_catalog.array_agg(i.ord), '{}') INTO v_ok
    FROM (
        SELECT DISTINCT ON (u.delivery_id) u.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts)
        ) WITH ORDINALITY AS u (delivery_id, lease_token, attempt, ord)
        ORDER BY u.delivery_id, u.ord
    ) AS i
    JOIN LATERAL (
        SELECT d.id FROM events.consumer_deliveries AS d
        WHERE d.id = i.delivery_id AND d.state = 'leased' AND d.lease_token = i.lease_token
          AND d.lease_expires_at > v_now AND i.attempt = d.attempt_count + 1
        FOR UPDATE
    ) AS locked ON true;

    SELECT pg_catalog.array_agg(
               CASE
                   WHEN NOT (i.ord = ANY (v_ok)) THEN NULL
                   WHEN i.outcome = 'retry' AND i.attempt >= c.max_attempts THEN 'dead_letter'
                   ELSE i.outcome
               END
               ORDER BY i.ord
           )
    INTO v_outcomes
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_attempts),
        pg_catalog.unnest(p_outcomes)
    ) WITH ORDINALITY AS i (delivery_id, attempt, outcome, ord)
    LEFT JOIN events.consumer_deliveries AS d ON d.id = i.delivery_id
    LEFT JOIN events.consumers AS c ON c.id = d.consumer_id;

    -- The history first, while each delivery is still under its lease (the sequence trigger
    -- checks it against the delivery), then the deliveries.
    INSERT INTO events.consumer_processing_attempts (
        delivery_id, attempt, outcome, error_class, code, recorded_at, retry_at, lease_token
    )
    SELECT i.delivery_id, i.attempt, i.recorded, i.error_class, COALESCE(i.code, ''), v_now,
           CASE WHEN i.recorded = 'retry' THEN i.retry_at END, i.lease_token
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_lease_tokens),
        pg_catalog.unnest(p_attempts), pg_catalog.unnest(v_outcomes),
        pg_catalog.unnest(p_error_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_retry_at)
    ) WITH ORDINALITY AS i (
        delivery_id, lease_token, attempt, recorded, error_class, code, retry_at, ord
    )
    WHERE i.recorded IS NOT NULL
    ORDER BY i.ord;

    UPDATE events.consumer_deliveries AS d
    SET state = CASE i.recorded
            WHEN 'completed' THEN 'completed' WHEN 'retry' THEN 'pending' ELSE 'dead_lettered'
        END,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        attempt_count = i.attempt,
        available_at = CASE WHEN i.recorded = 'retry' THEN i.retry_at ELSE d.available_at END,
        completed_at = CASE WHEN i.recorded = 'completed' THEN v_now END,
        dead_lettered_at = CASE WHEN i.recorded = 'dead_letter' THEN v_now END,
        dead_letter_reason = CASE
            WHEN i.recorded = 'dead_letter' AND i.asked = 'retry' THEN 'attempts_exhausted'
            WHEN i.recorded = 'dead_letter' THEN 'rejected'
        END,
        dead_letter_code = CASE
            WHEN i.recorded = 'dead_letter' THEN COALESCE(NULLIF(i.code, ''), i.error_class, '')
            ELSE ''
        END
    FROM ROWS FROM (
        pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(p_attempts),
        pg_catalog.unnest(p_outcomes), pg_catalog.unnest(v_outcomes),
        pg_catalog.unnest(p_error_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_retry_at)
    ) AS i (delivery_id, attempt, asked, recorded, error_class, code, retry_at)
    WHERE d.id = i.delivery_id AND i.recorded IS NOT NULL;

    -- An ordered consumer's delivery that ended hands its aggregate on: the next delivery
    -- of that aggregate becomes pending. It is the oldest live one after the delivery that
    -- ended (0055), so the probe starts there.
    UPDATE events.consumer_deliveries AS d
    SET state = 'pending', available_at = v_now
    FROM (
        SELECT (
            SELECT n.id FROM events.consumer_deliveries AS n
            WHERE n.consumer_id = e.consumer_id
              AND n.organization_id = e.organization_id
              AND n.aggregate_type = e.aggregate_type
              AND n.aggregate_id = e.aggregate_id
              AND n.delivery_sequence > e.delivery_sequence
              AND n.state IN ('waiting', 'pending', 'leased')
            ORDER BY n.delivery_sequence
            LIMIT 1
        ) AS id
        FROM ROWS FROM (pg_catalog.unnest(p_delivery_ids), pg_catalog.unnest(v_outcomes))
            AS o (delivery_id, recorded)
        JOIN events.consumer_deliveries AS e ON e.id = o.delivery_id
        JOIN events.consumers AS c ON c.id = e.consumer_id
        WHERE c.ordered AND o.recorded IN ('completed', 'dead_letter')
    ) AS following
    WHERE d.id = following.id AND d.state = 'waiting';

    RETURN QUERY
    SELECT CASE WHEN o.recorded IS NULL THEN 'lease_lost' ELSE 'recorded' END
    FROM pg_catalog.unnest(v_outcomes) WITH ORDINALITY AS o (recorded, ord)
    ORDER BY o.ord;
END
$_$;

--
-- Name: record_publication_attempt(uuid[], uuid[], integer[], text[], text[], text[], text[], timestamp with time zone[]); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) RETURNS TABLE(result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
#variable_conflict use_column
DECLARE
    v_locked_organizations uuid[];
    v_locked_types text[];
    v_locked_ids text[];
    v_locked_through bigint[];
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_record_ids);
    v_ok bigint[];
    v_published uuid[];
    v_woken boolean := false;
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_targets) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'p_record_ids: every array needs exactly one element per record'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_retry_at)
        ) AS r (outcome, failure_class, retry_at)
        WHERE r.outcome IS NULL
           OR r.outcome NOT IN ('published', 'retry', 'release', 'dead_letter')
           OR (r.outcome = 'published') <> (r.failure_class IS NULL)
           OR (r.outcome IN ('retry', 'release')) <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'p_outcomes: a published outcome has no failure class, every other has '
            'one; retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (pg_catalog.unnest(p_outcomes), pg_catalog.unnest(p_failure_classes))
            AS r (outcome, failure_class)
        WHERE r.failure_class NOT IN (
                'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
                'unexpected_worker_error'
            )
           OR (r.outcome = 'dead_letter' AND r.failure_class = 'PROVIDER_SUSPENDED')
    ) THEN
        RAISE EXCEPTION 'p_failure_classes: REJECTED, THROTTLED, UNAVAILABLE, INDETERMINATE, '
            'PROVIDER_SUSPENDED (not for a dead letter) or unexpected_worker_error'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The records whose fence holds, locked; a record named twice counts once (the first).
    SELECT COALESCE(pg_catalog.array_agg(i.ord), '{}') INTO v_ok
    FROM (
        SELECT DISTINCT ON (u.record_id) u.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts)
        ) WITH ORDINALITY AS u (record_id, lease_token, attempt, ord)
        ORDER BY u.record_id, u.ord
    ) AS i
    JOIN LATERAL (
        -- By primary key, whatever the statistics say (0057): `state = 'leased'` implied the
        -- live records' partial index, which an analyze under a hold makes look empty.
        SELECT r.id FROM events.outbox_records AS r
        WHERE r.id = i.record_id
          AND CASE WHEN r.state = 'leased'
                   THEN r.lease_token = i.lease_token AND r.lease_expires_at > v_now
                        AND i.attempt = r.attempt_count + 1
                   ELSE false END
        FOR UPDATE
    ) AS locked ON true;

    -- The history first, while each record is still under its lease (the sequence trigger
    -- checks it against the record), then the records.
    INSERT INTO events.publication_attempts (
        outbox_record_id, attempt, counted, outcome, failure_class, code, target, recorded_at,
        retry_at, lease_token
    )
    SELECT i.record_id, i.attempt, i.outcome <> 'release', i.outcome, i.failure_class,
           pg_catalog.left(COALESCE(i.code, ''), 100), pg_catalog.left(COALESCE(i.target, ''), 100),
           v_now, i.retry_at, i.lease_token
    FROM ROWS FROM (
        pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_lease_tokens),
        pg_catalog.unnest(p_attempts), pg_catalog.unnest(p_outcomes),
        pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_codes),
        pg_catalog.unnest(p_targets), pg_catalog.unnest(p_retry_at)
    ) WITH ORDINALITY AS i (
        record_id, lease_token, attempt, outcome, failure_class, code, target, retry_at, ord
    )
    WHERE i.ord = ANY (v_ok)
    ORDER BY i.ord;

    WITH input AS (
        SELECT i.*
        FROM ROWS FROM (
            pg_catalog.unnest(p_record_ids), pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes), pg_catalog.unnest(p_retry_at)
        ) WITH ORDINALITY AS i (record_id, outcome, failure_class, retry_at, ord)
        WHERE i.ord = ANY (v_ok)
    ), recorded AS (
        UPDATE events.outbox_records AS r
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            head = i.outcome IN ('retry', 'release'),
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = r.attempt_count + CASE WHEN i.outcome = 'release' THEN 0 ELSE 1 END,
            available_at = COALESCE(i.retry_at, r.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE r.id = i.record_id
        RETURNING r.id, i.outcome, i.failure_class, r.organization_id, r.aggregate_type,
                  r.aggregate_id, r.domain_event_id, r.append_sequence
    ), publications AS (
        INSERT INTO events.domain_event_publications (
            domain_event_id, outbox_record_id, organization_id, event_type_code,
            contract_version, published_at
        )
        SELECT e.id, d.id, e.organization_id, e.event_type_code, e.contract_version, v_now
        FROM recorded AS d
        JOIN events.domain_events AS e ON e.id = d.domain_event_id
        WHERE d.outcome = 'published'
        ORDER BY d.append_sequence
    ), parked AS (
        INSERT INTO events.dead_letters (
            outbox_record_id, domain_event_id, organization_id, aggregate_type, aggregate_id,
            append_sequence, reason, dead_lettered_at
        )
        SELECT d.id, d.domain_event_id, d.organization_id, d.aggregate_type, d.aggregate_id,
               d.append_sequence, d.failure_class, v_now
        FROM recorded AS d
        WHERE d.outcome = 'dead_letter'
    )
    SELECT COALESCE(pg_catalog.array_agg(d.id) FILTER (WHERE d.outcome = 'published'), '{}')
    INTO v_published
    FROM recorded AS d;

    -- Hand each published head on: now, when no producer holds the aggregate (its lock
    -- tried in lock-key order, though a try never waits); else a vacancy the next claim
    -- fills. One statement for the batch.
    IF pg_catalog.cardinality(v_published) > 0 THEN  -- an empty = ANY: see outbox.lease_picked
        -- First the try-locks and the vacancies, in one statement.
        WITH aggregates AS (
            SELECT d.organization_id, d.aggregate_type, d.aggregate_id,
                   events.aggregate_lock_key(d.organization_id, d.aggregate_type, d.aggregate_id)
                       AS lock_key,
                   pg_catalog.max(d.append_sequence) AS published_through
            FROM events.outbox_records AS d
            WHERE d.id = ANY (v_published)
            GROUP BY d.organization_id, d.aggregate_type, d.aggregate_id
        ), tried AS MATERIALIZED (
            SELECT a.*, pg_catalog.pg_try_advisory_xact_lock(a.lock_key) AS locked
            FROM (SELECT * FROM aggregates ORDER BY lock_key OFFSET 0) AS a
        ), vacancies AS (
            INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
            SELECT t.organization_id, t.aggregate_type, t.aggregate_id
            FROM tried AS t
            WHERE NOT t.locked
            ON CONFLICT DO NOTHING
        )
        SELECT COALESCE(pg_catalog.array_agg(t.organization_id) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.aggregate_type) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.aggregate_id) FILTER (WHERE t.locked), '{}'),
               COALESCE(pg_catalog.array_agg(t.published_through) FILTER (WHERE t.locked), '{}'),
               pg_catalog.bool_or(NOT t.locked)
        INTO v_locked_organizations, v_locked_types, v_locked_ids, v_locked_through, v_woken
        FROM tried AS t;
        v_woken := COALESCE(v_woken, false);

        -- Then the promotions, in a statement of their own: its snapshot is taken with the
        -- locks held, so it sees an event a producer committed before it let its lock go.
        -- (In the first statement's snapshot, taken before the tries, such an event was
        -- missing: the producer had seen the published head still live and appended behind
        -- it, the try then succeeded, and the aggregate stalled with nobody to hand on.)
        WITH promoted AS (
            -- Claimable from now on: a recent claim's window starts at most a few seconds
            -- ago, and a head promoted behind a backlog would lie below it until the next
            -- full claim (0058).
            UPDATE events.outbox_records AS r
            SET head = true,
                available_at = GREATEST(r.available_at, pg_catalog.statement_timestamp())
            -- By primary key, as the claims lease (see outbox.lease_picked).
            WHERE r.id = ANY (ARRAY(
                SELECT next.id
                FROM ROWS FROM (
                    pg_catalog.unnest(v_locked_organizations), pg_catalog.unnest(v_locked_types),
                    pg_catalog.unnest(v_locked_ids), pg_catalog.unnest(v_locked_through)
                ) AS t (organization_id, aggregate_type, aggregate_id, published_through)
                CROSS JOIN LATERAL (
                    SELECT n.id FROM events.outbox_records AS n
                    WHERE n.state IN ('pending', 'leased')
                      AND n.organization_id = t.organization_id
                      AND n.aggregate_type = t.aggregate_type
                      AND n.aggregate_id = t.aggregate_id
                      AND n.append_sequence > t.published_through
                    ORDER BY n.append_sequence
                    LIMIT 1
                ) AS next
                WHERE NOT EXISTS (
                    SELECT 1 FROM events.dead_letters AS d
                    WHERE d.resolution IS NULL AND d.organization_id = t.organization_id
                      AND d.aggregate_type = t.aggregate_type
                      AND d.aggregate_id = t.aggregate_id
                )
            ))
            RETURNING r.id
        )
        SELECT v_woken OR EXISTS (SELECT 1 FROM promoted) INTO v_woken;
    END IF;
    IF v_woken THEN
        PERFORM pg_catalog.pg_notify('events_work', '');
    END IF;

    RETURN QUERY
    SELECT CASE WHEN i.ord = ANY (v_ok) THEN 'recorded' ELSE 'lease_lost' END
    FROM pg_catalog.unnest(p_record_ids) WITH ORDINALITY AS i (record_id, ord)
    ORDER BY i.ord;
END
$$;

--
-- Name: refuse_final_delivery_update(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.refuse_final_delivery_update() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'consumer delivery % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: refuse_final_update(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.refuse_final_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'outbox record % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: refuse_orphaned_event(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.refuse_orphaned_event() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events.domain_events AS e WHERE e.id = OLD.domain_event_id)
        AND NOT EXISTS (
            SELECT 1 FROM events.outbox_records AS r WHERE r.domain_event_id = OLD.domain_event_id
        )
    THEN
        RAISE EXCEPTION 'event % would be left without an outbox record', OLD.domain_event_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: refuse_past_retry(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.refuse_past_retry() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
        USING ERRCODE = 'invalid_parameter_value';
END
$$;

--
-- Name: register_consumer(text, text, integer, boolean); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.register_consumer(p_code text, p_owner_module text, p_max_attempts integer DEFAULT 5, p_ordered boolean DEFAULT true) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_id uuid;
    v_module text;
BEGIN
    IF p_owner_module IS NULL
        OR NOT EXISTS (SELECT 1 FROM events.modules AS m WHERE m.code = p_owner_module)
    THEN
        RAISE EXCEPTION 'p_owner_module: unknown module %', p_owner_module
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_code IS NULL OR pg_catalog.split_part(p_code, '.', 1) <> p_owner_module
        OR p_code !~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'
    THEN
        RAISE EXCEPTION 'p_code: expected %.consumer_name, got %', p_owner_module, p_code
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'p_max_attempts: expected 1 to 100, got %', p_max_attempts
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_ordered IS NULL THEN
        RAISE EXCEPTION 'p_ordered: expected true or false' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.consumers (code, owner_module_code, max_attempts, ordered)
    VALUES (p_code, p_owner_module, p_max_attempts, p_ordered)
    ON CONFLICT (code) DO UPDATE
        SET max_attempts = EXCLUDED.max_attempts, ordered = EXCLUDED.ordered
    RETURNING id, owner_module_code INTO v_id, v_module;
    RETURN v_id;
END
$_$;

--
-- Name: register_event_type(text, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.register_event_type(p_code text, p_owner_module text, p_description text DEFAULT ''::text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_owner text;
BEGIN
    IF p_code IS NULL OR p_code !~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$' THEN
        RAISE EXCEPTION 'p_code: an event type is module.event_name in lowercase words'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_owner_module IS NULL
        OR NOT EXISTS (SELECT 1 FROM events.modules AS m WHERE m.code = p_owner_module)
    THEN
        RAISE EXCEPTION 'p_owner_module: no such module; register it first'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.split_part(p_code, '.', 1) <> p_owner_module THEN
        RAISE EXCEPTION 'p_code: an event type starts with its owner module''s code'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_description IS NULL THEN
        RAISE EXCEPTION 'p_description: may be empty, not null'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.event_types (code, owner_module_code, description)
    VALUES (p_code, p_owner_module, p_description)
    ON CONFLICT (code) DO UPDATE SET description = EXCLUDED.description
    WHERE events.event_types.owner_module_code = EXCLUDED.owner_module_code
    RETURNING owner_module_code INTO v_owner;
    IF v_owner IS NULL THEN
        RAISE EXCEPTION 'p_owner_module: the event type belongs to another module'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$_$;

--
-- Name: register_module(text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.register_module(p_code text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
BEGIN
    IF p_code IS NULL OR p_code !~ '^[a-z][a-z0-9_]{0,39}$' THEN
        RAISE EXCEPTION 'p_code: a module code is a lowercase word of up to 40 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.modules (code) VALUES (p_code) ON CONFLICT DO NOTHING;
END
$_$;

--
-- Name: release_dead_letter(uuid, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.release_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) RETURNS TABLE(outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_refusal record;
    v_dead events.dead_letters%ROWTYPE;
BEGIN
    SELECT o.outcome INTO v_refusal
    FROM events.open_repair(p_actor, 'release', p_dead_letter_id, p_reason, p_idempotency_key)
        AS o;
    IF FOUND THEN
        RETURN QUERY SELECT v_refusal.outcome::text;
        RETURN;
    END IF;
    UPDATE events.dead_letters AS d
    SET resolution = 'released', resolved_at = v_now, resolved_by = p_actor::text
    WHERE d.outbox_record_id = p_dead_letter_id
    RETURNING d.* INTO v_dead;
    INSERT INTO events.operator_audit (
        action, actor_id, dead_letter_id, domain_event_id, organization_id, reason,
        idempotency_key, occurred_at
    ) VALUES (
        'release', p_actor, p_dead_letter_id, v_dead.domain_event_id, v_dead.organization_id,
        p_reason, p_idempotency_key, v_now
    );
    PERFORM events.reopen_aggregate(
        v_dead.organization_id, v_dead.aggregate_type, v_dead.aggregate_id
    );
    RETURN QUERY SELECT 'released'::text;
END
$$;

--
-- Name: reopen_aggregate(uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.reopen_aggregate(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
    VALUES (p_organization_id, p_aggregate_type, p_aggregate_id)
    ON CONFLICT DO NOTHING;
    SELECT pg_catalog.pg_notify('events_work', '');
$$;

--
-- Name: replay_consumer(text, bigint, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.replay_consumer(p_consumer text, p_from_sequence bigint DEFAULT NULL::bigint, p_since timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_written integer;
BEGIN
    IF (p_from_sequence IS NULL) = (p_since IS NULL) THEN
        RAISE EXCEPTION 'p_from_sequence: give a publication sequence or p_since, not both'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_from_sequence < 1 THEN
        RAISE EXCEPTION 'p_from_sequence: publication sequences start at 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT * INTO v_consumer FROM events.consumers AS c WHERE c.code = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(events.consumer_lock_key(v_consumer.id));
    UPDATE events.consumers AS c SET replay_round = c.replay_round + 1
    WHERE c.id = v_consumer.id
    RETURNING * INTO v_consumer;

    INSERT INTO events.consumer_deliveries (
        consumer_id, domain_event_id, replay_round, organization_id, aggregate_type,
        aggregate_id, publication_sequence, state, available_at, created_at
    )
    SELECT v_consumer.id, r.domain_event_id, v_consumer.replay_round, r.organization_id,
           r.aggregate_type, r.aggregate_id, r.publication_sequence,
           CASE WHEN v_consumer.ordered AND (r.nth > 1 OR (
               -- The aggregate's newest delivery is live exactly when any is (0056).
               SELECT d.state FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = v_consumer.id
                 AND d.organization_id = r.organization_id
                 AND d.aggregate_type = r.aggregate_type
                 AND d.aggregate_id = r.aggregate_id
               ORDER BY d.delivery_sequence DESC
               LIMIT 1
           ) IN ('waiting', 'pending', 'leased')) THEN 'waiting' ELSE 'pending' END,
           v_now, v_now
    FROM (
        SELECT p.domain_event_id, p.publication_sequence, e.organization_id, e.aggregate_type,
               e.aggregate_id,
               pg_catalog.row_number() OVER (
                   PARTITION BY e.organization_id, e.aggregate_type, e.aggregate_id
                   ORDER BY p.publication_sequence
               ) AS nth
        FROM events.domain_event_publications AS p
        JOIN events.domain_events AS e ON e.id = p.domain_event_id
        JOIN events.consumer_subscriptions AS s
            ON s.consumer_id = v_consumer.id
           AND s.event_type_code = p.event_type_code
           AND p.contract_version BETWEEN s.min_version AND s.max_version
        WHERE (p_from_sequence IS NULL OR p.publication_sequence >= p_from_sequence)
          AND (p_since IS NULL OR p.published_at >= p_since)
    ) AS r
    ORDER BY r.publication_sequence;
    GET DIAGNOSTICS v_written = ROW_COUNT;
    RETURN v_written;
END
$$;

--
-- Name: republish_dead_letter(uuid, uuid, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.republish_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text) RETURNS TABLE(outcome text, new_record_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_refusal record;
    v_dead events.dead_letters%ROWTYPE;
BEGIN
    IF p_new_record_id IS NULL THEN
        RAISE EXCEPTION 'p_new_record_id: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT o.outcome, o.new_record_id INTO v_refusal
    FROM events.open_repair(
        p_actor, 'republish', p_dead_letter_id, p_reason, p_idempotency_key
    ) AS o;
    IF FOUND THEN
        RETURN QUERY SELECT v_refusal.outcome::text, v_refusal.new_record_id::uuid;
        RETURN;
    END IF;
    SELECT d.* INTO v_dead FROM events.dead_letters AS d
    WHERE d.outbox_record_id = p_dead_letter_id;

    INSERT INTO events.outbox_records (
        id, domain_event_id, organization_id, aggregate_type, aggregate_id, append_sequence,
        republish_of, available_at, created_at
    ) VALUES (
        p_new_record_id, v_dead.domain_event_id, v_dead.organization_id, v_dead.aggregate_type,
        v_dead.aggregate_id, v_dead.append_sequence, v_dead.outbox_record_id, v_now, v_now
    );
    UPDATE events.dead_letters AS d
    SET resolution = 'republished', resolved_at = v_now, resolved_by = p_actor::text,
        republished_as = p_new_record_id
    WHERE d.outbox_record_id = p_dead_letter_id;
    INSERT INTO events.operator_audit (
        action, actor_id, dead_letter_id, domain_event_id, organization_id, new_record_id,
        reason, idempotency_key, occurred_at
    ) VALUES (
        'republish', p_actor, p_dead_letter_id, v_dead.domain_event_id, v_dead.organization_id,
        p_new_record_id, p_reason, p_idempotency_key, v_now
    );
    PERFORM events.reopen_aggregate(
        v_dead.organization_id, v_dead.aggregate_type, v_dead.aggregate_id
    );
    RETURN QUERY SELECT 'republished'::text, p_new_record_id;
END
$$;

--
-- Name: require_one_outbox_record(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.require_one_outbox_record() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_records integer;
BEGIN
    SELECT pg_catalog.count(*) INTO v_records
    FROM events.outbox_records AS r WHERE r.domain_event_id = NEW.id;
    IF v_records <> 1 AND EXISTS (SELECT 1 FROM events.domain_events AS e WHERE e.id = NEW.id)
    THEN
        RAISE EXCEPTION 'domain event % has % outbox records; it needs exactly one',
            NEW.id, v_records
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: retire_event_type(text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.retire_event_type(p_code text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM events.event_types AS t WHERE t.code = p_code) THEN
        RAISE EXCEPTION 'p_code: no such event type' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE events.event_types AS t
    SET retired_at = pg_catalog.statement_timestamp()
    WHERE t.code = p_code AND t.retired_at IS NULL;
END
$$;

--
-- Name: search_events(uuid, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, bigint, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.search_events(p_actor uuid, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer) RETURNS TABLE(domain_event_id uuid, append_sequence bigint, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, appended_at timestamp with time zone, record_id uuid, state text, attempt_count integer, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, resolution text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: set_consumer_active(text, boolean); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.set_consumer_active(p_consumer text, p_active boolean) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_changed integer;
BEGIN
    IF p_active IS NULL THEN
        RAISE EXCEPTION 'p_active: expected true or false' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM events.consumers AS c WHERE c.code = p_consumer) THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE events.consumers AS c SET active = p_active
    WHERE c.code = p_consumer AND c.active <> p_active;
    GET DIAGNOSTICS v_changed = ROW_COUNT;
    RETURN v_changed > 0;
END
$$;

--
-- Name: staff_activity(uuid, text, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) RETURNS TABLE(minute timestamp with time zone, pending bigint, published bigint, dead_lettered bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: staff_backlog(uuid, text, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_backlog(p_actor uuid, p_elevation text, p_limit integer) RETURNS TABLE(organization_id uuid, pending bigint, leased bigint, oldest_due_age_seconds double precision, dead_letters bigint, parked_aggregates bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT b.* FROM events.backlog(p_actor, p_limit) AS b;
END
$$;

--
-- Name: staff_bulk_repair(uuid, text, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone, text, text, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_bulk_repair(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer) RETURNS TABLE(changed integer, replayed integer, remaining bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: staff_consumer_dead_letters(uuid, text, text, bigint, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_consumer_dead_letters(p_actor uuid, p_elevation text, p_consumer text, p_before bigint, p_limit integer) RETURNS TABLE(delivery_id uuid, delivery_sequence bigint, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, publication_sequence bigint, replay_round integer, attempts integer, reason text, code text, dead_lettered_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM events.consumer_dead_letters(p_consumer, p_before, p_limit) AS d;
END
$$;

--
-- Name: staff_consumer_lag(uuid, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_consumer_lag(p_actor uuid, p_elevation text) RETURNS TABLE(consumer text, owner_module text, active boolean, ordered boolean, max_attempts integer, replay_round integer, subscriptions text[], events_behind bigint, oldest_undelivered_seconds double precision, dead_letters bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT l.* FROM events.consumer_lag() AS l;
END
$$;

--
-- Name: staff_count_bulk(uuid, text, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_count_bulk(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) RETURNS TABLE(matched bigint, as_of timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT c.* FROM events.count_bulk(
        p_actor, p_action, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id,
        p_since, p_until, p_as_of
    ) AS c;
END
$$;

--
-- Name: staff_event_attempts(uuid, text, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_event_attempts(p_actor uuid, p_elevation text, p_event_id uuid) RETURNS TABLE(outbox_record_id uuid, attempt integer, counted boolean, outcome text, failure_class text, code text, target text, recorded_at timestamp with time zone, retry_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT a.* FROM events.event_attempts(p_actor, p_event_id) AS a;
END
$$;

--
-- Name: staff_event_audit(uuid, text, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_event_audit(p_actor uuid, p_elevation text, p_event_id uuid) RETURNS TABLE(action text, actor_id uuid, dead_letter_id uuid, new_record_id uuid, reason text, occurred_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT a.action, a.actor_id, a.dead_letter_id, a.new_record_id, a.reason, a.occurred_at
    FROM events.operator_audit AS a
    WHERE a.domain_event_id = p_event_id
    ORDER BY a.id;
END
$$;

--
-- Name: staff_event_detail(uuid, text, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_event_detail(p_actor uuid, p_elevation text, p_event_id uuid) RETURNS TABLE(id uuid, organization_id uuid, event_type text, contract_version integer, producer_module text, aggregate_type text, aggregate_id text, append_sequence bigint, occurred_at timestamp with time zone, appended_at timestamp with time zone, payload_bytes integer, trace_context text, publication_sequence bigint, published_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT e.* FROM events.event_detail(p_actor, p_event_id) AS e;
END
$$;

--
-- Name: staff_event_records(uuid, text, uuid); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_event_records(p_actor uuid, p_elevation text, p_event_id uuid) RETURNS TABLE(id uuid, state text, attempt_count integer, republish_of uuid, created_at timestamp with time zone, available_at timestamp with time zone, lease_owner text, lease_expires_at timestamp with time zone, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, dead_letter_reason text, resolution text, resolved_at timestamp with time zone, resolved_by text, republished_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT r.* FROM events.event_records(p_actor, p_event_id) AS r;
END
$$;

--
-- Name: staff_list_dead_letters(uuid, text, uuid, boolean, uuid, uuid, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_list_dead_letters(p_actor uuid, p_elevation text, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(dead_letter_id uuid, domain_event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, reason text, attempt_count integer, dead_lettered_at timestamp with time zone, resolution text, resolved_at timestamp with time zone, resolved_by text, republished_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT d.* FROM events.list_dead_letters(
        p_actor, p_organization_id, p_unresolved_only, p_after, p_before, p_limit
    ) AS d;
END
$$;

--
-- Name: staff_operate_consumer(uuid, text, text, text, bigint, timestamp with time zone, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_operate_consumer(p_actor uuid, p_elevation text, p_action text, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: staff_parked_aggregates(uuid, text, uuid, uuid, uuid, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_parked_aggregates(p_actor uuid, p_elevation text, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(organization_id uuid, aggregate_type text, aggregate_id text, dead_letter_id uuid, domain_event_id uuid, event_type text, reason text, parked_since timestamp with time zone, waiting bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT p.* FROM events.parked_aggregates(
        p_actor, p_organization_id, p_after, p_before, p_limit
    ) AS p;
END
$$;

--
-- Name: staff_release_dead_letter(uuid, text, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_release_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) RETURNS TABLE(outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome
    FROM events.release_dead_letter(p_actor, p_dead_letter_id, p_reason, p_idempotency_key)
        AS r;
    UPDATE events.operator_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.dead_letter_id = p_dead_letter_id
      AND a.occurred_at = pg_catalog.statement_timestamp() AND a.elevation_id IS NULL;
END
$$;

--
-- Name: staff_republish_dead_letter(uuid, text, uuid, uuid, text, text); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_republish_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text) RETURNS TABLE(outcome text, new_record_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_record_id
    FROM events.republish_dead_letter(
        p_actor, p_dead_letter_id, p_new_record_id, p_reason, p_idempotency_key
    ) AS r;
    UPDATE events.operator_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.dead_letter_id = p_dead_letter_id
      AND a.occurred_at = pg_catalog.statement_timestamp() AND a.elevation_id IS NULL;
END
$$;

--
-- Name: staff_search_events(uuid, text, text, text, uuid, text, text, timestamp with time zone, timestamp with time zone, bigint, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.staff_search_events(p_actor uuid, p_elevation text, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer) RETURNS TABLE(domain_event_id uuid, append_sequence bigint, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, appended_at timestamp with time zone, record_id uuid, state text, attempt_count integer, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, resolution text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT s.* FROM events.search_events(
        p_actor, p_state, p_event_type, p_organization_id, p_aggregate_type, p_aggregate_id,
        p_since, p_until, p_before, p_limit
    ) AS s;
END
$$;

--
-- Name: subscribe(text, text, integer, integer); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.subscribe(p_consumer text, p_event_type text, p_min_version integer, p_max_version integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_consumer_id uuid;
BEGIN
    SELECT c.id INTO v_consumer_id FROM events.consumers AS c WHERE c.code = p_consumer;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_consumer: unknown consumer %', p_consumer
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_event_type IS NULL
        OR NOT EXISTS (SELECT 1 FROM events.event_types AS t WHERE t.code = p_event_type)
    THEN
        RAISE EXCEPTION 'p_event_type: unknown event type %', p_event_type
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_min_version IS NULL OR p_min_version < 1 THEN
        RAISE EXCEPTION 'p_min_version: expected a version from 1, got %', p_min_version
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_max_version IS NULL OR p_max_version < p_min_version THEN
        RAISE EXCEPTION 'p_max_version: the range %..% is empty', p_min_version, p_max_version
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.consumer_subscriptions (
        consumer_id, event_type_code, min_version, max_version
    ) VALUES (v_consumer_id, p_event_type, p_min_version, p_max_version)
    ON CONFLICT (consumer_id, event_type_code) DO UPDATE
        SET min_version = EXCLUDED.min_version, max_version = EXCLUDED.max_version;
END
$$;

--
-- Name: validate_publication_attempt_insert(); Type: FUNCTION; Schema: events; Owner: -
--

CREATE FUNCTION events.validate_publication_attempt_insert() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_bad record;
BEGIN
    SELECT n.attempt, r.attempt_count,
           r.state IS DISTINCT FROM 'leased' OR r.lease_token IS DISTINCT FROM n.lease_token
           OR r.lease_expires_at <= pg_catalog.statement_timestamp() AS lease_lost
    INTO v_bad
    FROM inserted AS n
    LEFT JOIN LATERAL (
        SELECT r.state, r.lease_token, r.lease_expires_at, r.attempt_count
        FROM events.outbox_records AS r
        WHERE r.id = n.outbox_record_id
        OFFSET 0
    ) AS r ON true
    WHERE r.state IS DISTINCT FROM 'leased' OR r.lease_token IS DISTINCT FROM n.lease_token
       OR r.lease_expires_at <= pg_catalog.statement_timestamp()
       OR n.attempt <> r.attempt_count + 1
    ORDER BY 3 DESC
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_bad.lease_lost THEN
        RAISE EXCEPTION 'an attempt is recorded under the record''s live lease'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RAISE EXCEPTION 'attempt % of a record with % attempts: expected %',
        v_bad.attempt, v_bad.attempt_count, v_bad.attempt_count + 1
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: add_identity(uuid, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.add_identity(p_id uuid, p_created_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.identities (id, created_at) VALUES (p_id, p_created_at)
$$;

--
-- Name: add_organization(uuid, text, uuid, timestamp with time zone, text[]); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.add_organization(p_id uuid, p_name text, p_created_by uuid, p_created_at timestamp with time zone, p_permissions text[]) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.organizations (id, name, created_by, created_at)
    VALUES (p_id, p_name, p_created_by, p_created_at);
    INSERT INTO identity.memberships (organization_id, identity_id, permissions, created_at)
    VALUES (p_id, p_created_by, p_permissions, p_created_at);
$$;

--
-- Name: add_session(uuid, uuid, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.add_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at)
    VALUES (p_id, p_identity_id, p_token_digest, p_created_at, p_expires_at)
$$;

--
-- Name: add_staff_session(uuid, uuid, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.add_staff_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.sessions (id, identity_id, token_digest, created_at, expires_at, staff)
    VALUES (p_id, p_identity_id, p_token_digest, p_created_at, p_expires_at, true)
$$;

--
-- Name: elevate_session(uuid, uuid, uuid, uuid, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.elevate_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT identity.grant_elevation(
        false, p_id, p_session_id, p_identity_id, p_challenge_id, p_token_digest, p_created_at,
        p_expires_at
    )
$$;

--
-- Name: elevate_staff_session(uuid, uuid, uuid, uuid, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.elevate_staff_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT identity.grant_elevation(
        true, p_id, p_session_id, p_identity_id, p_challenge_id, p_token_digest, p_created_at,
        p_expires_at
    )
$$;

--
-- Name: enqueue_invitation_message(uuid, uuid, uuid, text, text, timestamp with time zone, timestamp with time zone, integer, integer, interval, integer, interval, uuid, text, jsonb, text, text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.enqueue_invitation_message(p_identity_id uuid, p_organization_id uuid, p_invitation_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_pending_max integer, p_organization_limit integer, p_organization_window interval, p_address_limit integer, p_address_window interval, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) RETURNS TABLE(refusal text, retry_after interval, withdrawn_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_boundary timestamptz;
BEGIN
    PERFORM 1 FROM identity.organizations AS o WHERE o.id = p_organization_id FOR UPDATE;
    IF NOT FOUND OR NOT EXISTS (
        SELECT 1 FROM identity.memberships AS m
        WHERE m.organization_id = p_organization_id AND m.identity_id = p_identity_id
          AND 'organization.account.manage' = ANY (m.permissions)
    ) THEN
        refusal := 'permission';
        RETURN NEXT;
        RETURN;
    END IF;
    -- The limit-th newest send of the window: once it leaves the window, one more is allowed.
    SELECT i.created_at INTO v_boundary
    FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id
      AND i.created_at > p_created_at - p_organization_window
    ORDER BY i.created_at DESC
    OFFSET p_organization_limit - 1 LIMIT 1;
    IF FOUND THEN
        refusal := 'organization_rate';
        retry_after := v_boundary + p_organization_window - p_created_at;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT i.created_at INTO v_boundary
    FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id AND i.email = p_email
      AND i.created_at > p_created_at - p_address_window
    ORDER BY i.created_at DESC
    OFFSET p_address_limit - 1 LIMIT 1;
    IF FOUND THEN
        refusal := 'address_rate';
        retry_after := v_boundary + p_address_window - p_created_at;
        RETURN NEXT;
        RETURN;
    END IF;
    IF (
        SELECT pg_catalog.count(*) FROM identity.invitations AS i
        WHERE i.organization_id = p_organization_id AND i.state = 'pending'
          AND i.expires_at > p_created_at AND i.email <> p_email
    ) >= p_pending_max THEN
        refusal := 'pending_limit';
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE identity.invitations AS i
    SET state = 'revoked', ended_at = p_created_at
    WHERE i.organization_id = p_organization_id AND i.email = p_email AND i.state = 'pending'
    RETURNING i.id INTO withdrawn_id;
    IF withdrawn_id IS NOT NULL THEN
        PERFORM outbox.cancel_by_subject(withdrawn_id, 'invitation_revoked');
    END IF;
    INSERT INTO identity.invitations (
        id, organization_id, email, token_digest, invited_by, created_at, expires_at
    ) VALUES (
        p_invitation_id, p_organization_id, p_email, p_token_digest, p_identity_id,
        p_created_at, p_expires_at
    );
    PERFORM outbox.enqueue_message(
        p_id => p_message_id,
        p_purpose => 'invitation',
        p_channel => 'email',
        p_destination => p_email,
        p_subject_id => p_invitation_id,
        p_template => p_template,
        p_params => p_params,
        p_locale => p_locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => p_expires_at
    );
    RETURN NEXT;
END
$$;

--
-- Name: find_account(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_account(p_identifier text) RETURNS TABLE(identity_id uuid, value text, channel text, created_at timestamp with time zone, verified_at timestamp with time zone, password_hash text)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT l.identity_id, l.value, l.channel, l.created_at, l.verified_at, p.password_hash
    FROM identity.login_identifiers AS l
    LEFT JOIN identity.password_credentials AS p ON p.identity_id = l.identity_id
    WHERE l.value = p_identifier
    FOR UPDATE OF l
$$;

--
-- Name: challenges; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.challenges (
    id uuid NOT NULL,
    purpose text NOT NULL,
    identity_id uuid NOT NULL,
    identifier text NOT NULL,
    channel text NOT NULL,
    code_hash text NOT NULL,
    failed_attempts integer DEFAULT 0 NOT NULL,
    state text DEFAULT 'open'::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    CONSTRAINT challenges_attempts_counted CHECK ((failed_attempts >= 0)),
    CONSTRAINT challenges_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text]))),
    CONSTRAINT challenges_code_argon2id CHECK ((code_hash ~~ '$argon2id$%'::text)),
    CONSTRAINT challenges_end_shape CHECK (((state = 'open'::text) = (ended_at IS NULL))),
    CONSTRAINT challenges_lifetime_positive CHECK ((expires_at > created_at)),
    CONSTRAINT challenges_purpose_known CHECK ((purpose = ANY (ARRAY['sign_up'::text, 'add_sign_in_method'::text, 'password_recovery'::text, 'step_up'::text]))),
    CONSTRAINT challenges_state_known CHECK ((state = ANY (ARRAY['open'::text, 'consumed'::text, 'locked'::text, 'closed'::text])))
);

--
-- Name: find_challenge(text, uuid, text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_challenge(p_purpose text, p_identity_id uuid, p_identifier text) RETURNS SETOF identity.challenges
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT c.*
    FROM identity.challenges AS c
    WHERE c.purpose = p_purpose
      AND c.state = 'open'
      AND (p_identity_id IS NULL OR c.identity_id = p_identity_id)
      AND (p_identifier IS NULL OR c.identifier = p_identifier)
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT 1
    FOR UPDATE
$$;

--
-- Name: elevations; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.elevations (
    id uuid NOT NULL,
    session_id uuid NOT NULL,
    identity_id uuid NOT NULL,
    token_digest text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    challenge_id uuid,
    CONSTRAINT elevations_digest_shape CHECK ((token_digest ~ '^[0-9a-f]{64}$'::text))
);

--
-- Name: find_elevation(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_elevation(p_token_digest text) RETURNS SETOF identity.elevations
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.* FROM identity.elevations AS e WHERE e.token_digest = p_token_digest
$$;

--
-- Name: invitations; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.invitations (
    id uuid NOT NULL,
    organization_id uuid NOT NULL,
    email text NOT NULL,
    token_digest text NOT NULL,
    invited_by uuid NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    ended_at timestamp with time zone,
    accepted_by uuid,
    CONSTRAINT invitations_acceptance_shape CHECK (((state = 'accepted'::text) = (accepted_by IS NOT NULL))),
    CONSTRAINT invitations_digest_shape CHECK ((token_digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT invitations_email_lower_case CHECK ((email = lower(email))),
    CONSTRAINT invitations_end_shape CHECK (((state = 'pending'::text) = (ended_at IS NULL))),
    CONSTRAINT invitations_lifetime_positive CHECK ((expires_at > created_at)),
    CONSTRAINT invitations_state_known CHECK ((state = ANY (ARRAY['pending'::text, 'accepted'::text, 'revoked'::text])))
);

--
-- Name: find_invitation(uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_invitation(p_id uuid) RETURNS SETOF identity.invitations
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT i.* FROM identity.invitations AS i WHERE i.id = p_id FOR UPDATE
$$;

--
-- Name: find_invitation_by_token(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_invitation_by_token(p_token_digest text) RETURNS SETOF identity.invitations
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT i.* FROM identity.invitations AS i WHERE i.token_digest = p_token_digest FOR UPDATE
$$;

--
-- Name: magic_links; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.magic_links (
    id uuid NOT NULL,
    identity_id uuid NOT NULL,
    email text NOT NULL,
    token_digest text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    redeemed_at timestamp with time zone,
    CONSTRAINT magic_links_digest_shape CHECK ((token_digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT magic_links_lifetime_positive CHECK ((expires_at > created_at))
);

--
-- Name: find_magic_link_by_token(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_magic_link_by_token(p_token_digest text) RETURNS SETOF identity.magic_links
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT m.* FROM identity.magic_links AS m WHERE m.token_digest = p_token_digest FOR UPDATE
$$;

--
-- Name: find_magic_link_target(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_magic_link_target(p_email text) RETURNS TABLE(target_identity_id uuid, link_id uuid, link_email text, link_token_digest text, link_created_at timestamp with time zone, link_expires_at timestamp with time zone, link_redeemed_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_link identity.magic_links%ROWTYPE;
BEGIN
    SELECT l.identity_id INTO target_identity_id
    FROM identity.login_identifiers AS l
    WHERE l.value = p_email AND l.verified_at IS NOT NULL AND l.channel = 'email';
    SELECT m.* INTO v_link
    FROM identity.magic_links AS m
    WHERE m.email = p_email AND m.redeemed_at IS NULL AND m.identity_id = target_identity_id
    ORDER BY m.created_at DESC, m.id DESC
    LIMIT 1
    FOR UPDATE;
    link_id := v_link.id;
    link_email := v_link.email;
    link_token_digest := v_link.token_digest;
    link_created_at := v_link.created_at;
    link_expires_at := v_link.expires_at;
    link_redeemed_at := v_link.redeemed_at;
    RETURN NEXT;
END
$$;

--
-- Name: memberships; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.memberships (
    organization_id uuid NOT NULL,
    identity_id uuid NOT NULL,
    permissions text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT memberships_permissions_known CHECK ((permissions <@ ARRAY['organization.account.manage'::text]))
);

--
-- Name: find_membership(uuid, uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_membership(p_organization_id uuid, p_identity_id uuid) RETURNS SETOF identity.memberships
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT m.* FROM identity.memberships AS m
    WHERE m.organization_id = p_organization_id AND m.identity_id = p_identity_id
$$;

--
-- Name: organizations; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.organizations (
    id uuid NOT NULL,
    name text NOT NULL,
    created_by uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    CONSTRAINT organizations_name_length CHECK (((length(name) >= 1) AND (length(name) <= 200)))
);

--
-- Name: find_organization(uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_organization(p_id uuid) RETURNS SETOF identity.organizations
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT o.* FROM identity.organizations AS o WHERE o.id = p_id
$$;

--
-- Name: find_recovery_target(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_recovery_target(p_identifier text) RETURNS TABLE(target_identity_id uuid, challenge_id uuid, challenge_identity_id uuid, challenge_identifier text, challenge_channel text, challenge_code_hash text, challenge_failed_attempts integer, challenge_state text, challenge_created_at timestamp with time zone, challenge_expires_at timestamp with time zone, challenge_ended_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_challenge identity.challenges%ROWTYPE;
BEGIN
    SELECT l.identity_id INTO target_identity_id
    FROM identity.login_identifiers AS l
    WHERE l.value = p_identifier AND l.verified_at IS NOT NULL;
    SELECT c.* INTO v_challenge
    FROM identity.challenges AS c
    WHERE c.purpose = 'password_recovery' AND c.identifier = p_identifier AND c.state = 'open'
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT 1
    FOR UPDATE;
    challenge_id := v_challenge.id;
    challenge_identity_id := v_challenge.identity_id;
    challenge_identifier := v_challenge.identifier;
    challenge_channel := v_challenge.channel;
    challenge_code_hash := v_challenge.code_hash;
    challenge_failed_attempts := v_challenge.failed_attempts;
    challenge_state := v_challenge.state;
    challenge_created_at := v_challenge.created_at;
    challenge_expires_at := v_challenge.expires_at;
    challenge_ended_at := v_challenge.ended_at;
    RETURN NEXT;
END
$$;

--
-- Name: sessions; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.sessions (
    id uuid NOT NULL,
    identity_id uuid NOT NULL,
    token_digest text NOT NULL,
    created_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    staff boolean DEFAULT false NOT NULL,
    CONSTRAINT sessions_digest_shape CHECK ((token_digest ~ '^[0-9a-f]{64}$'::text))
);

--
-- Name: find_session(text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_session(p_token_digest text) RETURNS SETOF identity.sessions
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT s.* FROM identity.sessions AS s WHERE s.token_digest = p_token_digest
$$;

--
-- Name: find_verified_identifiers(uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.find_verified_identifiers(p_identity_id uuid) RETURNS TABLE(value text, channel text, created_at timestamp with time zone, verified_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT l.value, l.channel, l.created_at, l.verified_at
    FROM identity.login_identifiers AS l
    WHERE l.identity_id = p_identity_id AND l.verified_at IS NOT NULL
    ORDER BY l.channel <> 'email', l.created_at, l.value
$$;

--
-- Name: grant_elevation(boolean, uuid, uuid, uuid, uuid, text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.grant_elevation(p_staff boolean, p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM 1 FROM identity.challenges AS c
    WHERE c.id = p_challenge_id
      AND c.purpose = 'step_up'
      AND c.identity_id = p_identity_id
      AND c.state = 'consumed'
      AND NOT EXISTS (SELECT 1 FROM identity.elevations AS e WHERE e.challenge_id = c.id)
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'an elevation needs a consumed step-up challenge of the session''s identity'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM 1 FROM identity.sessions AS s
    WHERE s.id = p_session_id
      AND s.identity_id = p_identity_id
      AND s.staff = p_staff
      AND s.revoked_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no session of this identity that this role may elevate'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO identity.elevations (
        id, session_id, identity_id, token_digest, created_at, expires_at, challenge_id
    ) VALUES (
        p_id, p_session_id, p_identity_id, p_token_digest, p_created_at, p_expires_at,
        p_challenge_id
    );
END
$$;

--
-- Name: hit_rate_limit(text, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.hit_rate_limit(p_key text, p_window_start timestamp with time zone, p_window_end timestamp with time zone) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM identity.rate_limit_counters AS r
    WHERE (r.key, r.window_start) IN (
        SELECT old.key, old.window_start FROM identity.rate_limit_counters AS old
        WHERE old.window_end <= p_window_start
        ORDER BY old.window_end
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.rate_limit_counters AS r (key, window_start, window_end, hits)
    VALUES (p_key, p_window_start, p_window_end, 1)
    ON CONFLICT (key, window_start) DO UPDATE SET hits = r.hits + 1
    RETURNING r.hits;
$$;

--
-- Name: hold_code_budget(uuid, text, date); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.hold_code_budget(p_identity_id uuid, p_audience text, p_day date) RETURNS TABLE(wrong_codes integer, exhausted_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM identity.code_budgets AS b
    WHERE (b.identity_id, b.audience, b.day) IN (
        SELECT old.identity_id, old.audience, old.day FROM identity.code_budgets AS old
        WHERE old.day < p_day
        ORDER BY old.day
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.code_budgets AS b (identity_id, audience, day)
    VALUES (p_identity_id, p_audience, p_day)
    ON CONFLICT (identity_id, audience, day) DO UPDATE SET wrong_codes = b.wrong_codes
    RETURNING b.wrong_codes, b.exhausted_at;
$$;

--
-- Name: notify_suppressed_identifier(text, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.notify_suppressed_identifier(p_destination text, p_occurred_at timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_identity uuid;
    v_count integer := 0;
    v_other record;
BEGIN
    SELECT l.identity_id INTO v_identity
    FROM identity.login_identifiers AS l
    WHERE l.value = p_destination AND l.verified_at IS NOT NULL;
    IF v_identity IS NULL THEN
        RETURN 0;
    END IF;
    FOR v_other IN
        SELECT l.value, l.channel
        FROM identity.login_identifiers AS l
        WHERE l.identity_id = v_identity AND l.verified_at IS NOT NULL AND l.value <> p_destination
        ORDER BY l.channel <> 'email', l.created_at, l.value
    LOOP
        PERFORM outbox.enqueue_message(
            pg_catalog.gen_random_uuid(), 'security_notice', v_other.channel, v_other.value,
            v_identity, 'security_notice',
            pg_catalog.jsonb_build_object(
                'change', 'identifier_suppressed',
                'identifier', outbox.mask_destination(p_destination),
                'occurred_at', pg_catalog.to_char(
                    p_occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'
                )
            ),
            'en'
        );
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END
$$;

--
-- Name: open_magic_link_if_known(uuid, uuid, text, text, timestamp with time zone, timestamp with time zone, uuid, text, jsonb, text, text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.open_magic_link_if_known(p_identity_id uuid, p_link_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_identity_id IS NULL THEN
        RETURN;
    END IF;
    PERFORM identity.save_magic_link(
        p_link_id, p_identity_id, p_email, p_token_digest, p_created_at, p_expires_at, NULL
    );
    PERFORM outbox.enqueue_message(
        p_id => p_message_id,
        p_purpose => 'magic_link',
        p_channel => 'email',
        p_destination => p_email,
        p_subject_id => p_link_id,
        p_template => p_template,
        p_params => p_params,
        p_locale => p_locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => p_expires_at
    );
END
$$;

--
-- Name: open_recovery_if_known(uuid, uuid, text, text, text, integer, timestamp with time zone, timestamp with time zone, uuid, text, jsonb, text, text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.open_recovery_if_known(p_identity_id uuid, p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_identity_id uuid := COALESCE(p_identity_id, p_challenge_id);
BEGIN
    BEGIN
        IF p_identity_id IS NULL THEN
            INSERT INTO identity.identities (id, created_at) VALUES (v_identity_id, p_created_at);
        END IF;
        UPDATE identity.challenges AS c
        SET state = 'closed', ended_at = p_created_at
        WHERE c.purpose = 'password_recovery' AND c.identifier = p_identifier
          AND c.state = 'open' AND c.id <> p_challenge_id;
        PERFORM identity.save_challenge(
            p_challenge_id, 'password_recovery', v_identity_id, p_identifier, p_channel,
            p_code_hash, p_failed_attempts, 'open', p_created_at, p_expires_at, NULL
        );
        PERFORM outbox.enqueue_message(
            p_id => p_message_id,
            p_purpose => 'password_recovery',
            p_channel => p_channel,
            p_destination => p_identifier,
            p_subject_id => p_challenge_id,
            p_template => p_template,
            p_params => p_params,
            p_locale => p_locale,
            p_sealed_secret => p_sealed_secret,
            p_expires_at => p_expires_at
        );
        IF p_identity_id IS NULL THEN
            -- Undo the stand-in's rows; only this exception is caught, here.
            RAISE EXCEPTION USING ERRCODE = 'OXR01';
        END IF;
    EXCEPTION
        WHEN SQLSTATE 'OXR01' THEN
            NULL;
        WHEN OTHERS THEN
            -- The stand-in's rows were never to be kept: their failure changes nothing, and
            -- the answer stays the one a known identifier's hidden failure gets.
            IF p_identity_id IS NOT NULL THEN
                RAISE;
            END IF;
    END;
END
$$;

--
-- Name: pace_destination(text, timestamp with time zone, interval, interval, interval); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.pace_destination(p_key text, p_now timestamp with time zone, p_first_wait interval, p_max_wait interval, p_quiet interval) RETURNS interval
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_next timestamptz;
BEGIN
    DELETE FROM identity.destination_paces AS p
    WHERE p.key IN (
        SELECT old.key FROM identity.destination_paces AS old
        WHERE old.last_sent_at <= p_now - p_quiet AND old.key <> p_key
        ORDER BY old.last_sent_at
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.destination_paces AS p (key, sends, last_sent_at, next_send_at)
    VALUES (p_key, 1, p_now, p_now + LEAST(p_first_wait, p_max_wait))
    ON CONFLICT (key) DO UPDATE
    SET sends = CASE WHEN p_now >= p.last_sent_at + p_quiet THEN 1 ELSE p.sends + 1 END,
        last_sent_at = p_now,
        next_send_at = p_now + LEAST(
            p_max_wait,
            p_first_wait * pg_catalog.power(
                2, CASE WHEN p_now >= p.last_sent_at + p_quiet THEN 0 ELSE LEAST(p.sends, 30) END
            )
        )
    WHERE p.next_send_at <= p_now;
    IF FOUND THEN
        RETURN NULL;
    END IF;
    SELECT p.next_send_at INTO v_next FROM identity.destination_paces AS p WHERE p.key = p_key;
    RETURN v_next - p_now;
END
$$;

--
-- Name: pace_wait(text, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.pace_wait(p_key text, p_now timestamp with time zone) RETURNS interval
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p.next_send_at - p_now
    FROM identity.destination_paces AS p
    WHERE p.key = p_key AND p.next_send_at > p_now
$$;

--
-- Name: preferred_locale(uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.preferred_locale(p_identity_id uuid) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT i.preferred_locale FROM identity.identities AS i WHERE i.id = p_identity_id
$$;

--
-- Name: refuse_unsent_code_change(); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.refuse_unsent_code_change() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF OLD.state <> 'open' OR NEW.state <> 'open' OR NOT EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.subject_id = NEW.id
          AND m.purpose = NEW.purpose
          AND m.destination = NEW.identifier
          AND m.state = 'pending'
          AND m.created_at >= pg_catalog.transaction_timestamp()
    ) THEN
        RAISE EXCEPTION 'a challenge''s code changes only by a resend or a reissue, which send it'
            USING ERRCODE = 'integrity_constraint_violation',
                  SCHEMA = 'identity', TABLE = 'challenges',
                  CONSTRAINT = 'challenges_code_changes_are_sent';
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: revoke_session(uuid, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.revoke_session(p_session_id uuid, p_now timestamp with time zone) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH revoked AS (
        UPDATE identity.sessions AS s
        SET revoked_at = p_now
        WHERE s.id = p_session_id AND s.revoked_at IS NULL AND s.expires_at > p_now
        RETURNING s.id
    )
    SELECT pg_catalog.count(*)::integer FROM revoked
$$;

--
-- Name: revoke_sessions(uuid, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.revoke_sessions(p_identity_id uuid, p_now timestamp with time zone) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH revoked AS (
        UPDATE identity.sessions AS s
        SET revoked_at = p_now
        WHERE s.identity_id = p_identity_id AND s.revoked_at IS NULL AND s.expires_at > p_now
        RETURNING s.id
    )
    SELECT pg_catalog.count(*)::integer FROM revoked
$$;

--
-- Name: save_challenge(uuid, text, uuid, text, text, text, integer, text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_challenge(p_id uuid, p_purpose text, p_identity_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.challenges AS c (
        id, purpose, identity_id, identifier, channel, code_hash, failed_attempts, state,
        created_at, expires_at, ended_at
    ) VALUES (
        p_id, p_purpose, p_identity_id, p_identifier, p_channel, p_code_hash, p_failed_attempts,
        p_state, p_created_at, p_expires_at, p_ended_at
    )
    ON CONFLICT (id) DO UPDATE
    SET code_hash = excluded.code_hash,
        failed_attempts = excluded.failed_attempts,
        state = excluded.state,
        expires_at = excluded.expires_at,
        ended_at = excluded.ended_at
$$;

--
-- Name: save_code_budget(uuid, text, date, integer, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_code_budget(p_identity_id uuid, p_audience text, p_day date, p_wrong_codes integer, p_exhausted_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.code_budgets AS b (identity_id, audience, day, wrong_codes, exhausted_at)
    VALUES (p_identity_id, p_audience, p_day, p_wrong_codes, p_exhausted_at)
    ON CONFLICT (identity_id, audience, day) DO UPDATE
    SET wrong_codes = excluded.wrong_codes, exhausted_at = excluded.exhausted_at
$$;

--
-- Name: save_invitation(uuid, uuid, text, text, uuid, text, timestamp with time zone, timestamp with time zone, timestamp with time zone, uuid); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_invitation(p_id uuid, p_organization_id uuid, p_email text, p_token_digest text, p_invited_by uuid, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone, p_accepted_by uuid) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.invitations (
        id, organization_id, email, token_digest, invited_by, state, created_at, expires_at,
        ended_at, accepted_by
    ) VALUES (
        p_id, p_organization_id, p_email, p_token_digest, p_invited_by, p_state, p_created_at,
        p_expires_at, p_ended_at, p_accepted_by
    )
    ON CONFLICT (id) DO UPDATE
    SET state = excluded.state, ended_at = excluded.ended_at, accepted_by = excluded.accepted_by
$$;

--
-- Name: save_login_identifier(text, text, uuid, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_login_identifier(p_value text, p_channel text, p_identity_id uuid, p_created_at timestamp with time zone, p_verified_at timestamp with time zone) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO identity.login_identifiers AS l (value, channel, identity_id, created_at, verified_at)
    VALUES (p_value, p_channel, p_identity_id, p_created_at, p_verified_at)
    ON CONFLICT (value) DO UPDATE
    SET channel = excluded.channel,
        identity_id = excluded.identity_id,
        created_at = CASE
            WHEN l.identity_id = excluded.identity_id THEN l.created_at ELSE excluded.created_at
        END,
        verified_at = excluded.verified_at
    WHERE l.identity_id = excluded.identity_id OR l.verified_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the identifier belongs to another identity'
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'login_identifiers_taken';
    END IF;
END
$$;

--
-- Name: save_magic_link(uuid, uuid, text, text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_magic_link(p_id uuid, p_identity_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_redeemed_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.magic_links (
        id, identity_id, email, token_digest, created_at, expires_at, redeemed_at
    ) VALUES (
        p_id, p_identity_id, p_email, p_token_digest, p_created_at, p_expires_at, p_redeemed_at
    )
    ON CONFLICT (id) DO UPDATE
    SET token_digest = excluded.token_digest,
        expires_at = excluded.expires_at,
        redeemed_at = excluded.redeemed_at
$$;

--
-- Name: save_membership(uuid, uuid, text[], timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_membership(p_organization_id uuid, p_identity_id uuid, p_permissions text[], p_created_at timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.memberships (organization_id, identity_id, permissions, created_at)
    VALUES (p_organization_id, p_identity_id, p_permissions, p_created_at)
    ON CONFLICT (organization_id, identity_id) DO UPDATE SET permissions = excluded.permissions
$$;

--
-- Name: save_password(uuid, text, timestamp with time zone); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.save_password(p_identity_id uuid, p_password_hash text, p_now timestamp with time zone) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO identity.password_credentials (identity_id, password_hash, updated_at)
    VALUES (p_identity_id, p_password_hash, p_now)
    ON CONFLICT (identity_id) DO UPDATE
    SET password_hash = excluded.password_hash, updated_at = excluded.updated_at
$$;

--
-- Name: set_preferred_locale(uuid, text); Type: FUNCTION; Schema: identity; Owner: -
--

CREATE FUNCTION identity.set_preferred_locale(p_identity_id uuid, p_locale text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
BEGIN
    IF p_locale !~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$' THEN
        RAISE EXCEPTION 'p_locale: expected a language tag such as es or pt-BR'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE identity.identities AS i SET preferred_locale = p_locale WHERE i.id = p_identity_id;
    RETURN FOUND;
END
$_$;

--
-- Name: list_dead_letters(text, integer); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.list_dead_letters(p_consumer text, p_limit integer) RETURNS TABLE(event_id uuid, subject text, headers jsonb, payload bytea, attempts integer, error_class text, dead_lettered_at timestamp with time zone, replay_requested_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.list_dead_letters_unchecked(p_consumer, p_limit);
END
$$;

--
-- Name: list_dead_letters_unchecked(text, integer); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.list_dead_letters_unchecked(p_consumer text, p_limit integer) RETURNS TABLE(event_id uuid, subject text, headers jsonb, payload bytea, attempts integer, error_class text, dead_lettered_at timestamp with time zone, replay_requested_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT d.event_id, d.subject, d.headers, d.payload, d.attempts, d.error_class,
           d.dead_lettered_at, d.replay_requested_at
    FROM inbox.dead_letters AS d
    WHERE d.consumer = p_consumer
    ORDER BY d.dead_lettered_at, d.event_id
    LIMIT LEAST(GREATEST(p_limit, 1), 1000)
$$;

--
-- Name: list_received(text, integer); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.list_received(p_consumer text, p_limit integer) RETURNS TABLE(event_id uuid, stream_sequence bigint, received_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.list_received_unchecked(p_consumer, p_limit);
END
$$;

--
-- Name: list_received_unchecked(text, integer); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.list_received_unchecked(p_consumer text, p_limit integer) RETURNS TABLE(event_id uuid, stream_sequence bigint, received_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT r.event_id, r.stream_sequence, r.received_at
    FROM inbox.received AS r
    WHERE r.consumer = p_consumer
    ORDER BY r.received_at DESC, r.event_id
    LIMIT LEAST(GREATEST(p_limit, 1), 1000)
$$;

--
-- Name: own_consumer(text); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.own_consumer(p_consumer text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_login name := SESSION_USER;
BEGIN
    IF pg_catalog.pg_has_role(v_login, 'outbox_owner', 'MEMBER') THEN
        RETURN;  -- the database operator reads and repairs any consumer
    END IF;
    IF p_consumer IS NULL OR p_consumer !~ '^[A-Za-z0-9_-]{1,100}$' THEN
        RAISE EXCEPTION 'p_consumer: expected 1 to 100 of A-Z, a-z, 0-9, _ and -'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO inbox.consumers (name, owner_login) VALUES (p_consumer, v_login)
    ON CONFLICT (name) DO NOTHING;
    IF NOT EXISTS (
        SELECT 1 FROM inbox.consumers AS c WHERE c.name = p_consumer AND c.owner_login = v_login
    ) THEN
        RAISE EXCEPTION 'inbox consumer % belongs to another database login', p_consumer
            USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$_$;

--
-- Name: record_dead_letter(text, uuid, text, jsonb, bytea, integer, text); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.record_dead_letter(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    PERFORM inbox.record_dead_letter_unchecked(
        p_consumer, p_event_id, p_subject, p_headers, p_payload, p_attempts, p_error_class
    );
END
$$;

--
-- Name: record_dead_letter_unchecked(text, uuid, text, jsonb, bytea, integer, text); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.record_dead_letter_unchecked(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO inbox.dead_letters AS d (
        consumer, event_id, subject, headers, payload, attempts, error_class
    )
    VALUES (p_consumer, p_event_id, p_subject, p_headers, p_payload, p_attempts, p_error_class)
    ON CONFLICT (consumer, event_id) DO UPDATE
    SET attempts = d.attempts + EXCLUDED.attempts,
        error_class = EXCLUDED.error_class,
        dead_lettered_at = pg_catalog.statement_timestamp(),
        replay_requested_at = NULL
$$;

--
-- Name: record_receipt(text, uuid, bigint); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.record_receipt(p_consumer text, p_event_id uuid, p_stream_sequence bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN inbox.record_receipt_unchecked(p_consumer, p_event_id, p_stream_sequence);
END
$$;

--
-- Name: record_receipt_unchecked(text, uuid, bigint); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.record_receipt_unchecked(p_consumer text, p_event_id uuid, p_stream_sequence bigint) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH inserted AS (
        INSERT INTO inbox.received (consumer, event_id, stream_sequence)
        VALUES (p_consumer, p_event_id, p_stream_sequence)
        ON CONFLICT (consumer, event_id) DO NOTHING
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM inserted)
$$;

--
-- Name: request_replay(text, uuid); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.request_replay(p_consumer text, p_event_id uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN inbox.request_replay_unchecked(p_consumer, p_event_id);
END
$$;

--
-- Name: request_replay_unchecked(text, uuid); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.request_replay_unchecked(p_consumer text, p_event_id uuid) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH marked AS (
        UPDATE inbox.dead_letters AS d
        SET replay_requested_at = pg_catalog.statement_timestamp()
        WHERE d.consumer = p_consumer AND d.event_id = p_event_id
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM marked)
$$;

--
-- Name: take_replay(text); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.take_replay(p_consumer text) RETURNS TABLE(event_id uuid, subject text, headers jsonb, payload bytea, attempts integer, error_class text, dead_lettered_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.take_replay_unchecked(p_consumer);
END
$$;

--
-- Name: take_replay_unchecked(text); Type: FUNCTION; Schema: inbox; Owner: -
--

CREATE FUNCTION inbox.take_replay_unchecked(p_consumer text) RETURNS TABLE(event_id uuid, subject text, headers jsonb, payload bytea, attempts integer, error_class text, dead_lettered_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH taken AS (
        SELECT d.consumer, d.event_id
        FROM inbox.dead_letters AS d
        WHERE d.consumer = p_consumer AND d.replay_requested_at IS NOT NULL
        ORDER BY d.replay_requested_at, d.event_id
        LIMIT 1
        FOR UPDATE SKIP LOCKED
    )
    DELETE FROM inbox.dead_letters AS d
    USING taken
    WHERE d.consumer = taken.consumer AND d.event_id = taken.event_id
    RETURNING d.event_id, d.subject, d.headers, d.payload, d.attempts, d.error_class,
        d.dead_lettered_at
$$;

--
-- Name: intent_snapshots(uuid); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.intent_snapshots(p_id uuid) RETURNS TABLE(snapshot_id uuid, intent_id uuid, intent_key text, category_code text, recipient_id uuid, source text, channel text, masked_destination text, template text, locale text, variables jsonb, decision text, created_at timestamp with time zone, message_state text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT s.id, i.id, i.intent_key, i.category_code, i.recipient_id, i.source, s.channel,
           s.masked_destination, s.template, s.locale, s.variables, s.decision, s.created_at,
           m.state
    FROM notifications.intents AS i
    JOIN notifications.snapshots AS s ON s.intent_id = i.id
    LEFT JOIN outbox.messages AS m ON m.id = s.id
    WHERE i.id = p_id
       OR i.id = (SELECT x.intent_id FROM notifications.snapshots AS x WHERE x.id = p_id)
    ORDER BY s.created_at, s.channel
$$;

--
-- Name: opt_in(uuid, text, text[]); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.opt_in(p_recipient_id uuid, p_category text, p_channels text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_count integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM notifications.categories AS c WHERE c.code = p_category) THEN
        RAISE EXCEPTION 'p_category: no category %', p_category
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM notifications.consent_opt_outs AS o
    WHERE o.recipient_id = p_recipient_id
      AND o.category_code = p_category
      AND (p_channels IS NULL OR pg_catalog.cardinality(p_channels) = 0
           OR o.channel = ANY (p_channels));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;

--
-- Name: opt_out(uuid, text, text[]); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.opt_out(p_recipient_id uuid, p_category text, p_channels text[]) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_channels text[];
    v_count integer;
BEGIN
    SELECT c.channels INTO v_channels FROM notifications.categories AS c WHERE c.code = p_category;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_category: no category %', p_category
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_channels IS NOT NULL AND pg_catalog.cardinality(p_channels) > 0 THEN
        IF NOT p_channels <@ v_channels THEN
            RAISE EXCEPTION 'p_channels: % is sent by % only', p_category, v_channels
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        v_channels := p_channels;
    END IF;
    IF p_recipient_id IS NULL THEN
        RAISE EXCEPTION 'p_recipient_id: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO notifications.consent_opt_outs (recipient_id, category_code, channel)
    SELECT p_recipient_id, p_category, ch FROM pg_catalog.unnest(v_channels) AS ch
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END
$$;

--
-- Name: opt_outs(uuid); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.opt_outs(p_recipient_id uuid) RETURNS TABLE(category_code text, channel text, opted_out_at timestamp with time zone)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT o.category_code, o.channel, o.opted_out_at
    FROM notifications.consent_opt_outs AS o
    WHERE o.recipient_id = p_recipient_id
    ORDER BY o.category_code, o.channel
$$;

--
-- Name: refuse_change(); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.refuse_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'notifications.% rows are frozen once written', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: take_snapshot(uuid, text, text, uuid, text, uuid, text, text, text, text, text, jsonb); Type: FUNCTION; Schema: notifications; Owner: -
--

CREATE FUNCTION notifications.take_snapshot(p_intent_id uuid, p_intent_key text, p_category text, p_recipient_id uuid, p_source text, p_snapshot_id uuid, p_channel text, p_destination text, p_masked_destination text, p_template text, p_locale text, p_variables jsonb) RETURNS TABLE(snapshot_id uuid, intent_id uuid, decision text, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_channels text[];
    v_template text;
    v_allowed text[];
    v_variables jsonb := COALESCE(p_variables, '{}');
    v_name text;
    v_value jsonb;
    v_intent_id uuid;
    v_intent_category text;
    v_decision text;
    v_inserted uuid;
BEGIN
    SELECT c.channels, c.template, c.variables INTO v_channels, v_template, v_allowed
    FROM notifications.categories AS c WHERE c.code = p_category;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'p_category: no category %', p_category
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_channel IS NULL OR NOT p_channel = ANY (v_channels) THEN
        RAISE EXCEPTION 'p_channel: % is not sent by %', p_channel, p_category
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_recipient_id IS NULL OR p_intent_id IS NULL OR p_snapshot_id IS NULL THEN
        RAISE EXCEPTION 'p_recipient_id, p_intent_id, p_snapshot_id: required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_template IS NULL OR p_template IS DISTINCT FROM v_template THEN
        RAISE EXCEPTION 'p_template: % is sent with template %, got %',
            p_category, COALESCE(v_template, '(none: set notifications.categories.template)'),
            p_template
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.jsonb_typeof(v_variables) <> 'object' THEN
        RAISE EXCEPTION 'p_variables: expected an object' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR v_name, v_value IN SELECT e.key, e.value FROM pg_catalog.jsonb_each(v_variables) AS e LOOP
        IF NOT v_name = ANY (v_allowed) THEN
            RAISE EXCEPTION 'p_variables: % carries no variable %', p_category, v_name
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        IF pg_catalog.jsonb_typeof(v_value) <> 'string'
            OR pg_catalog.length(v_value #>> '{}') > 500
            OR (v_value #>> '{}') ~* (
                '[[:alpha:]][[:alnum:]+.-]*:/'
                '|www[.。．｡]'
                '|[[:alnum:]-][.。．｡][[:alpha:]]{2,}'
            ) THEN
            RAISE EXCEPTION 'p_variables.%: expected text of at most 500 characters, without a link',
                v_name USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM identity.identities AS i WHERE i.id = p_recipient_id) THEN
        RAISE EXCEPTION 'p_recipient_id: no such recipient' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM identity.login_identifiers AS l
        WHERE l.identity_id = p_recipient_id
          AND l.channel = CASE p_channel WHEN 'email' THEN 'email' ELSE 'sms' END
          AND l.verified_at IS NOT NULL
          AND l.value = p_destination
    ) THEN
        RAISE EXCEPTION 'p_destination: not a verified % address of the recipient', p_channel
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_masked_destination IS DISTINCT FROM outbox.mask_destination(p_destination) THEN
        RAISE EXCEPTION 'p_masked_destination: expected the destination''s own mask'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    INSERT INTO notifications.intents AS i (id, intent_key, category_code, recipient_id, source)
    VALUES (p_intent_id, p_intent_key, p_category, p_recipient_id, p_source)
    ON CONFLICT ON CONSTRAINT intents_once_per_recipient DO NOTHING;
    SELECT i.id, i.category_code INTO v_intent_id, v_intent_category
    FROM notifications.intents AS i
    WHERE i.intent_key = p_intent_key AND i.recipient_id = p_recipient_id;
    IF v_intent_category <> p_category THEN
        RAISE EXCEPTION 'p_intent_key: already an intent of category %', v_intent_category
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    SELECT s.id, s.intent_id, s.decision, false
    FROM notifications.snapshots AS s
    WHERE s.intent_id = v_intent_id AND s.channel = p_channel;
    IF FOUND THEN
        RETURN;
    END IF;

    v_decision := CASE WHEN EXISTS (
        SELECT 1 FROM notifications.consent_opt_outs AS o
        WHERE o.recipient_id = p_recipient_id
          AND o.category_code = p_category
          AND o.channel = p_channel
    ) THEN 'suppressed_by_consent' ELSE 'send' END;

    INSERT INTO notifications.snapshots AS s (
        id, intent_id, channel, masked_destination, template, locale, variables, decision
    ) VALUES (
        p_snapshot_id, v_intent_id, p_channel, p_masked_destination, p_template, p_locale,
        v_variables, v_decision
    )
    ON CONFLICT ON CONSTRAINT snapshots_once_per_channel DO NOTHING
    RETURNING s.id INTO v_inserted;
    IF v_inserted IS NULL THEN
        -- A concurrent request for the same intent and channel committed first.
        RETURN QUERY
        SELECT s.id, s.intent_id, s.decision, false
        FROM notifications.snapshots AS s
        WHERE s.intent_id = v_intent_id AND s.channel = p_channel;
        RETURN;
    END IF;

    IF v_decision = 'send' THEN
        PERFORM outbox.enqueue_message(
            p_id => p_snapshot_id,
            p_purpose => 'notification',
            p_channel => p_channel,
            p_destination => p_destination,
            p_subject_id => NULL,
            p_template => p_template,
            p_params => v_variables,
            p_locale => p_locale
        );
    END IF;
    RETURN QUERY SELECT p_snapshot_id, v_intent_id, v_decision, true;
END
$$;

--
-- Name: add_suppression(uuid, uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.add_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_channel text, p_reason text) RETURNS TABLE(id uuid, destination text, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_digest text;
    v_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_destination IS NULL OR p_destination = '' THEN
        RAISE EXCEPTION 'destination: required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_reason IS NULL OR pg_catalog.length(pg_catalog.btrim(p_reason)) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'reason: required, at most 500 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_channel IS NULL OR p_channel NOT IN ('email', 'sms', 'whatsapp') THEN
        RAISE EXCEPTION 'channel: expected email, sms or whatsapp'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_digest := pg_catalog.encode(
        pg_catalog.sha256(pg_catalog.convert_to(p_destination, 'UTF8')), 'hex'
    );
    INSERT INTO outbox.suppressions AS s (
        id, destination_digest, destination_masked, channel, cause, created_at
    ) VALUES (
        pg_catalog.gen_random_uuid(), v_digest, outbox.mask_destination(p_destination),
        p_channel, 'operator', v_now
    )
    ON CONFLICT (destination_digest) WHERE lifted_at IS NULL DO NOTHING
    RETURNING s.id INTO v_id;
    IF v_id IS NULL THEN
        SELECT s.id INTO v_id FROM outbox.suppressions AS s
        WHERE s.destination_digest = v_digest AND s.lifted_at IS NULL;
        RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination), false;
        RETURN;
    END IF;
    INSERT INTO outbox.suppression_audit (
        suppression_id, action, actor_id, elevation_id, reason, occurred_at
    ) VALUES (v_id, 'add', p_actor, p_elevation_id, pg_catalog.btrim(p_reason), v_now);
    RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination), true;
END
$$;

--
-- Name: backlog(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.backlog(p_actor uuid) RETURNS TABLE(pending bigint, leased bigint, published bigint, dead_lettered bigint, oldest_due_age_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT b.pending, b.leased, b.published, b.dead_lettered, b.oldest_due_age_seconds
    FROM outbox.count_backlog() AS b;
END
$$;

--
-- Name: backlog_metrics(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.backlog_metrics() RETURNS TABLE(pending bigint, leased bigint, published bigint, dead_lettered bigint, oldest_due_age_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT b.pending, b.leased, b.published, b.dead_lettered, b.oldest_due_age_seconds
    FROM outbox.count_backlog() AS b
$$;

--
-- Name: break_glass_step_up(text, uuid, text, timestamp with time zone, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.break_glass_step_up(p_email text, p_challenge_id uuid, p_code_hash text, p_expires_at timestamp with time zone, p_reason text) RETURNS TABLE(outcome text, identity_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: cancel_by_subject(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_cancelled integer;
BEGIN
    IF p_reason IS NULL
        OR p_reason NOT IN ('challenge_consumed', 'invitation_revoked', 'challenge_locked') THEN
        RAISE EXCEPTION
            'p_reason: expected challenge_consumed, invitation_revoked or challenge_locked, got %',
            p_reason USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH cancelled AS (
        UPDATE outbox.messages AS m
        SET state = 'dead_lettered',
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            dead_lettered_at = v_now,
            dead_letter_reason = p_reason
        WHERE m.subject_id = p_subject_id
          AND m.state IN ('pending', 'leased')
          AND m.purpose IN ('sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
                            'invitation', 'magic_link')
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING cancelled AS c WHERE e.message_id = c.id
    )
    SELECT pg_catalog.count(*) INTO v_cancelled FROM cancelled;
    RETURN v_cancelled;
END
$$;

--
-- Name: change_provider_pause(boolean, uuid, uuid, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.change_provider_pause(p_pause boolean, p_actor uuid, p_elevation uuid, p_provider text, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
BEGIN
    IF p_pause THEN
        INSERT INTO outbox.provider_pauses (provider, paused_by, reason, paused_at)
        VALUES (p_provider, p_actor, p_reason, v_now)
        ON CONFLICT (provider) DO NOTHING;
    ELSE
        DELETE FROM outbox.provider_pauses AS p WHERE p.provider = p_provider;
    END IF;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    INSERT INTO outbox.provider_pause_audit (
        action, provider, actor_id, elevation_id, reason, occurred_at
    ) VALUES (
        CASE WHEN p_pause THEN 'pause' ELSE 'resume' END, p_provider, p_actor, p_elevation,
        p_reason, v_now
    );
    RETURN true;
END
$$;

--
-- Name: check_attempt_sequence(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.check_attempt_sequence() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
DECLARE
    v_last integer;
BEGIN
    SELECT a.attempt INTO v_last
    FROM outbox.attempts AS a
    WHERE a.message_id = NEW.message_id AND a.counted
    ORDER BY a.attempt DESC
    LIMIT 1;
    IF NEW.attempt <> COALESCE(v_last, 0) + 1 THEN
        RAISE EXCEPTION 'attempt % of message % after counted attempt %: expected attempt %',
            NEW.attempt, NEW.message_id, COALESCE(v_last, 0), COALESCE(v_last, 0) + 1
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

--
-- Name: claim_messages(text, integer, double precision, double precision); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision, p_leave_urgent_seconds double precision DEFAULT 0) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: claim_urgent_messages(text, integer, double precision); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.claim_urgent_messages(p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
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

--
-- Name: count_backlog(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.count_backlog() RETURNS TABLE(pending bigint, leased bigint, published bigint, dead_lettered bigint, oldest_due_age_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT
        pg_catalog.count(*) FILTER (WHERE m.state = 'pending'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'leased'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'published'),
        pg_catalog.count(*) FILTER (WHERE m.state = 'dead_lettered'),
        (
            SELECT pg_catalog.date_part(
                'epoch', pg_catalog.statement_timestamp() - pg_catalog.min(d.claimable_at)
            )
            FROM outbox.messages AS d
            WHERE d.state = 'pending' AND d.claimable_at <= pg_catalog.statement_timestamp()
        )
    FROM outbox.messages AS m
$$;

--
-- Name: current_claim_floor(timestamp with time zone); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.current_claim_floor(p_now timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: dead_letter_repairs(uuid[]); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.dead_letter_repairs(p_message_ids uuid[]) RETURNS TABLE(message_id uuid, action text, new_message_id uuid, occurred_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(NULL);
    RETURN QUERY
    SELECT DISTINCT ON (a.message_id) a.message_id, a.action, a.new_message_id, a.occurred_at
    FROM outbox.staff_audit AS a
    WHERE a.message_id = ANY (p_message_ids) AND a.action IN ('reissue', 'requeue')
    ORDER BY a.message_id, a.id DESC;
END
$$;

--
-- Name: dead_letters(uuid, uuid, uuid, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.dead_letters(p_actor uuid, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(id uuid, purpose text, channel text, destination text, attempt_count integer, failure_class text, dead_lettered_at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.dead_lettered_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before) AND m.state = 'dead_lettered';
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no dead letter has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    IF p_before IS NULL THEN
        RETURN QUERY
        SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination),
               m.attempt_count, m.dead_letter_reason, m.dead_lettered_at, m.expires_at
        FROM outbox.messages AS m
        WHERE m.state = 'dead_lettered'
          AND (v_cursor_id IS NULL OR (m.dead_lettered_at, m.id) < (v_cursor_at, v_cursor_id))
        ORDER BY m.dead_lettered_at DESC, m.id DESC
        LIMIT p_limit;
    ELSE
        RETURN QUERY
        SELECT page.*
        FROM (
            SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination),
                   m.attempt_count, m.dead_letter_reason, m.dead_lettered_at, m.expires_at
            FROM outbox.messages AS m
            WHERE m.state = 'dead_lettered'
              AND (m.dead_lettered_at, m.id) > (v_cursor_at, v_cursor_id)
            ORDER BY m.dead_lettered_at, m.id
            LIMIT p_limit
        ) AS page (id, purpose, channel, destination, attempt_count, failure_class,
                   dead_lettered_at, expires_at)
        ORDER BY page.dead_lettered_at DESC, page.id DESC;
    END IF;
END
$$;

--
-- Name: delivery_state_after(text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.delivery_state_after(p_state text, p_event text) RETURNS text
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE
        WHEN p_event NOT IN ('delivered', 'failed', 'bounced', 'complained')
            THEN COALESCE(p_state, 'accepted')
        WHEN outbox.delivery_state_rank(p_event)
             > outbox.delivery_state_rank(COALESCE(p_state, 'accepted'))
            THEN p_event
        ELSE COALESCE(p_state, 'accepted')
    END
$$;

--
-- Name: delivery_state_counts(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.delivery_state_counts() RETURNS TABLE(state text, messages bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT k.state, COALESCE(c.messages, 0)
    FROM pg_catalog.unnest(
        ARRAY['accepted', 'delivered', 'failed', 'bounced', 'complained']
    ) AS k (state)
    LEFT JOIN (
        SELECT COALESCE(d.state, 'accepted') AS state, pg_catalog.count(*) AS messages
        FROM outbox.messages AS m
        LEFT JOIN outbox.delivery_states AS d ON d.message_id = m.id
        WHERE m.state = 'published'
        GROUP BY 1
    ) AS c ON c.state = k.state
$$;

--
-- Name: delivery_state_rank(text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.delivery_state_rank(p_state text) RETURNS integer
    LANGUAGE sql IMMUTABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE p_state
        WHEN 'accepted' THEN 0
        WHEN 'delivered' THEN 1
        WHEN 'failed' THEN 2
        WHEN 'bounced' THEN 3
        WHEN 'complained' THEN 4
    END
$$;

--
-- Name: enqueue_message(uuid, text, text, text, uuid, text, jsonb, text, text, timestamp with time zone, integer, timestamp with time zone, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, p_subject_id uuid, p_template text, p_params jsonb DEFAULT '{}'::jsonb, p_locale text DEFAULT 'en'::text, p_sealed_secret text DEFAULT NULL::text, p_expires_at timestamp with time zone DEFAULT NULL::timestamp with time zone, p_priority integer DEFAULT NULL::integer, p_not_before timestamp with time zone DEFAULT NULL::timestamp with time zone, p_trace_context text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_superseded integer := 0;
BEGIN
    IF p_purpose IS NULL OR p_purpose NOT IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up',
        'invitation', 'magic_link', 'notification', 'security_notice'
    ) THEN
        RAISE EXCEPTION 'p_purpose: unknown purpose %', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Notifications and security notices (0010_account_security.sql) carry no secret.
    IF p_purpose IN ('notification', 'security_notice') AND p_sealed_secret IS NOT NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a % message carries no secret', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_purpose NOT IN ('notification', 'security_notice') AND p_sealed_secret IS NULL THEN
        RAISE EXCEPTION 'p_sealed_secret: a % message needs a sealed secret', p_purpose
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_expires_at IS NOT NULL AND p_expires_at <= v_now THEN
        RAISE EXCEPTION 'p_expires_at: the message would be born expired'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_priority IS NOT NULL AND p_priority NOT BETWEEN 0 AND 2 THEN
        RAISE EXCEPTION 'p_priority: expected 0 (low), 1 (normal) or 2 (high), got %', p_priority
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.isfinite(p_not_before) THEN
        RAISE EXCEPTION 'p_not_before: expected a finite time, got %', p_not_before
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_trace_context !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' THEN
        RAISE EXCEPTION 'p_trace_context: expected a W3C traceparent (00-<trace id>-<span id>-<flags>)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_not_before >= p_expires_at THEN
        RAISE EXCEPTION 'p_not_before: the message would expire before it may be sent'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- A past not_before means now: it never moves a message ahead of the queue.
    INSERT INTO outbox.messages (
        id, purpose, channel, destination, subject_id, template, params, locale,
        available_at, expires_at, created_at, priority, trace_context
    ) VALUES (
        p_id, p_purpose, p_channel, p_destination, p_subject_id, p_template,
        COALESCE(p_params, '{}'), COALESCE(p_locale, 'en'),
        GREATEST(v_now, p_not_before), p_expires_at, v_now,
        COALESCE(p_priority, CASE p_purpose WHEN 'notification' THEN 1 ELSE 2 END),
        p_trace_context
    );
    IF p_sealed_secret IS NOT NULL THEN
        INSERT INTO outbox.envelopes (message_id, sealed) VALUES (p_id, p_sealed_secret);
    END IF;

    -- OB7: a newer message of a supersedable purpose withdraws every older live one of its
    -- subject. The UPDATE re-checks the state on the locked row, so a worker that records
    -- first wins and a worker that records later finds its lease gone (OX-S8).
    IF p_subject_id IS NOT NULL AND p_purpose IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up', 'magic_link'
    ) THEN
        WITH superseded AS (
            UPDATE outbox.messages AS m
            SET state = 'dead_lettered',
                lease_owner = NULL,
                lease_token = NULL,
                lease_expires_at = NULL,
                dead_lettered_at = v_now,
                dead_letter_reason = 'superseded_by_resend'
            WHERE m.subject_id = p_subject_id
              AND m.purpose = p_purpose
              AND m.state IN ('pending', 'leased')
              AND m.id <> p_id
            RETURNING m.id
        ), dropped AS (
            -- Probed by key (= ANY), never joined (0049): see outbox.lease_picked.
            DELETE FROM outbox.envelopes AS e
            WHERE e.message_id = ANY (ARRAY(SELECT s.id FROM superseded AS s))
        )
        SELECT pg_catalog.count(*) INTO v_superseded FROM superseded;
    END IF;

    -- A payload-free wake-up hint; identical notifications fold into one per transaction.
    -- High priority (codes, links, invitations, security notices) wakes the worker's
    -- reserved slot (0049_reserved_slot.sql) and only it (0065): the lane's batches still
    -- take such a message in any claim they make, and poll.
    IF COALESCE(p_priority, CASE p_purpose WHEN 'notification' THEN 1 ELSE 2 END) = 2 THEN
        PERFORM pg_catalog.pg_notify('outbox_urgent', '');
    ELSE
        PERFORM pg_catalog.pg_notify('outbox_work', '');
    END IF;
    RETURN v_superseded;
END
$_$;

--
-- Name: expire_messages(integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.expire_messages(p_limit integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_expired integer;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('outbox.expire_messages', 0)
    ) THEN
        RETURN 0;
    END IF;
    WITH picked AS (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased')
          AND m.expires_at <= v_now
          AND (m.state = 'pending' OR m.lease_expires_at <= v_now)
        ORDER BY m.expires_at
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), expired AS (
        UPDATE outbox.messages AS m
        SET state = 'dead_lettered',
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            dead_lettered_at = v_now,
            dead_letter_reason = CASE m.purpose
                WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired'
            END
        FROM picked
        WHERE m.id = picked.id
        RETURNING m.id
    ), dropped AS (
        DELETE FROM outbox.envelopes AS e USING expired AS x WHERE e.message_id = x.id
    )
    SELECT pg_catalog.count(*) INTO v_expired FROM expired;
    RETURN v_expired;
END
$$;

--
-- Name: find_messages(text, text, text, text, timestamp with time zone, timestamp with time zone, uuid, text, uuid, uuid, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.find_messages(p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(id uuid, purpose text, channel text, destination text, state text, attempt_count integer, created_at timestamp with time zone, dead_letter_reason text, provider text, repair_action text, repair_message_id uuid, repaired_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_operator(NULL);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.created_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no message has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    WITH page AS (
        SELECT m.*
        FROM outbox.messages AS m
        WHERE (p_state IS NULL OR m.state = p_state)
          AND (p_purpose IS NULL OR m.purpose = p_purpose)
          AND (p_reason IS NULL OR m.dead_letter_reason = p_reason)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at < p_until)
          AND (p_message_id IS NULL OR m.id = p_message_id)
          AND (p_destination_digest IS NULL OR pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(m.destination, 'UTF8')), 'hex'
          ) = p_destination_digest)
          AND (p_provider IS NULL OR EXISTS (
              SELECT 1 FROM outbox.attempts AS a
              WHERE a.message_id = m.id AND a.provider = p_provider
          ))
          AND (v_cursor_id IS NULL
               OR (p_before IS NULL AND (m.created_at, m.id) < (v_cursor_at, v_cursor_id))
               OR (p_before IS NOT NULL AND (m.created_at, m.id) > (v_cursor_at, v_cursor_id)))
        ORDER BY
            CASE WHEN p_before IS NULL THEN m.created_at END DESC,
            CASE WHEN p_before IS NULL THEN m.id END DESC,
            CASE WHEN p_before IS NOT NULL THEN m.created_at END,
            CASE WHEN p_before IS NOT NULL THEN m.id END
        LIMIT p_limit
    )
    SELECT p.id, p.purpose, p.channel, outbox.mask_destination(p.destination), p.state,
           p.attempt_count, p.created_at, p.dead_letter_reason,
           (
               SELECT a.provider FROM outbox.attempts AS a
               WHERE a.message_id = p.id
               ORDER BY a.id DESC
               LIMIT 1
           ),
           r.action, r.new_message_id, r.occurred_at
    FROM page AS p
    LEFT JOIN LATERAL (
        SELECT s.action, s.new_message_id, s.occurred_at
        FROM outbox.staff_audit AS s
        WHERE s.message_id = p.id AND s.action IN ('reissue', 'requeue')
        ORDER BY s.id DESC
        LIMIT 1
    ) AS r ON true
    ORDER BY p.created_at DESC, p.id DESC;
END
$$;

--
-- Name: grant_staff(text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.grant_staff(p_email text) RETURNS TABLE(outcome text, identity_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_identity uuid := outbox.staff_identity(p_email);
BEGIN
    IF v_identity IS NULL THEN
        RETURN QUERY SELECT 'unknown_identity'::text, NULL::uuid;
        RETURN;
    END IF;
    INSERT INTO identity.staff_members AS s (identity_id, granted_at)
    VALUES (v_identity, v_now)
    ON CONFLICT (identity_id) DO UPDATE
    SET granted_at = excluded.granted_at, revoked_at = NULL
    WHERE s.revoked_at IS NOT NULL;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'already_staff'::text, v_identity;
        RETURN;
    END IF;
    INSERT INTO outbox.staff_audit (action, target_identity_id, occurred_at)
    VALUES ('staff_grant', v_identity, v_now);
    RETURN QUERY SELECT 'granted'::text, v_identity;
END
$$;

--
-- Name: health_work(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.health_work() RETURNS TABLE(lane text, due bigint, oldest_due_seconds double precision, last_published_seconds double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT 'security', pg_catalog.count(*),
           EXTRACT(epoch FROM pg_catalog.clock_timestamp() - pg_catalog.min(m.available_at)),
           NULL::double precision
    FROM outbox.messages AS m
    WHERE m.state = 'pending' AND m.available_at <= pg_catalog.clock_timestamp()
      AND m.claimable_at <= pg_catalog.clock_timestamp()  -- the claim index (0051)
      AND m.claimable_at >= outbox.stored_claim_floor()  -- from the floor (0052)
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
      AND d.claimable_at <= pg_catalog.clock_timestamp()  -- the claim index (0055)
$$;

--
-- Name: lease_picked(uuid[], text, timestamp with time zone, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.lease_picked(p_ids uuid[], p_owner text, p_now timestamp with time zone, p_lease_expires_at timestamp with time zone, p_floor timestamp with time zone) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, params jsonb, locale text, sealed_secret text, attempt_count integer, expires_at timestamp with time zone, lease_token uuid, lease_expires_at timestamp with time zone, priority smallint, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    -- Nothing picked, nothing to lease (0057): an empty `= ANY` implies every partial
    -- index's predicate, so the UPDATE could read any of them in full.
    IF COALESCE(pg_catalog.cardinality(p_ids), 0) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE outbox.messages AS m
        SET state = CASE WHEN m.expires_at <= p_now THEN 'dead_lettered' ELSE 'leased' END,
            lease_owner = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_owner END,
            lease_token = CASE
                WHEN m.expires_at <= p_now THEN NULL ELSE pg_catalog.gen_random_uuid()
            END,
            lease_expires_at = CASE WHEN m.expires_at <= p_now THEN NULL ELSE p_lease_expires_at END,
            dead_lettered_at = CASE WHEN m.expires_at <= p_now THEN p_now END,
            dead_letter_reason = CASE WHEN m.expires_at <= p_now THEN
                CASE m.purpose WHEN 'invitation' THEN 'invitation_expired' ELSE 'challenge_expired' END
            END
        -- By primary key, whatever the statistics say (docs/benchmarks.md): the re-check is
        -- a CASE, which implies no partial index's predicate, so no claim index can be read
        -- in its stead (under a held horizon an analyze that sampled no live row made every
        -- claim index look empty, and the planner walked one whole).
        WHERE m.id = ANY (p_ids)
          AND CASE WHEN m.state IN ('pending', 'leased')
                   THEN m.claimable_at <= p_now AND m.claimable_at >= p_floor
                   ELSE false END
        RETURNING m.*
    ), dropped AS (
        -- Probed by key (= ANY), never joined: the planner cannot walk the whole key index.
        DELETE FROM outbox.envelopes AS e
        WHERE e.message_id = ANY (ARRAY(SELECT t.id FROM taken AS t WHERE t.state = 'dead_lettered'))
    )
    SELECT t.id, t.purpose, t.channel, t.destination, t.subject_id, t.template, t.params,
           t.locale,
           (SELECT e.sealed FROM outbox.envelopes AS e WHERE e.message_id = t.id),
           t.attempt_count, t.expires_at, t.lease_token, t.lease_expires_at,
           t.priority, t.trace_context
    FROM taken AS t
    WHERE t.state = 'leased'
    ORDER BY t.priority DESC, t.available_at, t.created_at, t.id;
END
$$;

--
-- Name: lift_suppression(uuid, uuid, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.lift_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_reason text) RETURNS TABLE(id uuid, destination text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_id uuid;
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_reason IS NULL OR pg_catalog.length(pg_catalog.btrim(p_reason)) NOT BETWEEN 1 AND 500 THEN
        RAISE EXCEPTION 'reason: required, at most 500 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE outbox.suppressions AS s
    SET lifted_at = v_now
    WHERE s.destination_digest = pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(COALESCE(p_destination, ''), 'UTF8')), 'hex'
          )
      AND s.lifted_at IS NULL
    RETURNING s.id INTO v_id;
    IF v_id IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO outbox.suppression_audit (
        suppression_id, action, actor_id, elevation_id, reason, occurred_at
    ) VALUES (v_id, 'lift', p_actor, p_elevation_id, pg_catalog.btrim(p_reason), v_now);
    RETURN QUERY SELECT v_id, outbox.mask_destination(p_destination);
END
$$;

--
-- Name: list_suppressions(uuid, boolean, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.list_suppressions(p_actor uuid, p_include_lifted boolean, p_limit integer) RETURNS TABLE(id uuid, destination text, channel text, cause text, reason text, created_at timestamp with time zone, lifted_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    SELECT s.id, s.destination_masked, s.channel, s.cause,
           (SELECT a.reason FROM outbox.suppression_audit AS a
            WHERE a.suppression_id = s.id AND a.action = 'add' ORDER BY a.id LIMIT 1),
           s.created_at, s.lifted_at
    FROM outbox.suppressions AS s
    WHERE p_include_lifted OR s.lifted_at IS NULL
    ORDER BY s.created_at DESC, s.id DESC
    LIMIT p_limit;
END
$$;

--
-- Name: mask_destination(text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.mask_destination(p_value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    SELECT CASE
        WHEN pg_catalog.length(p_value) <= 254 AND p_value ~ (
            '^[A-Za-z0-9.!#$%&''*+/=?^_`{|}~-]{1,64}'
            '@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
            '(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$'
        )
            THEN pg_catalog.substr(p_value, 1, 1) || '***@'
                || pg_catalog.lower(pg_catalog.split_part(p_value, '@', 2))
        WHEN p_value ~ '^\+[1-9][0-9]{6,14}$'
            THEN pg_catalog.substr(p_value, 1, 3) || '***' || pg_catalog.right(p_value, 2)
        ELSE '***'
    END
$_$;

--
-- Name: message_attempts(uuid, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.message_attempts(p_actor uuid, p_message_id uuid) RETURNS TABLE(attempt integer, counted boolean, outcome text, failure_class text, code text, provider text, provider_message_id text, recorded_at timestamp with time zone, retry_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT a.attempt, a.counted, a.outcome, a.failure_class, a.code, a.provider,
           a.provider_message_id, a.recorded_at, a.retry_at
    FROM outbox.attempts AS a
    WHERE a.message_id = p_message_id
    ORDER BY a.id;
END
$$;

--
-- Name: message_detail(uuid, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.message_detail(p_actor uuid, p_message_id uuid) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, locale text, state text, attempt_count integer, created_at timestamp with time zone, available_at timestamp with time zone, expires_at timestamp with time zone, lease_owner text, lease_expires_at timestamp with time zone, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, dead_letter_reason text, has_secret boolean, reissued_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT m.id, m.purpose, m.channel, outbox.mask_destination(m.destination), m.subject_id,
           m.template, m.locale, m.state, m.attempt_count, m.created_at, m.available_at,
           m.expires_at, m.lease_owner, m.lease_expires_at, m.published_at,
           m.dead_lettered_at, m.dead_letter_reason,
           EXISTS (SELECT 1 FROM outbox.envelopes AS e WHERE e.message_id = m.id),
           (
               SELECT a.new_message_id FROM outbox.staff_audit AS a
               WHERE a.message_id = m.id AND a.action IN ('reissue', 'requeue')
               ORDER BY a.id DESC
               LIMIT 1
           )
    FROM outbox.messages AS m
    WHERE m.id = p_message_id;
END
$$;

--
-- Name: message_history(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.message_history(p_message_id uuid) RETURNS TABLE(attempt integer, counted boolean, outcome text, failure_class text, code text, detail text, provider text, provider_message_id text, recorded_at timestamp with time zone, retry_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(NULL);
    RETURN QUERY
    SELECT a.attempt, a.counted, a.outcome, a.failure_class, a.code, a.detail, a.provider,
           a.provider_message_id, a.recorded_at, a.retry_at
    FROM outbox.attempts AS a
    WHERE a.message_id = p_message_id
    ORDER BY a.id;
END
$$;

--
-- Name: message_receipts(uuid, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.message_receipts(p_actor uuid, p_message_id uuid) RETURNS TABLE(id bigint, provider text, event text, detail text, occurred_at timestamp with time zone, received_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT r.id, r.provider, r.event, r.detail, r.occurred_at, r.received_at
    FROM outbox.receipts AS r
    WHERE r.message_id = p_message_id
    ORDER BY r.id;
END
$$;

--
-- Name: pause_provider(uuid, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.pause_provider(p_actor uuid, p_provider text, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member it is done for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    RETURN outbox.change_provider_pause(true, p_actor, NULL, p_provider, p_reason);
END
$$;

--
-- Name: paused_providers(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.paused_providers() RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p.provider FROM outbox.provider_pauses AS p ORDER BY p.provider
$$;

--
-- Name: provider_pauses(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.provider_pauses(p_actor uuid) RETURNS TABLE(provider text, paused_by uuid, reason text, paused_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_operator(p_actor);
    RETURN QUERY
    SELECT p.provider, p.paused_by, p.reason, p.paused_at
    FROM outbox.provider_pauses AS p
    ORDER BY p.provider;
END
$$;

--
-- Name: purge_messages(interval, interval, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.purge_messages(p_published_retention interval, p_dead_lettered_retention interval, p_limit integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_published integer;
    v_dead_lettered integer := 0;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_published_retention IS NULL OR p_dead_lettered_retention IS NULL THEN
        RAISE EXCEPTION 'both retention periods are required' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(
        pg_catalog.hashtextextended('outbox.purge_messages', 0)
    ) THEN
        RETURN 0;
    END IF;
    WITH doomed AS (
        SELECT m.id
        FROM outbox.messages AS m
        WHERE m.state = 'published' AND m.published_at <= v_now - p_published_retention
        ORDER BY m.published_at
        LIMIT p_limit
    ), gone AS (
        DELETE FROM outbox.messages AS m USING doomed AS d WHERE m.id = d.id RETURNING m.id
    )
    SELECT pg_catalog.count(*) INTO v_published FROM gone;
    IF v_published < p_limit THEN
        WITH doomed AS (
            SELECT m.id
            FROM outbox.messages AS m
            WHERE m.state = 'dead_lettered'
              AND m.dead_lettered_at <= v_now - p_dead_lettered_retention
            ORDER BY m.dead_lettered_at
            LIMIT p_limit - v_published
        ), gone AS (
            DELETE FROM outbox.messages AS m USING doomed AS d WHERE m.id = d.id RETURNING m.id
        )
        SELECT pg_catalog.count(*) INTO v_dead_lettered FROM gone;
    END IF;
    RETURN v_published + v_dead_lettered;
END
$$;

--
-- Name: record_outcomes(uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamp with time zone[], boolean[]); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.record_outcomes(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[]) RETURNS TABLE(message_id uuid, result text)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT r.message_id, r.result
    FROM outbox.record_outcomes_detailed(
        p_message_ids, p_lease_tokens, p_attempts, p_outcomes, p_failure_classes, p_codes,
        p_providers, p_provider_message_ids, p_retry_at, p_attempted,
        pg_catalog.array_fill(''::text, ARRAY[pg_catalog.cardinality(p_message_ids)])
    ) AS r
$$;

--
-- Name: record_outcomes_detailed(uuid[], uuid[], integer[], text[], text[], text[], text[], text[], timestamp with time zone[], boolean[], text[]); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[]) RETURNS TABLE(message_id uuid, result text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_message_ids);
BEGIN
    IF v_count IS NULL
        OR pg_catalog.cardinality(p_lease_tokens) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempts) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_outcomes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_failure_classes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_codes) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_providers) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_provider_message_ids) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_retry_at) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_attempted) IS DISTINCT FROM v_count
        OR pg_catalog.cardinality(p_details) IS DISTINCT FROM v_count
    THEN
        RAISE EXCEPTION 'every array needs exactly one element per record'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (
        SELECT 1
        FROM ROWS FROM (
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_retry_at)
        ) AS r (outcome, failure_class, retry_at)
        WHERE r.outcome IS NULL
           OR r.outcome NOT IN ('published', 'retry', 'release', 'dead_letter')
           OR (r.outcome = 'published') <> (r.failure_class IS NULL)
           OR (r.outcome IN ('retry', 'release')) <> (r.retry_at IS NOT NULL)
    ) THEN
        RAISE EXCEPTION 'a published outcome has no failure class, every other has one; '
            'retry and release name their retry time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    RETURN QUERY
    WITH input AS (
        SELECT r.*,
               r.outcome NOT IN ('release', 'dead_letter')
                   OR (r.outcome = 'dead_letter' AND r.attempted IS DISTINCT FROM false)
                   AS counted
        FROM ROWS FROM (
            pg_catalog.unnest(p_message_ids),
            pg_catalog.unnest(p_lease_tokens),
            pg_catalog.unnest(p_attempts),
            pg_catalog.unnest(p_outcomes),
            pg_catalog.unnest(p_failure_classes),
            pg_catalog.unnest(p_codes),
            pg_catalog.unnest(p_providers),
            pg_catalog.unnest(p_provider_message_ids),
            pg_catalog.unnest(p_retry_at),
            pg_catalog.unnest(p_attempted),
            pg_catalog.unnest(p_details)
        ) WITH ORDINALITY AS r (
            message_id, lease_token, attempt, outcome, failure_class,
            code, provider, provider_message_id, retry_at, attempted, detail, ord
        )
    ), recorded AS (
        UPDATE outbox.messages AS m
        SET state = CASE i.outcome
                WHEN 'published' THEN 'published'
                WHEN 'dead_letter' THEN 'dead_lettered'
                ELSE 'pending'
            END,
            lease_owner = NULL,
            lease_token = NULL,
            lease_expires_at = NULL,
            attempt_count = m.attempt_count + CASE WHEN i.counted THEN 1 ELSE 0 END,
            available_at = COALESCE(i.retry_at, m.available_at),
            published_at = CASE WHEN i.outcome = 'published' THEN v_now END,
            dead_lettered_at = CASE WHEN i.outcome = 'dead_letter' THEN v_now END,
            dead_letter_reason = CASE WHEN i.outcome = 'dead_letter' THEN i.failure_class END
        FROM input AS i
        WHERE m.id = i.message_id
          AND m.state = 'leased'
          AND m.lease_token = i.lease_token
          AND m.lease_expires_at > v_now
          AND (NOT i.counted OR i.attempt = m.attempt_count + 1)
        RETURNING i.ord, m.id, m.attempt_count, i.counted, i.outcome, i.failure_class, i.code,
                  i.provider, i.provider_message_id, i.retry_at, i.lease_token, i.detail
    ), history AS (
        INSERT INTO outbox.attempts (
            message_id, attempt, counted, outcome, failure_class, code, provider,
            provider_message_id, recorded_at, retry_at, lease_token, detail
        )
        SELECT r.id,
               CASE WHEN r.counted THEN r.attempt_count ELSE r.attempt_count + 1 END,
               r.counted, r.outcome, r.failure_class, COALESCE(r.code, ''),
               COALESCE(r.provider, ''), COALESCE(r.provider_message_id, ''), v_now, r.retry_at,
               r.lease_token, pg_catalog.left(COALESCE(r.detail, ''), 200)
        FROM recorded AS r
    ), dropped AS (
        -- Probed by key (= ANY), never joined (0051): see outbox.lease_picked.
        DELETE FROM outbox.envelopes AS e
        WHERE e.message_id = ANY (ARRAY(
            SELECT r.id FROM recorded AS r WHERE r.outcome IN ('published', 'dead_letter')
        ))
    )
    SELECT i.message_id, CASE WHEN r.ord IS NULL THEN 'lease_lost' ELSE 'recorded' END
    FROM input AS i
    LEFT JOIN recorded AS r ON r.ord = i.ord
    ORDER BY i.ord;
END
$$;

--
-- Name: record_receipt(text, text, text, text, text, timestamp with time zone, jsonb); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.record_receipt(p_provider text, p_provider_event_id text, p_provider_message_id text, p_event text, p_detail text, p_occurred_at timestamp with time zone, p_raw jsonb) RETURNS TABLE(receipt_id bigint, message_id uuid, duplicate boolean, delivery_state text, suppressed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_receipt bigint;
    v_message uuid;
    v_destination text;
    v_channel text;
    v_digest text;
    v_state text;
    v_suppression uuid;
BEGIN
    IF p_occurred_at IS NULL OR NOT pg_catalog.isfinite(p_occurred_at) THEN
        RAISE EXCEPTION 'p_occurred_at: expected a finite time'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT a.message_id INTO v_message
    FROM outbox.attempts AS a
    WHERE a.provider_message_id = p_provider_message_id
      AND a.provider = p_provider
      AND a.outcome = 'published'
      AND p_provider_message_id <> ''
    ORDER BY a.id DESC
    LIMIT 1;

    INSERT INTO outbox.receipts AS r (
        provider, provider_event_id, provider_message_id, message_id, event, detail,
        occurred_at, received_at, raw
    ) VALUES (
        p_provider, p_provider_event_id, COALESCE(p_provider_message_id, ''), v_message,
        p_event, COALESCE(p_detail, ''), p_occurred_at, v_now, COALESCE(p_raw, '{}')
    )
    ON CONFLICT ON CONSTRAINT receipts_once DO NOTHING
    RETURNING r.id INTO v_receipt;

    IF v_receipt IS NULL THEN
        SELECT r.id, r.message_id INTO v_receipt, v_message
        FROM outbox.receipts AS r
        WHERE r.provider = p_provider AND r.provider_event_id = p_provider_event_id;
        RETURN QUERY
        SELECT v_receipt, v_message, true,
               COALESCE(
                   (SELECT d.state FROM outbox.delivery_states AS d WHERE d.message_id = v_message),
                   'accepted'
               ),
               false;
        RETURN;
    END IF;

    IF v_message IS NULL THEN
        RETURN QUERY SELECT v_receipt, NULL::uuid, false, NULL::text, false;
        RETURN;
    END IF;

    -- Two receipts of one message at once: the first takes the row, the second waits and
    -- then reads the state the first wrote, so neither overwrites the other.
    INSERT INTO outbox.delivery_states AS d (message_id, state, updated_at)
    SELECT v_message, p_event, v_now
    WHERE p_event IN ('delivered', 'failed', 'bounced', 'complained')
    ON CONFLICT (message_id) DO UPDATE
        SET state = outbox.delivery_state_after(d.state, EXCLUDED.state),
            updated_at = CASE
                WHEN outbox.delivery_state_after(d.state, EXCLUDED.state) = d.state
                    THEN d.updated_at
                ELSE EXCLUDED.updated_at
            END;
    SELECT COALESCE(
        (SELECT d.state FROM outbox.delivery_states AS d WHERE d.message_id = v_message),
        'accepted'
    ) INTO v_state;

    IF p_event IN ('bounced', 'complained') THEN
        SELECT m.destination, m.channel INTO v_destination, v_channel
        FROM outbox.messages AS m WHERE m.id = v_message;
        v_digest := pg_catalog.encode(
            pg_catalog.sha256(pg_catalog.convert_to(v_destination, 'UTF8')), 'hex'
        );
        IF NOT EXISTS (
            SELECT 1 FROM outbox.suppressions AS s
            WHERE s.destination_digest = v_digest AND s.lifted_at >= p_occurred_at
        ) THEN
            INSERT INTO outbox.suppressions AS s (
                id, destination_digest, destination_masked, channel, cause, receipt_id,
                created_at
            ) VALUES (
                pg_catalog.gen_random_uuid(), v_digest, outbox.mask_destination(v_destination),
                v_channel,
                CASE p_event WHEN 'bounced' THEN 'hard_bounce' ELSE 'complaint' END,
                v_receipt, v_now
            )
            ON CONFLICT (destination_digest) WHERE lifted_at IS NULL DO NOTHING
            RETURNING s.id INTO v_suppression;
            IF v_suppression IS NOT NULL THEN
                PERFORM identity.notify_suppressed_identifier(v_destination, p_occurred_at);
                INSERT INTO outbox.suppression_audit (
                    suppression_id, action, actor_id, reason, occurred_at
                ) VALUES (
                    v_suppression, 'add', NULL,
                    p_provider || ' receipt ' || p_event
                        || CASE WHEN COALESCE(p_detail, '') = '' THEN '' ELSE ': ' || p_detail END,
                    v_now
                );
            END IF;
        END IF;
    END IF;

    RETURN QUERY SELECT v_receipt, v_message, false, v_state, v_suppression IS NOT NULL;
END
$$;

--
-- Name: refresh_claim_floor(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.refresh_claim_floor() RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_stored outbox.claim_floor%ROWTYPE;
    v_whole boolean;
    v_from timestamptz := '-infinity';
    v_started timestamptz;
    v_took interval;
    v_oldest timestamptz;
    v_floor timestamptz;
    v_due timestamptz;
BEGIN
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('outbox.claim_floor')) THEN
        SELECT f.floor INTO v_floor FROM outbox.claim_floor AS f WHERE f.only_row;
        RETURN COALESCE(v_floor, '-infinity');
    END IF;
    SELECT f.* INTO v_stored FROM outbox.claim_floor AS f WHERE f.only_row;
    v_whole := NOT FOUND OR v_stored.walk_due_at IS NULL OR v_stored.walk_due_at <= v_now;
    IF NOT v_whole THEN
        v_from := LEAST(v_stored.floor, v_now) - interval '5 seconds';
    END IF;
    v_started := pg_catalog.clock_timestamp();
    SELECT m.claimable_at INTO v_oldest
    FROM outbox.messages AS m
    -- The claim index's predicate (0051): the only index this statement may read.
    WHERE m.state IN ('pending', 'leased') AND m.claimable_at IS NOT NULL
      AND m.claimable_at >= v_from
    ORDER BY m.claimable_at, m.created_at, m.id
    LIMIT 1;
    v_floor := LEAST(COALESCE(v_oldest, v_now), v_now) - interval '1 second';
    v_took := pg_catalog.clock_timestamp() - v_started;
    v_due := CASE
        WHEN NOT v_whole THEN v_stored.walk_due_at
        WHEN v_took < interval '10 milliseconds' THEN NULL  -- cheap: the next one walks too
        ELSE v_now + LEAST(interval '1 minute', v_took * 50)
    END;
    INSERT INTO outbox.claim_floor AS f (only_row, floor, computed_at, walk_due_at)
    VALUES (true, v_floor, v_now, v_due)
    ON CONFLICT (only_row) DO UPDATE
    SET floor = excluded.floor, computed_at = excluded.computed_at,
        walk_due_at = excluded.walk_due_at;
    RETURN v_floor;
END
$$;

--
-- Name: refuse_final_update(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.refuse_final_update() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'message % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: refuse_past_retry(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.refuse_past_retry() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
        USING ERRCODE = 'invalid_parameter_value';
END
$$;

--
-- Name: refuse_receipt_change(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.refuse_receipt_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF TG_OP = 'DELETE' AND (
        pg_catalog.pg_trigger_depth() > 1
        OR pg_catalog.current_setting('outbox.receipt_retention', true) = 'on'
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'receipts are insert-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

--
-- Name: reissue_dead_letter(uuid, uuid, uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.reissue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) RETURNS TABLE(outcome text, new_message_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_replay record;
    v_message outbox.messages%ROWTYPE;
    v_challenge identity.challenges%ROWTYPE;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT r.outcome, r.new_message_id INTO v_replay
    FROM outbox.staff_request_replay(p_actor, p_idempotency_key, 'reissue', p_message_id) AS r;
    IF FOUND THEN
        RETURN QUERY
        SELECT v_replay.outcome::text, v_replay.new_message_id::uuid, c.expires_at
        FROM (SELECT 1) AS one
        LEFT JOIN outbox.messages AS n ON n.id = v_replay.new_message_id
        LEFT JOIN identity.challenges AS c ON c.id = n.subject_id;
        RETURN;
    END IF;

    -- The row locks serialize concurrent reissues: the loser, once it gets the locks, finds
    -- the winner's message and is refused as newer_message_exists.
    SELECT m.* INTO v_message FROM outbox.messages AS m WHERE m.id = p_message_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.state <> 'dead_lettered' THEN
        RETURN QUERY SELECT 'not_dead_lettered'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.purpose NOT IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up'
    ) THEN
        RETURN QUERY SELECT 'not_reissuable'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_message.dead_letter_reason IN (
        'challenge_expired', 'invitation_expired', 'superseded_by_resend',
        'challenge_consumed', 'invitation_revoked'
    ) THEN
        RETURN QUERY SELECT 'not_a_delivery_failure'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    SELECT c.* INTO v_challenge
    FROM identity.challenges AS c
    WHERE c.id = v_message.subject_id
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'challenge_missing'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    -- Nobody reissues their own code (OX-O2): staff rights are not a way around a challenge.
    IF v_challenge.identity_id = p_actor THEN
        RETURN QUERY SELECT 'own_challenge'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state = 'consumed' THEN
        RETURN QUERY SELECT 'challenge_consumed'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state = 'locked' THEN
        RETURN QUERY SELECT 'challenge_locked'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;
    IF v_challenge.state <> 'open' OR v_challenge.expires_at <= v_now THEN
        RETURN QUERY SELECT 'challenge_expired'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    -- A newer message for the same purpose and destination: the person has, or is about to
    -- get, a code. Live rows are few; a published one newer than this dead letter is found
    -- through the publication-age index (the challenge is open, so the range is short).
    IF EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.state IN ('pending', 'leased') AND m.claimable_at IS NOT NULL  -- 0051
          AND m.purpose = v_message.purpose
          AND m.destination = v_message.destination
    ) OR EXISTS (
        SELECT 1 FROM outbox.messages AS m
        WHERE m.state = 'published'
          AND m.published_at > v_message.created_at
          AND m.created_at > v_message.created_at
          AND m.purpose = v_message.purpose
          AND m.destination = v_message.destination
    ) THEN
        RETURN QUERY SELECT 'newer_message_exists'::text, NULL::uuid, NULL::timestamptz;
        RETURN;
    END IF;

    UPDATE identity.challenges AS c SET code_hash = p_code_hash WHERE c.id = v_challenge.id;
    PERFORM outbox.enqueue_message(
        p_id => p_new_message_id,
        p_purpose => v_message.purpose,
        p_channel => v_message.channel,
        p_destination => v_message.destination,
        p_subject_id => v_message.subject_id,
        p_template => v_message.template,
        p_params => v_message.params,
        p_locale => v_message.locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => v_challenge.expires_at
    );
    INSERT INTO outbox.staff_audit (
        action, actor_id, message_id, new_message_id, idempotency_key, occurred_at
    ) VALUES (
        'reissue', p_actor, p_message_id, p_new_message_id, p_idempotency_key, v_now
    );
    RETURN QUERY SELECT 'reissued'::text, p_new_message_id, v_challenge.expires_at;
END
$$;

--
-- Name: requeue_dead_letter(uuid, uuid, uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.requeue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text) RETURNS TABLE(outcome text, new_message_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_replay record;
    v_message outbox.messages%ROWTYPE;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT r.outcome, r.new_message_id INTO v_replay
    FROM outbox.staff_request_replay(p_actor, p_idempotency_key, 'requeue', p_message_id) AS r;
    IF FOUND THEN
        RETURN QUERY SELECT v_replay.outcome::text, v_replay.new_message_id::uuid;
        RETURN;
    END IF;

    -- The row lock serializes concurrent requeues of one dead letter.
    SELECT m.* INTO v_message FROM outbox.messages AS m WHERE m.id = p_message_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found'::text, NULL::uuid;
        RETURN;
    END IF;
    IF v_message.state <> 'dead_lettered' THEN
        RETURN QUERY SELECT 'not_dead_lettered'::text, NULL::uuid;
        RETURN;
    END IF;
    IF v_message.purpose <> 'notification' THEN
        RETURN QUERY SELECT 'not_requeueable'::text, NULL::uuid;
        RETURN;
    END IF;
    IF EXISTS (
        SELECT 1 FROM outbox.staff_audit AS a
        WHERE a.message_id = p_message_id AND a.action = 'requeue'
    ) THEN
        RETURN QUERY SELECT 'already_requeued'::text, NULL::uuid;
        RETURN;
    END IF;

    PERFORM outbox.enqueue_message(
        p_id => p_new_message_id,
        p_purpose => v_message.purpose,
        p_channel => v_message.channel,
        p_destination => v_message.destination,
        p_subject_id => v_message.subject_id,
        p_template => v_message.template,
        p_params => v_message.params,
        p_locale => v_message.locale,
        p_sealed_secret => NULL,
        p_expires_at => NULL
    );
    INSERT INTO outbox.staff_audit (
        action, actor_id, message_id, new_message_id, idempotency_key, occurred_at
    ) VALUES (
        'requeue', p_actor, p_message_id, p_new_message_id, p_idempotency_key,
        pg_catalog.statement_timestamp()
    );
    RETURN QUERY SELECT 'requeued'::text, p_new_message_id;
END
$$;

--
-- Name: require_elevation(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.require_elevation(p_actor uuid, p_elevation text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT outbox.staff_elevation(p_actor, p_elevation, false)
$$;

--
-- Name: require_operator(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.require_operator(p_actor uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_role text := pg_catalog.current_setting('role');
BEGIN
    IF p_actor IS NOT NULL THEN
        PERFORM outbox.require_staff(p_actor);
        RETURN;
    END IF;
    IF NOT pg_catalog.pg_has_role(
        CASE WHEN v_role = 'none' THEN SESSION_USER ELSE v_role::name END,
        'outbox_owner',
        'MEMBER'
    ) THEN
        RAISE EXCEPTION 'staff membership required' USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

--
-- Name: require_read_elevation(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.require_read_elevation(p_actor uuid, p_elevation text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT outbox.staff_elevation(p_actor, p_elevation, true)
$$;

--
-- Name: require_staff(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.require_staff(p_actor uuid) RETURNS void
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_actor IS NULL OR NOT EXISTS (
        SELECT 1 FROM identity.staff_members AS s
        WHERE s.identity_id = p_actor AND s.revoked_at IS NULL
    ) THEN
        RAISE EXCEPTION 'staff membership required' USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;

--
-- Name: resume_provider(uuid, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.resume_provider(p_actor uuid, p_provider text, p_reason text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_actor IS NULL THEN
        RAISE EXCEPTION 'p_actor: the staff member it is done for is required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM outbox.require_operator(p_actor);
    RETURN outbox.change_provider_pause(false, p_actor, NULL, p_provider, p_reason);
END
$$;

--
-- Name: revoke_staff(text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.revoke_staff(p_email text) RETURNS TABLE(outcome text, identity_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_identity uuid := outbox.staff_identity(p_email);
BEGIN
    IF v_identity IS NULL THEN
        RETURN QUERY SELECT 'unknown_identity'::text, NULL::uuid;
        RETURN;
    END IF;
    UPDATE identity.staff_members AS s
    SET revoked_at = v_now
    WHERE s.identity_id = v_identity AND s.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_staff'::text, v_identity;
        RETURN;
    END IF;
    INSERT INTO outbox.staff_audit (action, target_identity_id, occurred_at)
    VALUES ('staff_revoke', v_identity, v_now);
    RETURN QUERY SELECT 'revoked'::text, v_identity;
END
$$;

--
-- Name: staff_activity(uuid, text, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) RETURNS TABLE(minute timestamp with time zone, created bigint, published bigint, dead_lettered bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
    WITH minutes AS (
        SELECT g AS minute
        FROM pg_catalog.generate_series(v_start, v_end, interval '1 minute') AS g
    ),
    created AS (
        SELECT pg_catalog.date_trunc('minute', m.created_at) AS minute, pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.created_at >= v_start GROUP BY 1
    ),
    published AS (
        SELECT pg_catalog.date_trunc('minute', m.published_at) AS minute,
               pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.published_at >= v_start GROUP BY 1
    ),
    dead AS (
        SELECT pg_catalog.date_trunc('minute', m.dead_lettered_at) AS minute,
               pg_catalog.count(*) AS n
        FROM outbox.messages AS m WHERE m.dead_lettered_at >= v_start GROUP BY 1
    )
    SELECT t.minute, COALESCE(c.n, 0), COALESCE(p.n, 0), COALESCE(d.n, 0)
    FROM minutes AS t
    LEFT JOIN created AS c ON c.minute = t.minute
    LEFT JOIN published AS p ON p.minute = t.minute
    LEFT JOIN dead AS d ON d.minute = t.minute
    ORDER BY t.minute;
END
$$;

--
-- Name: staff_add_suppression(uuid, text, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_add_suppression(p_actor uuid, p_elevation text, p_destination text, p_channel text, p_reason text) RETURNS TABLE(id uuid, destination text, created boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY SELECT s.* FROM outbox.add_suppression(
        p_actor, v_elevation, p_destination, p_channel, p_reason
    ) AS s;
END
$$;

--
-- Name: staff_backlog(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_backlog(p_actor uuid, p_elevation text) RETURNS TABLE(pending bigint, leased bigint, published bigint, dead_lettered bigint, oldest_due_age_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT b.* FROM outbox.backlog(p_actor) AS b;
END
$$;

--
-- Name: staff_dead_letters(uuid, text, uuid, uuid, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_dead_letters(p_actor uuid, p_elevation text, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(id uuid, purpose text, channel text, destination text, attempt_count integer, failure_class text, dead_lettered_at timestamp with time zone, expires_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM outbox.dead_letters(p_actor, p_after, p_before, p_limit) AS d;
END
$$;

--
-- Name: staff_elevation(uuid, text, boolean); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_elevation(p_actor uuid, p_elevation text, p_reading boolean) RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_elevation uuid;
BEGIN
    PERFORM outbox.require_staff(p_actor);
    SELECT e.id INTO v_elevation
    FROM identity.elevations AS e
    JOIN identity.sessions AS s ON s.id = e.session_id
    WHERE e.token_digest = p_elevation
      AND e.identity_id = p_actor
      AND s.identity_id = p_actor
      AND s.staff
      AND CASE WHEN p_reading THEN e.created_at > v_now - interval '8 hours'
               ELSE e.expires_at > v_now END
      AND s.revoked_at IS NULL
      AND s.expires_at > v_now;
    IF v_elevation IS NULL THEN
        RAISE EXCEPTION 'fresh step-up required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN v_elevation;
END
$$;

--
-- Name: staff_find_messages(uuid, text, text, text, text, text, timestamp with time zone, timestamp with time zone, uuid, text, uuid, uuid, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_find_messages(p_actor uuid, p_elevation text, p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer) RETURNS TABLE(id uuid, purpose text, channel text, destination text, state text, attempt_count integer, created_at timestamp with time zone, dead_letter_reason text, provider text, repair_action text, repair_message_id uuid, repaired_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cursor_at timestamptz;
    v_cursor_id uuid;
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1001 THEN
        RAISE EXCEPTION 'limit: must be between 1 and 1001'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL AND p_before IS NOT NULL THEN
        RAISE EXCEPTION 'after, before: give at most one cursor'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_after IS NOT NULL OR p_before IS NOT NULL THEN
        SELECT m.created_at, m.id INTO v_cursor_at, v_cursor_id
        FROM outbox.messages AS m
        WHERE m.id = COALESCE(p_after, p_before);
        IF NOT FOUND THEN
            RAISE EXCEPTION 'cursor: no message has this id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    END IF;

    RETURN QUERY
    WITH page AS (
        SELECT m.*
        FROM outbox.messages AS m
        WHERE (p_state IS NULL OR m.state = p_state)
          AND (p_purpose IS NULL OR m.purpose = p_purpose)
          AND (p_reason IS NULL OR m.dead_letter_reason = p_reason)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at < p_until)
          AND (p_message_id IS NULL OR m.id = p_message_id)
          AND (p_destination_digest IS NULL OR pg_catalog.encode(
              pg_catalog.sha256(pg_catalog.convert_to(m.destination, 'UTF8')), 'hex'
          ) = p_destination_digest)
          AND (p_provider IS NULL OR EXISTS (
              SELECT 1 FROM outbox.attempts AS a
              WHERE a.message_id = m.id AND a.provider = p_provider
          ))
          AND (v_cursor_id IS NULL
               OR (p_before IS NULL AND (m.created_at, m.id) < (v_cursor_at, v_cursor_id))
               OR (p_before IS NOT NULL AND (m.created_at, m.id) > (v_cursor_at, v_cursor_id)))
        ORDER BY
            CASE WHEN p_before IS NULL THEN m.created_at END DESC,
            CASE WHEN p_before IS NULL THEN m.id END DESC,
            CASE WHEN p_before IS NOT NULL THEN m.created_at END,
            CASE WHEN p_before IS NOT NULL THEN m.id END
        LIMIT p_limit
    )
    SELECT p.id, p.purpose, p.channel, outbox.mask_destination(p.destination), p.state,
           p.attempt_count, p.created_at, p.dead_letter_reason,
           (
               SELECT a.provider FROM outbox.attempts AS a
               WHERE a.message_id = p.id
               ORDER BY a.id DESC
               LIMIT 1
           ),
           r.action, r.new_message_id, r.occurred_at
    FROM page AS p
    LEFT JOIN LATERAL (
        SELECT s.action, s.new_message_id, s.occurred_at
        FROM outbox.staff_audit AS s
        WHERE s.message_id = p.id AND s.action IN ('reissue', 'requeue')
        ORDER BY s.id DESC
        LIMIT 1
    ) AS r ON true
    ORDER BY p.created_at DESC, p.id DESC;
END
$$;

--
-- Name: staff_identity(text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_identity(p_email text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT l.identity_id FROM identity.login_identifiers AS l
    WHERE l.value = p_email AND l.channel = 'email' AND l.verified_at IS NOT NULL
$$;

--
-- Name: staff_lift_suppression(uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_lift_suppression(p_actor uuid, p_elevation text, p_destination text, p_reason text) RETURNS TABLE(id uuid, destination text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY SELECT s.* FROM outbox.lift_suppression(
        p_actor, v_elevation, p_destination, p_reason
    ) AS s;
END
$$;

--
-- Name: staff_message_attempts(uuid, text, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid) RETURNS TABLE(attempt integer, counted boolean, outcome text, failure_class text, code text, provider text, provider_message_id text, recorded_at timestamp with time zone, retry_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT a.* FROM outbox.message_attempts(p_actor, p_message_id) AS a;
END
$$;

--
-- Name: staff_message_audit(uuid, text, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid) RETURNS TABLE(action text, actor_id uuid, message_id uuid, new_message_id uuid, reason text, occurred_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT a.action, a.actor_id, a.message_id, a.new_message_id, a.console_reason,
           a.occurred_at
    FROM outbox.staff_audit AS a
    WHERE a.message_id = p_message_id OR a.new_message_id = p_message_id
    ORDER BY a.id;
END
$$;

--
-- Name: staff_message_detail(uuid, text, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid) RETURNS TABLE(id uuid, purpose text, channel text, destination text, subject_id uuid, template text, locale text, state text, attempt_count integer, created_at timestamp with time zone, available_at timestamp with time zone, expires_at timestamp with time zone, lease_owner text, lease_expires_at timestamp with time zone, published_at timestamp with time zone, dead_lettered_at timestamp with time zone, dead_letter_reason text, has_secret boolean, reissued_as uuid)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT d.* FROM outbox.message_detail(p_actor, p_message_id) AS d;
END
$$;

--
-- Name: staff_message_receipts(uuid, text, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid) RETURNS TABLE(id bigint, provider text, event text, detail text, occurred_at timestamp with time zone, received_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT r.* FROM outbox.message_receipts(p_actor, p_message_id) AS r;
END
$$;

--
-- Name: staff_pause_provider(uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_pause_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT outbox.change_provider_pause(
        true, p_actor, outbox.require_elevation(p_actor, p_elevation), p_provider, p_reason
    )
$$;

--
-- Name: staff_provider_pauses(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_provider_pauses(p_actor uuid, p_elevation text) RETURNS TABLE(provider text, paused_by uuid, reason text, paused_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT p.provider, p.paused_by, p.reason, p.paused_at
    FROM outbox.provider_pauses AS p
    ORDER BY p.provider;
END
$$;

--
-- Name: staff_reissue_dead_letter(uuid, text, uuid, uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_reissue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) RETURNS TABLE(outcome text, new_message_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id, r.expires_at
    FROM outbox.reissue_dead_letter(
        p_actor, p_message_id, p_new_message_id, p_sealed_secret, p_code_hash,
        p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.elevation_id IS NULL;
END
$$;

--
-- Name: staff_reissue_dead_letter_for(uuid, text, uuid, uuid, text, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_reissue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text, p_reason text) RETURNS TABLE(outcome text, new_message_id uuid, expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id, r.expires_at
    FROM outbox.staff_reissue_dead_letter(
        p_actor, p_elevation, p_message_id, p_new_message_id, p_sealed_secret, p_code_hash,
        p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET console_reason = p_reason
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.console_reason IS NULL;
END
$$;

--
-- Name: staff_request_replay(uuid, text, text, uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_request_replay(p_actor uuid, p_key text, p_action text, p_message_id uuid) RETURNS TABLE(outcome text, new_message_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_audit outbox.staff_audit%ROWTYPE;
BEGIN
    IF p_key IS NULL OR pg_catalog.length(p_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION 'idempotency key: 1 to 255 characters required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtextextended(
        'outbox.staff_request:' || p_actor::text || ':' || p_key, 0
    )) THEN
        RETURN QUERY SELECT 'in_progress'::text, NULL::uuid;
        RETURN;
    END IF;
    SELECT a.* INTO v_audit
    FROM outbox.staff_audit AS a
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_key;
    IF FOUND THEN
        IF v_audit.action = p_action AND v_audit.message_id = p_message_id THEN
            RETURN QUERY SELECT 'replayed'::text, v_audit.new_message_id;
        ELSE
            RETURN QUERY SELECT 'key_reused'::text, NULL::uuid;
        END IF;
    END IF;
END
$$;

--
-- Name: staff_requeue_dead_letter(uuid, text, uuid, uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_requeue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text) RETURNS TABLE(outcome text, new_message_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_elevation uuid := outbox.require_elevation(p_actor, p_elevation);
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id
    FROM outbox.requeue_dead_letter(p_actor, p_message_id, p_new_message_id, p_idempotency_key)
        AS r;
    UPDATE outbox.staff_audit AS a
    SET elevation_id = v_elevation
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.elevation_id IS NULL;
END
$$;

--
-- Name: staff_requeue_dead_letter_for(uuid, text, uuid, uuid, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_requeue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text, p_reason text) RETURNS TABLE(outcome text, new_message_id uuid)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT r.outcome, r.new_message_id
    FROM outbox.staff_requeue_dead_letter(
        p_actor, p_elevation, p_message_id, p_new_message_id, p_idempotency_key
    ) AS r;
    UPDATE outbox.staff_audit AS a
    SET console_reason = p_reason
    WHERE a.actor_id = p_actor AND a.idempotency_key = p_idempotency_key
      AND a.new_message_id = p_new_message_id AND a.console_reason IS NULL;
END
$$;

--
-- Name: staff_resume_provider(uuid, text, text, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_resume_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT outbox.change_provider_pause(
        false, p_actor, outbox.require_elevation(p_actor, p_elevation), p_provider, p_reason
    )
$$;

--
-- Name: staff_suppressions(uuid, text, boolean, integer); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_suppressions(p_actor uuid, p_elevation text, p_include_lifted boolean, p_limit integer) RETURNS TABLE(id uuid, destination text, channel text, cause text, reason text, created_at timestamp with time zone, lifted_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT s.* FROM outbox.list_suppressions(p_actor, p_include_lifted, p_limit) AS s;
END
$$;

--
-- Name: staff_workers(uuid, text); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.staff_workers(p_actor uuid, p_elevation text) RETURNS TABLE(owner text, lane text, started_at timestamp with time zone, seen_at timestamp with time zone, stopped_at timestamp with time zone, running boolean, lag_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM outbox.require_read_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT w.* FROM outbox.workers(p_actor) AS w;
END
$$;

--
-- Name: stored_claim_floor(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.stored_claim_floor() RETURNS timestamp with time zone
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT COALESCE(pg_catalog.min(f.floor), '-infinity') FROM outbox.claim_floor AS f
$$;

--
-- Name: suppress_at_claim(); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.suppress_at_claim() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM outbox.suppressions AS s
        WHERE s.destination_digest = pg_catalog.encode(
                  pg_catalog.sha256(pg_catalog.convert_to(NEW.destination, 'UTF8')), 'hex'
              )
          AND s.lifted_at IS NULL
    ) THEN
        NEW.state := 'dead_lettered';
        NEW.lease_owner := NULL;
        NEW.lease_token := NULL;
        NEW.lease_expires_at := NULL;
        NEW.dead_lettered_at := pg_catalog.statement_timestamp();
        NEW.dead_letter_reason := 'suppressed';
    END IF;
    RETURN NEW;
END
$$;

--
-- Name: worker_heartbeat(text, text, timestamp with time zone, boolean); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.worker_heartbeat(p_owner text, p_lane text, p_started_at timestamp with time zone, p_stopped boolean) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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

--
-- Name: workers(uuid); Type: FUNCTION; Schema: outbox; Owner: -
--

CREATE FUNCTION outbox.workers(p_actor uuid) RETURNS TABLE(owner text, lane text, started_at timestamp with time zone, seen_at timestamp with time zone, stopped_at timestamp with time zone, running boolean, lag_seconds double precision)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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
    WHERE m.state = 'pending' AND m.available_at <= v_now
      AND m.claimable_at <= v_now  -- the claim index (0051)
      AND m.claimable_at >= outbox.stored_claim_floor();  -- from the floor (0052)
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

--
-- Name: applied_migrations(); Type: FUNCTION; Schema: outbox_meta; Owner: -
--

CREATE FUNCTION outbox_meta.applied_migrations() RETURNS TABLE(version integer, checksum text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT m.version, m.checksum FROM outbox_meta.migrations AS m ORDER BY m.version
$$;

--
-- Name: consumer_audit; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.consumer_audit (
    id bigint NOT NULL,
    action text NOT NULL,
    consumer text NOT NULL,
    actor_id uuid,
    elevation_id uuid,
    reason text,
    from_sequence bigint,
    since timestamp with time zone,
    deliveries integer,
    occurred_at timestamp with time zone NOT NULL,
    CONSTRAINT consumer_audit_action_known CHECK ((action = ANY (ARRAY['replay'::text, 'pause'::text, 'resume'::text]))),
    CONSTRAINT consumer_audit_reason_length CHECK (((length(reason) >= 1) AND (length(reason) <= 500)))
);

--
-- Name: consumer_audit_id_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.consumer_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.consumer_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: consumer_deliveries; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.consumer_deliveries (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    delivery_sequence bigint NOT NULL,
    consumer_id uuid NOT NULL,
    domain_event_id uuid NOT NULL,
    replay_round integer NOT NULL,
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    publication_sequence bigint NOT NULL,
    state text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    available_at timestamp with time zone NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    claimable_at timestamp with time zone GENERATED ALWAYS AS (
CASE state
    WHEN 'pending'::text THEN available_at
    WHEN 'leased'::text THEN lease_expires_at
    ELSE NULL::timestamp with time zone
END) STORED,
    created_at timestamp with time zone NOT NULL,
    completed_at timestamp with time zone,
    dead_lettered_at timestamp with time zone,
    dead_letter_reason text,
    dead_letter_code text DEFAULT ''::text NOT NULL,
    CONSTRAINT consumer_deliveries_attempts_counted CHECK ((attempt_count >= 0)),
    CONSTRAINT consumer_deliveries_code_short CHECK ((length(dead_letter_code) <= 100)),
    CONSTRAINT consumer_deliveries_completed_shape CHECK (((state = 'completed'::text) = (completed_at IS NOT NULL))),
    CONSTRAINT consumer_deliveries_dead_letter_shape CHECK ((((state = 'dead_lettered'::text) = (dead_lettered_at IS NOT NULL)) AND ((state = 'dead_lettered'::text) = (dead_letter_reason IS NOT NULL)))),
    CONSTRAINT consumer_deliveries_lease_shape CHECK ((((state = 'leased'::text) AND (lease_owner IS NOT NULL) AND (lease_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)) OR ((state <> 'leased'::text) AND (lease_owner IS NULL) AND (lease_token IS NULL) AND (lease_expires_at IS NULL)))),
    CONSTRAINT consumer_deliveries_reason_known CHECK ((dead_letter_reason = ANY (ARRAY['rejected'::text, 'attempts_exhausted'::text]))),
    CONSTRAINT consumer_deliveries_state_known CHECK ((state = ANY (ARRAY['waiting'::text, 'pending'::text, 'leased'::text, 'completed'::text, 'dead_lettered'::text])))
);

--
-- Name: consumer_deliveries_delivery_sequence_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.consumer_deliveries ALTER COLUMN delivery_sequence ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.consumer_deliveries_delivery_sequence_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: consumer_processing_attempts; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.consumer_processing_attempts (
    id bigint NOT NULL,
    delivery_id uuid NOT NULL,
    attempt integer NOT NULL,
    outcome text NOT NULL,
    error_class text,
    code text DEFAULT ''::text NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    retry_at timestamp with time zone,
    lease_token uuid NOT NULL,
    CONSTRAINT consumer_processing_attempts_class_shape CHECK ((error_class ~ '^[A-Za-z_][A-Za-z0-9_.]{0,99}$'::text)),
    CONSTRAINT consumer_processing_attempts_code_short CHECK ((length(code) <= 100)),
    CONSTRAINT consumer_processing_attempts_numbered CHECK ((attempt >= 1)),
    CONSTRAINT consumer_processing_attempts_outcome_known CHECK ((outcome = ANY (ARRAY['completed'::text, 'retry'::text, 'dead_letter'::text]))),
    CONSTRAINT consumer_processing_attempts_retry_shape CHECK (((outcome = 'retry'::text) = (retry_at IS NOT NULL)))
);

--
-- Name: consumer_processing_attempts_id_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.consumer_processing_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.consumer_processing_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: consumer_subscriptions; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.consumer_subscriptions (
    consumer_id uuid NOT NULL,
    event_type_code text NOT NULL,
    min_version integer NOT NULL,
    max_version integer NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT consumer_subscriptions_min_positive CHECK ((min_version >= 1)),
    CONSTRAINT consumer_subscriptions_range_not_empty CHECK ((min_version <= max_version))
);

--
-- Name: dead_letters; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.dead_letters (
    outbox_record_id uuid NOT NULL,
    domain_event_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    append_sequence bigint NOT NULL,
    reason text NOT NULL,
    dead_lettered_at timestamp with time zone NOT NULL,
    resolution text,
    resolved_at timestamp with time zone,
    resolved_by text,
    republished_as uuid,
    CONSTRAINT dead_letters_resolution_known CHECK ((resolution = ANY (ARRAY['released'::text, 'republished'::text, 'cancelled'::text]))),
    CONSTRAINT dead_letters_resolution_shape CHECK ((((resolution IS NULL) = (resolved_at IS NULL)) AND ((resolution IS NULL) = (resolved_by IS NULL)) AND ((resolution = 'republished'::text) = (republished_as IS NOT NULL)))),
    CONSTRAINT dead_letters_resolver_short CHECK (((length(resolved_by) >= 1) AND (length(resolved_by) <= 200)))
);

--
-- Name: domain_event_publications; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.domain_event_publications (
    publication_sequence bigint NOT NULL,
    domain_event_id uuid NOT NULL,
    outbox_record_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    event_type_code text NOT NULL,
    contract_version integer NOT NULL,
    published_at timestamp with time zone NOT NULL,
    publication_xid xid8 DEFAULT pg_current_xact_id() NOT NULL
);

--
-- Name: domain_event_publications_publication_sequence_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.domain_event_publications ALTER COLUMN publication_sequence ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.domain_event_publications_publication_sequence_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: domain_events; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.domain_events (
    id uuid NOT NULL,
    append_sequence bigint NOT NULL,
    organization_id uuid NOT NULL,
    event_type_code text NOT NULL,
    contract_version integer NOT NULL,
    producer_module_code text NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    idempotency_key text NOT NULL,
    payload jsonb NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    appended_at timestamp with time zone NOT NULL,
    trace_context text,
    CONSTRAINT domain_events_aggregate_id_shape CHECK (((length(aggregate_id) >= 1) AND (length(aggregate_id) <= 200))),
    CONSTRAINT domain_events_aggregate_type_shape CHECK ((aggregate_type ~ '^[a-z][a-z0-9_]{0,63}$'::text)),
    CONSTRAINT domain_events_idempotency_key_shape CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 200))),
    CONSTRAINT domain_events_payload_object CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT domain_events_trace_context_shape CHECK ((trace_context ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text))
);

--
-- Name: domain_events_append_sequence_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.domain_events ALTER COLUMN append_sequence ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.domain_events_append_sequence_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: event_type_versions; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.event_type_versions (
    event_type_code text NOT NULL,
    contract_version integer NOT NULL,
    published_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT event_type_versions_positive CHECK ((contract_version >= 1))
);

--
-- Name: event_types; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.event_types (
    code text NOT NULL,
    owner_module_code text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    retired_at timestamp with time zone,
    CONSTRAINT event_types_code_owned CHECK ((split_part(code, '.'::text, 1) = owner_module_code)),
    CONSTRAINT event_types_code_shape CHECK ((code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'::text))
);

--
-- Name: head_vacancies; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.head_vacancies (
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    noted_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL
);

--
-- Name: modules; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.modules (
    code text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT modules_code_shape CHECK ((code ~ '^[a-z][a-z0-9_]{0,39}$'::text))
);

--
-- Name: operator_audit; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.operator_audit (
    id bigint NOT NULL,
    action text NOT NULL,
    actor_id uuid NOT NULL,
    elevation_id uuid,
    dead_letter_id uuid NOT NULL,
    domain_event_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    new_record_id uuid,
    reason text NOT NULL,
    idempotency_key text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    CONSTRAINT operator_audit_action_known CHECK ((action = ANY (ARRAY['republish'::text, 'release'::text, 'cancel'::text]))),
    CONSTRAINT operator_audit_copy_shape CHECK (((action = 'republish'::text) = (new_record_id IS NOT NULL))),
    CONSTRAINT operator_audit_key_length CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255))),
    CONSTRAINT operator_audit_reason_length CHECK (((length(reason) >= 1) AND (length(reason) <= 500)))
);

--
-- Name: operator_audit_id_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.operator_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.operator_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: outbox_records; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.outbox_records (
    id uuid NOT NULL,
    domain_event_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    append_sequence bigint NOT NULL,
    republish_of uuid,
    state text DEFAULT 'pending'::text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    available_at timestamp with time zone NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    claimable_at timestamp with time zone GENERATED ALWAYS AS (
CASE state
    WHEN 'pending'::text THEN available_at
    WHEN 'leased'::text THEN lease_expires_at
    ELSE NULL::timestamp with time zone
END) STORED,
    created_at timestamp with time zone NOT NULL,
    published_at timestamp with time zone,
    dead_lettered_at timestamp with time zone,
    dead_letter_reason text,
    head boolean DEFAULT false NOT NULL,
    CONSTRAINT outbox_records_attempts_counted CHECK ((attempt_count >= 0)),
    CONSTRAINT outbox_records_dead_letter_shape CHECK ((((state = 'dead_lettered'::text) = (dead_lettered_at IS NOT NULL)) AND ((state = 'dead_lettered'::text) = (dead_letter_reason IS NOT NULL)))),
    CONSTRAINT outbox_records_head_is_live CHECK (((NOT head) OR (state = ANY (ARRAY['pending'::text, 'leased'::text])))),
    CONSTRAINT outbox_records_lease_shape CHECK ((((state = 'leased'::text) AND (lease_owner IS NOT NULL) AND (lease_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)) OR ((state <> 'leased'::text) AND (lease_owner IS NULL) AND (lease_token IS NULL) AND (lease_expires_at IS NULL)))),
    CONSTRAINT outbox_records_published_shape CHECK (((state = 'published'::text) = (published_at IS NOT NULL))),
    CONSTRAINT outbox_records_reason_known CHECK ((dead_letter_reason = ANY (ARRAY['REJECTED'::text, 'THROTTLED'::text, 'UNAVAILABLE'::text, 'INDETERMINATE'::text, 'unexpected_worker_error'::text, 'CANCELLED'::text]))),
    CONSTRAINT outbox_records_state_known CHECK ((state = ANY (ARRAY['pending'::text, 'leased'::text, 'published'::text, 'dead_lettered'::text])))
);

--
-- Name: producer_roles; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.producer_roles (
    role_name name NOT NULL,
    module_code text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL
);

--
-- Name: publication_attempts; Type: TABLE; Schema: events; Owner: -
--

CREATE TABLE events.publication_attempts (
    id bigint NOT NULL,
    outbox_record_id uuid NOT NULL,
    attempt integer NOT NULL,
    counted boolean NOT NULL,
    outcome text NOT NULL,
    failure_class text,
    code text DEFAULT ''::text NOT NULL,
    target text DEFAULT ''::text NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    retry_at timestamp with time zone,
    lease_token uuid NOT NULL,
    CONSTRAINT publication_attempts_class_known CHECK ((failure_class = ANY (ARRAY['REJECTED'::text, 'THROTTLED'::text, 'UNAVAILABLE'::text, 'INDETERMINATE'::text, 'PROVIDER_SUSPENDED'::text, 'unexpected_worker_error'::text]))),
    CONSTRAINT publication_attempts_class_shape CHECK (((outcome = 'published'::text) = (failure_class IS NULL))),
    CONSTRAINT publication_attempts_code_short CHECK ((length(code) <= 100)),
    CONSTRAINT publication_attempts_numbered CHECK ((attempt >= 1)),
    CONSTRAINT publication_attempts_outcome_known CHECK ((outcome = ANY (ARRAY['published'::text, 'retry'::text, 'release'::text, 'dead_letter'::text]))),
    CONSTRAINT publication_attempts_retry_shape CHECK (((outcome = ANY (ARRAY['retry'::text, 'release'::text])) = (retry_at IS NOT NULL))),
    CONSTRAINT publication_attempts_target_short CHECK ((length(target) <= 100))
);

--
-- Name: publication_attempts_id_seq; Type: SEQUENCE; Schema: events; Owner: -
--

ALTER TABLE events.publication_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME events.publication_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: case_duplicate_identifiers; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.case_duplicate_identifiers (
    value text NOT NULL,
    channel text NOT NULL,
    identity_id uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    verified_at timestamp with time zone,
    kept_identity_id uuid NOT NULL,
    moved_at timestamp with time zone NOT NULL
);

--
-- Name: TABLE case_duplicate_identifiers; Type: COMMENT; Schema: identity; Owner: -
--

COMMENT ON TABLE identity.case_duplicate_identifiers IS 'Login identifiers that spelled an already-held mailbox in another letter case, moved aside by 0011; kept_identity_id now holds the address in lower case.';

--
-- Name: code_budgets; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.code_budgets (
    identity_id uuid NOT NULL,
    audience text NOT NULL,
    day date NOT NULL,
    wrong_codes integer DEFAULT 0 NOT NULL,
    exhausted_at timestamp with time zone,
    CONSTRAINT code_budgets_audience_known CHECK ((audience = ANY (ARRAY['anyone'::text, 'session'::text]))),
    CONSTRAINT code_budgets_wrong_codes_counted CHECK ((wrong_codes >= 0))
);

--
-- Name: destination_paces; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.destination_paces (
    key text NOT NULL,
    sends integer NOT NULL,
    last_sent_at timestamp with time zone NOT NULL,
    next_send_at timestamp with time zone NOT NULL,
    CONSTRAINT destination_paces_digest_shape CHECK ((key ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT destination_paces_order CHECK ((next_send_at >= last_sent_at)),
    CONSTRAINT destination_paces_sends_positive CHECK ((sends > 0))
);

--
-- Name: identities; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.identities (
    id uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    preferred_locale text,
    CONSTRAINT identities_preferred_locale_shape CHECK ((preferred_locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$'::text))
);

--
-- Name: login_identifiers; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.login_identifiers (
    value text NOT NULL,
    channel text NOT NULL,
    identity_id uuid NOT NULL,
    created_at timestamp with time zone NOT NULL,
    verified_at timestamp with time zone,
    CONSTRAINT login_identifiers_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text]))),
    CONSTRAINT login_identifiers_email_lower_case CHECK (((channel <> 'email'::text) OR (value = lower(value)))),
    CONSTRAINT login_identifiers_value_named CHECK ((value <> ''::text))
);

--
-- Name: password_credentials; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.password_credentials (
    identity_id uuid NOT NULL,
    password_hash text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT password_credentials_argon2id CHECK ((password_hash ~~ '$argon2id$%'::text))
);

--
-- Name: rate_limit_counters; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.rate_limit_counters (
    key text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    window_end timestamp with time zone NOT NULL,
    hits integer NOT NULL,
    CONSTRAINT rate_limit_counters_digest_shape CHECK ((key ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT rate_limit_counters_hits_positive CHECK ((hits > 0)),
    CONSTRAINT rate_limit_counters_window_positive CHECK ((window_end > window_start))
);

--
-- Name: staff_members; Type: TABLE; Schema: identity; Owner: -
--

CREATE TABLE identity.staff_members (
    identity_id uuid NOT NULL,
    granted_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT staff_members_revoked_after_grant CHECK (((revoked_at IS NULL) OR (revoked_at >= granted_at)))
);

--
-- Name: consumers; Type: TABLE; Schema: inbox; Owner: -
--

CREATE TABLE inbox.consumers (
    name text NOT NULL,
    owner_login name NOT NULL,
    claimed_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT consumers_name_shape CHECK ((name ~ '^[A-Za-z0-9_-]{1,100}$'::text))
);

--
-- Name: dead_letters; Type: TABLE; Schema: inbox; Owner: -
--

CREATE TABLE inbox.dead_letters (
    consumer text NOT NULL,
    event_id uuid NOT NULL,
    subject text NOT NULL,
    headers jsonb NOT NULL,
    payload bytea NOT NULL,
    attempts integer NOT NULL,
    error_class text NOT NULL,
    dead_lettered_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    replay_requested_at timestamp with time zone,
    CONSTRAINT dead_letters_attempts_positive CHECK ((attempts > 0)),
    CONSTRAINT dead_letters_error_class_shape CHECK ((error_class ~ '^[A-Za-z_][A-Za-z0-9_.]{0,199}$'::text)),
    CONSTRAINT dead_letters_subject_short CHECK ((length(subject) <= 1000))
);

--
-- Name: received; Type: TABLE; Schema: inbox; Owner: -
--

CREATE TABLE inbox.received (
    consumer text NOT NULL,
    event_id uuid NOT NULL,
    stream_sequence bigint NOT NULL,
    received_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT received_consumer_shape CHECK ((consumer ~ '^[A-Za-z0-9_-]{1,100}$'::text))
);

--
-- Name: categories; Type: TABLE; Schema: notifications; Owner: -
--

CREATE TABLE notifications.categories (
    code text NOT NULL,
    channels text[] NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    template text,
    variables text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT categories_channels_known CHECK (((cardinality(channels) > 0) AND (channels <@ ARRAY['email'::text, 'sms'::text, 'whatsapp'::text]))),
    CONSTRAINT categories_code_shape CHECK ((code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'::text)),
    CONSTRAINT categories_template_shape CHECK ((template ~ '^[a-z0-9_]{1,64}$'::text)),
    CONSTRAINT categories_variables_named CHECK ((array_to_string(variables, ','::text) ~ '^([a-z][a-z0-9_]{0,63}(,|$))*$'::text))
);

--
-- Name: consent_opt_outs; Type: TABLE; Schema: notifications; Owner: -
--

CREATE TABLE notifications.consent_opt_outs (
    recipient_id uuid NOT NULL,
    category_code text NOT NULL,
    channel text NOT NULL,
    opted_out_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT consent_opt_outs_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'whatsapp'::text])))
);

--
-- Name: intents; Type: TABLE; Schema: notifications; Owner: -
--

CREATE TABLE notifications.intents (
    id uuid NOT NULL,
    intent_key text NOT NULL,
    category_code text NOT NULL,
    recipient_id uuid NOT NULL,
    source text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT intents_key_shape CHECK ((intent_key ~ '^[A-Za-z0-9._:-]{1,200}$'::text)),
    CONSTRAINT intents_source_known CHECK ((source = ANY (ARRAY['event'::text, 'staff'::text])))
);

--
-- Name: snapshots; Type: TABLE; Schema: notifications; Owner: -
--

CREATE TABLE notifications.snapshots (
    id uuid NOT NULL,
    intent_id uuid NOT NULL,
    channel text NOT NULL,
    masked_destination text NOT NULL,
    template text NOT NULL,
    locale text NOT NULL,
    variables jsonb DEFAULT '{}'::jsonb NOT NULL,
    decision text NOT NULL,
    created_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL,
    CONSTRAINT snapshots_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'whatsapp'::text]))),
    CONSTRAINT snapshots_decision_known CHECK ((decision = ANY (ARRAY['send'::text, 'suppressed_by_consent'::text]))),
    CONSTRAINT snapshots_destination_masked CHECK (((masked_destination ~~ '%***%'::text) AND (length(masked_destination) <= 260))),
    CONSTRAINT snapshots_locale_shape CHECK ((locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$'::text)),
    CONSTRAINT snapshots_template_shape CHECK ((template ~ '^[a-z0-9_]{1,64}$'::text)),
    CONSTRAINT snapshots_variables_no_secret CHECK (((jsonb_typeof(variables) = 'object'::text) AND (NOT (variables ?| ARRAY['code'::text, 'link'::text, 'token'::text, 'password'::text, 'secret'::text]))))
);

--
-- Name: attempts; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.attempts (
    id bigint NOT NULL,
    message_id uuid NOT NULL,
    attempt integer NOT NULL,
    counted boolean NOT NULL,
    outcome text NOT NULL,
    failure_class text,
    code text DEFAULT ''::text NOT NULL,
    provider text DEFAULT ''::text NOT NULL,
    provider_message_id text DEFAULT ''::text NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    retry_at timestamp with time zone,
    lease_token uuid,
    detail text DEFAULT ''::text NOT NULL,
    CONSTRAINT attempts_class_known CHECK ((failure_class = ANY (ARRAY['REJECTED'::text, 'THROTTLED'::text, 'UNAVAILABLE'::text, 'INDETERMINATE'::text, 'PROVIDER_SUSPENDED'::text, 'decryption_failed'::text, 'unexpected_worker_error'::text, 'link_unconfigured'::text, 'challenge_expired'::text, 'invitation_expired'::text, 'superseded_by_resend'::text, 'challenge_consumed'::text, 'invitation_revoked'::text]))),
    CONSTRAINT attempts_class_shape CHECK (((outcome = 'published'::text) = (failure_class IS NULL))),
    CONSTRAINT attempts_detail_short CHECK ((length(detail) <= 200)),
    CONSTRAINT attempts_numbered CHECK ((attempt >= 1)),
    CONSTRAINT attempts_outcome_known CHECK ((outcome = ANY (ARRAY['published'::text, 'retry'::text, 'release'::text, 'dead_letter'::text]))),
    CONSTRAINT attempts_retry_shape CHECK (((outcome = ANY (ARRAY['retry'::text, 'release'::text])) = (retry_at IS NOT NULL)))
);

--
-- Name: attempts_id_seq; Type: SEQUENCE; Schema: outbox; Owner: -
--

ALTER TABLE outbox.attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME outbox.attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: claim_floor; Type: TABLE; Schema: outbox; Owner: -
--

CREATE UNLOGGED TABLE outbox.claim_floor (
    only_row boolean DEFAULT true NOT NULL,
    floor timestamp with time zone NOT NULL,
    computed_at timestamp with time zone NOT NULL,
    walk_due_at timestamp with time zone,
    CONSTRAINT claim_floor_one_row CHECK (only_row)
);

--
-- Name: COLUMN claim_floor.walk_due_at; Type: COMMENT; Schema: outbox; Owner: -
--

COMMENT ON COLUMN outbox.claim_floor.walk_due_at IS 'When the next refresh walks the claim index whole (NULL: the next one does).';

--
-- Name: delivery_states; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.delivery_states (
    message_id uuid NOT NULL,
    state text NOT NULL,
    updated_at timestamp with time zone NOT NULL,
    CONSTRAINT delivery_states_known CHECK ((state = ANY (ARRAY['delivered'::text, 'failed'::text, 'bounced'::text, 'complained'::text])))
);

--
-- Name: envelopes; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.envelopes (
    message_id uuid NOT NULL,
    sealed text NOT NULL,
    CONSTRAINT envelopes_sealed_shape CHECK ((sealed ~ '^v[0-9]+(\.[A-Za-z0-9_-]+){2,}$'::text))
);

--
-- Name: messages; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.messages (
    id uuid NOT NULL,
    purpose text NOT NULL,
    channel text NOT NULL,
    destination text NOT NULL,
    subject_id uuid,
    template text NOT NULL,
    params jsonb DEFAULT '{}'::jsonb NOT NULL,
    locale text DEFAULT 'en'::text NOT NULL,
    state text DEFAULT 'pending'::text NOT NULL,
    attempt_count integer DEFAULT 0 NOT NULL,
    available_at timestamp with time zone NOT NULL,
    expires_at timestamp with time zone,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamp with time zone,
    claimable_at timestamp with time zone GENERATED ALWAYS AS (
CASE state
    WHEN 'pending'::text THEN available_at
    WHEN 'leased'::text THEN lease_expires_at
    ELSE NULL::timestamp with time zone
END) STORED,
    created_at timestamp with time zone NOT NULL,
    published_at timestamp with time zone,
    dead_lettered_at timestamp with time zone,
    dead_letter_reason text,
    priority smallint DEFAULT 1 NOT NULL,
    trace_context text,
    CONSTRAINT messages_attempts_counted CHECK ((attempt_count >= 0)),
    CONSTRAINT messages_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'whatsapp'::text]))),
    CONSTRAINT messages_dead_letter_shape CHECK ((((state = 'dead_lettered'::text) = (dead_lettered_at IS NOT NULL)) AND ((state = 'dead_lettered'::text) = (dead_letter_reason IS NOT NULL)))),
    CONSTRAINT messages_destination_named CHECK ((destination <> ''::text)),
    CONSTRAINT messages_lease_shape CHECK ((((state = 'leased'::text) AND (lease_owner IS NOT NULL) AND (lease_token IS NOT NULL) AND (lease_expires_at IS NOT NULL)) OR ((state <> 'leased'::text) AND (lease_owner IS NULL) AND (lease_token IS NULL) AND (lease_expires_at IS NULL)))),
    CONSTRAINT messages_locale_named CHECK ((locale <> ''::text)),
    CONSTRAINT messages_not_born_expired CHECK (((expires_at IS NULL) OR (expires_at > created_at))),
    CONSTRAINT messages_params_object CHECK ((jsonb_typeof(params) = 'object'::text)),
    CONSTRAINT messages_priority_known CHECK (((priority >= 0) AND (priority <= 2))),
    CONSTRAINT messages_published_shape CHECK (((state = 'published'::text) = (published_at IS NOT NULL))),
    CONSTRAINT messages_purpose_known CHECK ((purpose = ANY (ARRAY['sign_up'::text, 'add_sign_in_method'::text, 'password_recovery'::text, 'step_up'::text, 'invitation'::text, 'magic_link'::text, 'notification'::text, 'security_notice'::text]))),
    CONSTRAINT messages_reason_known CHECK ((dead_letter_reason = ANY (ARRAY['REJECTED'::text, 'THROTTLED'::text, 'UNAVAILABLE'::text, 'INDETERMINATE'::text, 'PROVIDER_SUSPENDED'::text, 'decryption_failed'::text, 'unexpected_worker_error'::text, 'link_unconfigured'::text, 'challenge_expired'::text, 'invitation_expired'::text, 'superseded_by_resend'::text, 'challenge_consumed'::text, 'invitation_revoked'::text, 'challenge_locked'::text, 'suppressed'::text]))),
    CONSTRAINT messages_state_known CHECK ((state = ANY (ARRAY['pending'::text, 'leased'::text, 'published'::text, 'dead_lettered'::text]))),
    CONSTRAINT messages_subject_named CHECK (((purpose = 'notification'::text) OR (subject_id IS NOT NULL))),
    CONSTRAINT messages_template_named CHECK ((template <> ''::text)),
    CONSTRAINT messages_trace_context_shape CHECK ((trace_context ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text))
);

--
-- Name: provider_pause_audit; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.provider_pause_audit (
    id bigint NOT NULL,
    action text NOT NULL,
    provider text NOT NULL,
    actor_id uuid NOT NULL,
    elevation_id uuid,
    reason text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    CONSTRAINT provider_pause_audit_action_known CHECK ((action = ANY (ARRAY['pause'::text, 'resume'::text]))),
    CONSTRAINT provider_pause_audit_reason_length CHECK (((length(reason) >= 1) AND (length(reason) <= 500)))
);

--
-- Name: provider_pause_audit_id_seq; Type: SEQUENCE; Schema: outbox; Owner: -
--

ALTER TABLE outbox.provider_pause_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME outbox.provider_pause_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: provider_pauses; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.provider_pauses (
    provider text NOT NULL,
    paused_by uuid NOT NULL,
    reason text NOT NULL,
    paused_at timestamp with time zone NOT NULL,
    CONSTRAINT provider_pauses_name_shape CHECK ((provider ~ '^[a-z0-9][a-z0-9_-]{0,39}$'::text)),
    CONSTRAINT provider_pauses_reason_length CHECK (((length(reason) >= 1) AND (length(reason) <= 500)))
);

--
-- Name: receipts; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.receipts (
    id bigint NOT NULL,
    provider text NOT NULL,
    provider_event_id text NOT NULL,
    provider_message_id text NOT NULL,
    message_id uuid,
    event text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    received_at timestamp with time zone NOT NULL,
    raw jsonb NOT NULL,
    CONSTRAINT receipts_detail_short CHECK ((length(detail) <= 200)),
    CONSTRAINT receipts_event_id_shape CHECK (((length(provider_event_id) >= 1) AND (length(provider_event_id) <= 200))),
    CONSTRAINT receipts_event_known CHECK ((event = ANY (ARRAY['delivered'::text, 'bounced'::text, 'soft_bounced'::text, 'complained'::text, 'failed'::text, 'other'::text]))),
    CONSTRAINT receipts_message_id_shape CHECK ((length(provider_message_id) <= 300)),
    CONSTRAINT receipts_provider_known CHECK ((provider = ANY (ARRAY['ses'::text, 'brevo'::text, 'wasender'::text]))),
    CONSTRAINT receipts_raw_masked CHECK (((raw)::text !~ '[A-Za-z0-9._%+=-]@[A-Za-z0-9]'::text)),
    CONSTRAINT receipts_raw_object CHECK ((jsonb_typeof(raw) = 'object'::text))
);

--
-- Name: receipts_id_seq; Type: SEQUENCE; Schema: outbox; Owner: -
--

ALTER TABLE outbox.receipts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME outbox.receipts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: staff_audit; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.staff_audit (
    id bigint NOT NULL,
    action text NOT NULL,
    actor_id uuid,
    message_id uuid,
    new_message_id uuid,
    target_identity_id uuid,
    idempotency_key text,
    occurred_at timestamp with time zone NOT NULL,
    elevation_id uuid,
    console_reason text,
    CONSTRAINT staff_audit_action_known CHECK ((action = ANY (ARRAY['reissue'::text, 'requeue'::text, 'staff_grant'::text, 'staff_revoke'::text, 'break_glass_step_up'::text]))),
    CONSTRAINT staff_audit_console_reason_length CHECK (((length(console_reason) >= 1) AND (length(console_reason) <= 500))),
    CONSTRAINT staff_audit_copy_shape CHECK (((action = ANY (ARRAY['reissue'::text, 'requeue'::text])) = ((actor_id IS NOT NULL) AND (message_id IS NOT NULL) AND (new_message_id IS NOT NULL) AND (idempotency_key IS NOT NULL)))),
    CONSTRAINT staff_audit_key_length CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255))),
    CONSTRAINT staff_audit_membership_shape CHECK (((action = ANY (ARRAY['staff_grant'::text, 'staff_revoke'::text, 'break_glass_step_up'::text])) = (target_identity_id IS NOT NULL)))
);

--
-- Name: staff_audit_id_seq; Type: SEQUENCE; Schema: outbox; Owner: -
--

ALTER TABLE outbox.staff_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME outbox.staff_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: suppression_audit; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.suppression_audit (
    id bigint NOT NULL,
    suppression_id uuid NOT NULL,
    action text NOT NULL,
    actor_id uuid,
    elevation_id uuid,
    reason text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    CONSTRAINT suppression_audit_action_known CHECK ((action = ANY (ARRAY['add'::text, 'lift'::text]))),
    CONSTRAINT suppression_audit_reason_shape CHECK (((length(reason) >= 1) AND (length(reason) <= 500)))
);

--
-- Name: suppression_audit_id_seq; Type: SEQUENCE; Schema: outbox; Owner: -
--

ALTER TABLE outbox.suppression_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME outbox.suppression_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: suppressions; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.suppressions (
    id uuid NOT NULL,
    destination_digest text NOT NULL,
    destination_masked text NOT NULL,
    channel text NOT NULL,
    cause text NOT NULL,
    receipt_id bigint,
    created_at timestamp with time zone NOT NULL,
    lifted_at timestamp with time zone,
    CONSTRAINT suppressions_cause_known CHECK ((cause = ANY (ARRAY['hard_bounce'::text, 'complaint'::text, 'operator'::text]))),
    CONSTRAINT suppressions_channel_known CHECK ((channel = ANY (ARRAY['email'::text, 'sms'::text, 'whatsapp'::text]))),
    CONSTRAINT suppressions_digest_shape CHECK ((destination_digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT suppressions_masked_shape CHECK (((destination_masked !~ '[A-Za-z0-9._%+=-]@'::text) AND (destination_masked !~ '[0-9]{5}'::text))),
    CONSTRAINT suppressions_receipt_shape CHECK (((cause <> 'operator'::text) OR (receipt_id IS NULL)))
);

--
-- Name: worker_lanes; Type: TABLE; Schema: outbox; Owner: -
--

CREATE TABLE outbox.worker_lanes (
    owner text NOT NULL,
    lane text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    seen_at timestamp with time zone NOT NULL,
    stopped_at timestamp with time zone,
    CONSTRAINT worker_lanes_lane_known CHECK ((lane = ANY (ARRAY['security'::text, 'events'::text, 'consumers'::text]))),
    CONSTRAINT worker_lanes_owner_short CHECK (((length(owner) >= 1) AND (length(owner) <= 200)))
);

--
-- Name: migrations; Type: TABLE; Schema: outbox_meta; Owner: -
--

CREATE TABLE outbox_meta.migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT statement_timestamp() NOT NULL
);

--
-- Name: consumer_audit consumer_audit_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_audit
    ADD CONSTRAINT consumer_audit_pkey PRIMARY KEY (id);

--
-- Name: consumer_deliveries consumer_deliveries_delivery_sequence_key; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_delivery_sequence_key UNIQUE (delivery_sequence);

--
-- Name: consumer_deliveries consumer_deliveries_once_per_round; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_once_per_round UNIQUE (organization_id, consumer_id, domain_event_id, replay_round);

--
-- Name: consumer_deliveries consumer_deliveries_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_pkey PRIMARY KEY (id);

--
-- Name: consumer_processing_attempts consumer_processing_attempts_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_processing_attempts
    ADD CONSTRAINT consumer_processing_attempts_pkey PRIMARY KEY (id);

--
-- Name: consumer_subscriptions consumer_subscriptions_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_subscriptions
    ADD CONSTRAINT consumer_subscriptions_pkey PRIMARY KEY (consumer_id, event_type_code);

--
-- Name: consumers consumers_code_key; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumers
    ADD CONSTRAINT consumers_code_key UNIQUE (code);

--
-- Name: consumers consumers_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumers
    ADD CONSTRAINT consumers_pkey PRIMARY KEY (id);

--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (outbox_record_id);

--
-- Name: domain_event_publications domain_event_publications_domain_event_id_key; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_event_publications
    ADD CONSTRAINT domain_event_publications_domain_event_id_key UNIQUE (domain_event_id);

--
-- Name: domain_event_publications domain_event_publications_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_event_publications
    ADD CONSTRAINT domain_event_publications_pkey PRIMARY KEY (publication_sequence);

--
-- Name: domain_events domain_events_append_sequence_key; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_events
    ADD CONSTRAINT domain_events_append_sequence_key UNIQUE (append_sequence);

--
-- Name: domain_events domain_events_idempotent; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_events
    ADD CONSTRAINT domain_events_idempotent UNIQUE (organization_id, producer_module_code, idempotency_key);

--
-- Name: domain_events domain_events_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_events
    ADD CONSTRAINT domain_events_pkey PRIMARY KEY (id);

--
-- Name: event_type_versions event_type_versions_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.event_type_versions
    ADD CONSTRAINT event_type_versions_pkey PRIMARY KEY (event_type_code, contract_version);

--
-- Name: event_types event_types_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.event_types
    ADD CONSTRAINT event_types_pkey PRIMARY KEY (code);

--
-- Name: head_vacancies head_vacancies_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.head_vacancies
    ADD CONSTRAINT head_vacancies_pkey PRIMARY KEY (organization_id, aggregate_type, aggregate_id);

--
-- Name: modules modules_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.modules
    ADD CONSTRAINT modules_pkey PRIMARY KEY (code);

--
-- Name: operator_audit operator_audit_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.operator_audit
    ADD CONSTRAINT operator_audit_pkey PRIMARY KEY (id);

--
-- Name: outbox_records outbox_records_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.outbox_records
    ADD CONSTRAINT outbox_records_pkey PRIMARY KEY (id);

--
-- Name: producer_roles producer_roles_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.producer_roles
    ADD CONSTRAINT producer_roles_pkey PRIMARY KEY (role_name);

--
-- Name: publication_attempts publication_attempts_pkey; Type: CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.publication_attempts
    ADD CONSTRAINT publication_attempts_pkey PRIMARY KEY (id);

--
-- Name: case_duplicate_identifiers case_duplicate_identifiers_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.case_duplicate_identifiers
    ADD CONSTRAINT case_duplicate_identifiers_pkey PRIMARY KEY (value);

--
-- Name: challenges challenges_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.challenges
    ADD CONSTRAINT challenges_pkey PRIMARY KEY (id);

--
-- Name: code_budgets code_budgets_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.code_budgets
    ADD CONSTRAINT code_budgets_pkey PRIMARY KEY (identity_id, audience, day);

--
-- Name: destination_paces destination_paces_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.destination_paces
    ADD CONSTRAINT destination_paces_pkey PRIMARY KEY (key);

--
-- Name: elevations elevations_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.elevations
    ADD CONSTRAINT elevations_pkey PRIMARY KEY (id);

--
-- Name: elevations elevations_token_digest_key; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.elevations
    ADD CONSTRAINT elevations_token_digest_key UNIQUE (token_digest);

--
-- Name: identities identities_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.identities
    ADD CONSTRAINT identities_pkey PRIMARY KEY (id);

--
-- Name: invitations invitations_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.invitations
    ADD CONSTRAINT invitations_pkey PRIMARY KEY (id);

--
-- Name: invitations invitations_token_digest_key; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.invitations
    ADD CONSTRAINT invitations_token_digest_key UNIQUE (token_digest);

--
-- Name: login_identifiers login_identifiers_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.login_identifiers
    ADD CONSTRAINT login_identifiers_pkey PRIMARY KEY (value);

--
-- Name: magic_links magic_links_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.magic_links
    ADD CONSTRAINT magic_links_pkey PRIMARY KEY (id);

--
-- Name: magic_links magic_links_token_digest_key; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.magic_links
    ADD CONSTRAINT magic_links_token_digest_key UNIQUE (token_digest);

--
-- Name: memberships memberships_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.memberships
    ADD CONSTRAINT memberships_pkey PRIMARY KEY (organization_id, identity_id);

--
-- Name: organizations organizations_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);

--
-- Name: password_credentials password_credentials_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.password_credentials
    ADD CONSTRAINT password_credentials_pkey PRIMARY KEY (identity_id);

--
-- Name: rate_limit_counters rate_limit_counters_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.rate_limit_counters
    ADD CONSTRAINT rate_limit_counters_pkey PRIMARY KEY (key, window_start);

--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);

--
-- Name: sessions sessions_token_digest_key; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.sessions
    ADD CONSTRAINT sessions_token_digest_key UNIQUE (token_digest);

--
-- Name: staff_members staff_members_pkey; Type: CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.staff_members
    ADD CONSTRAINT staff_members_pkey PRIMARY KEY (identity_id);

--
-- Name: consumers consumers_pkey; Type: CONSTRAINT; Schema: inbox; Owner: -
--

ALTER TABLE ONLY inbox.consumers
    ADD CONSTRAINT consumers_pkey PRIMARY KEY (name);

--
-- Name: dead_letters dead_letters_pkey; Type: CONSTRAINT; Schema: inbox; Owner: -
--

ALTER TABLE ONLY inbox.dead_letters
    ADD CONSTRAINT dead_letters_pkey PRIMARY KEY (consumer, event_id);

--
-- Name: received received_pkey; Type: CONSTRAINT; Schema: inbox; Owner: -
--

ALTER TABLE ONLY inbox.received
    ADD CONSTRAINT received_pkey PRIMARY KEY (consumer, event_id);

--
-- Name: categories categories_pkey; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.categories
    ADD CONSTRAINT categories_pkey PRIMARY KEY (code);

--
-- Name: consent_opt_outs consent_opt_outs_pkey; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.consent_opt_outs
    ADD CONSTRAINT consent_opt_outs_pkey PRIMARY KEY (recipient_id, category_code, channel);

--
-- Name: intents intents_once_per_recipient; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.intents
    ADD CONSTRAINT intents_once_per_recipient UNIQUE (intent_key, recipient_id);

--
-- Name: intents intents_pkey; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.intents
    ADD CONSTRAINT intents_pkey PRIMARY KEY (id);

--
-- Name: snapshots snapshots_once_per_channel; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.snapshots
    ADD CONSTRAINT snapshots_once_per_channel UNIQUE (intent_id, channel);

--
-- Name: snapshots snapshots_pkey; Type: CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.snapshots
    ADD CONSTRAINT snapshots_pkey PRIMARY KEY (id);

--
-- Name: attempts attempts_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.attempts
    ADD CONSTRAINT attempts_pkey PRIMARY KEY (id);

--
-- Name: claim_floor claim_floor_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.claim_floor
    ADD CONSTRAINT claim_floor_pkey PRIMARY KEY (only_row);

--
-- Name: delivery_states delivery_states_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.delivery_states
    ADD CONSTRAINT delivery_states_pkey PRIMARY KEY (message_id);

--
-- Name: envelopes envelopes_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.envelopes
    ADD CONSTRAINT envelopes_pkey PRIMARY KEY (message_id);

--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);

--
-- Name: provider_pause_audit provider_pause_audit_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.provider_pause_audit
    ADD CONSTRAINT provider_pause_audit_pkey PRIMARY KEY (id);

--
-- Name: provider_pauses provider_pauses_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.provider_pauses
    ADD CONSTRAINT provider_pauses_pkey PRIMARY KEY (provider);

--
-- Name: receipts receipts_once; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.receipts
    ADD CONSTRAINT receipts_once UNIQUE (provider, provider_event_id);

--
-- Name: receipts receipts_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.receipts
    ADD CONSTRAINT receipts_pkey PRIMARY KEY (id);

--
-- Name: staff_audit staff_audit_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.staff_audit
    ADD CONSTRAINT staff_audit_pkey PRIMARY KEY (id);

--
-- Name: suppression_audit suppression_audit_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.suppression_audit
    ADD CONSTRAINT suppression_audit_pkey PRIMARY KEY (id);

--
-- Name: suppressions suppressions_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.suppressions
    ADD CONSTRAINT suppressions_pkey PRIMARY KEY (id);

--
-- Name: worker_lanes worker_lanes_pkey; Type: CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.worker_lanes
    ADD CONSTRAINT worker_lanes_pkey PRIMARY KEY (owner, lane);

--
-- Name: migrations migrations_pkey; Type: CONSTRAINT; Schema: outbox_meta; Owner: -
--

ALTER TABLE ONLY outbox_meta.migrations
    ADD CONSTRAINT migrations_pkey PRIMARY KEY (version);

--
-- Name: consumer_audit_by_consumer; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_audit_by_consumer ON events.consumer_audit USING btree (consumer, id);

--
-- Name: consumer_deliveries_by_aggregate; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_by_aggregate ON events.consumer_deliveries USING btree (consumer_id, organization_id, aggregate_type, aggregate_id, delivery_sequence);

--
-- Name: consumer_deliveries_by_event; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_by_event ON events.consumer_deliveries USING btree (domain_event_id);

--
-- Name: consumer_deliveries_claim_by_organization; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_claim_by_organization ON events.consumer_deliveries USING btree (consumer_id, organization_id, claimable_at, delivery_sequence) WHERE (claimable_at IS NOT NULL);

--
-- Name: consumer_deliveries_claim_order; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_claim_order ON events.consumer_deliveries USING btree (consumer_id, claimable_at, delivery_sequence) WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text])) AND (claimable_at IS NOT NULL));

--
-- Name: consumer_deliveries_dead_letters; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_dead_letters ON events.consumer_deliveries USING btree (consumer_id, delivery_sequence) WHERE (state = 'dead_lettered'::text);

--
-- Name: consumer_deliveries_live_age; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_deliveries_live_age ON events.consumer_deliveries USING btree (consumer_id, created_at) WHERE ((state = ANY (ARRAY['waiting'::text, 'pending'::text, 'leased'::text])) AND (created_at IS NOT NULL));

--
-- Name: consumer_processing_attempts_by_delivery; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_processing_attempts_by_delivery ON events.consumer_processing_attempts USING btree (delivery_id, id);

--
-- Name: consumer_subscriptions_by_type; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX consumer_subscriptions_by_type ON events.consumer_subscriptions USING btree (event_type_code);

--
-- Name: dead_letters_by_age; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX dead_letters_by_age ON events.dead_letters USING btree (dead_lettered_at, outbox_record_id);

--
-- Name: dead_letters_parking; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX dead_letters_parking ON events.dead_letters USING btree (organization_id, aggregate_type, aggregate_id, append_sequence) WHERE (resolution IS NULL);

--
-- Name: domain_event_publications_by_organization; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX domain_event_publications_by_organization ON events.domain_event_publications USING btree (organization_id, publication_sequence);

--
-- Name: domain_event_publications_by_time; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX domain_event_publications_by_time ON events.domain_event_publications USING btree (published_at);

--
-- Name: domain_events_by_aggregate; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX domain_events_by_aggregate ON events.domain_events USING btree (organization_id, aggregate_type, aggregate_id, append_sequence);

--
-- Name: head_vacancies_by_age; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX head_vacancies_by_age ON events.head_vacancies USING btree (noted_at);

--
-- Name: operator_audit_by_dead_letter; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX operator_audit_by_dead_letter ON events.operator_audit USING btree (dead_letter_id);

--
-- Name: operator_audit_idempotency; Type: INDEX; Schema: events; Owner: -
--

CREATE UNIQUE INDEX operator_audit_idempotency ON events.operator_audit USING btree (actor_id, idempotency_key);

--
-- Name: outbox_records_by_event; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_by_event ON events.outbox_records USING btree (domain_event_id);

--
-- Name: outbox_records_claim_order; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_claim_order ON events.outbox_records USING btree (claimable_at, append_sequence) WHERE (state = ANY (ARRAY['pending'::text, 'leased'::text]));

--
-- Name: outbox_records_dead_letter_age; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_dead_letter_age ON events.outbox_records USING btree (dead_lettered_at, id) WHERE (state = 'dead_lettered'::text);

--
-- Name: outbox_records_heads_by_organization; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_heads_by_organization ON events.outbox_records USING btree (organization_id, claimable_at, append_sequence) WHERE head;

--
-- Name: outbox_records_heads_due; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_heads_due ON events.outbox_records USING btree (claimable_at, append_sequence) WHERE (head AND (state = ANY (ARRAY['pending'::text, 'leased'::text])));

--
-- Name: outbox_records_live_by_aggregate; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_live_by_aggregate ON events.outbox_records USING btree (organization_id, aggregate_type, aggregate_id, append_sequence) WHERE (state = ANY (ARRAY['pending'::text, 'leased'::text]));

--
-- Name: outbox_records_live_by_organization; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_live_by_organization ON events.outbox_records USING btree (organization_id, claimable_at, append_sequence) WHERE (state = ANY (ARRAY['pending'::text, 'leased'::text]));

--
-- Name: outbox_records_one_head_per_aggregate; Type: INDEX; Schema: events; Owner: -
--

CREATE UNIQUE INDEX outbox_records_one_head_per_aggregate ON events.outbox_records USING btree (organization_id, aggregate_type, aggregate_id) WHERE head;

--
-- Name: outbox_records_one_live_per_event; Type: INDEX; Schema: events; Owner: -
--

CREATE UNIQUE INDEX outbox_records_one_live_per_event ON events.outbox_records USING btree (domain_event_id) WHERE (state <> 'dead_lettered'::text);

--
-- Name: outbox_records_published_age; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX outbox_records_published_age ON events.outbox_records USING btree (published_at) WHERE (state = 'published'::text);

--
-- Name: publication_attempts_by_record; Type: INDEX; Schema: events; Owner: -
--

CREATE INDEX publication_attempts_by_record ON events.publication_attempts USING btree (outbox_record_id, id);

--
-- Name: challenges_one_open; Type: INDEX; Schema: identity; Owner: -
--

CREATE UNIQUE INDEX challenges_one_open ON identity.challenges USING btree (purpose, identity_id, identifier) WHERE (state = 'open'::text);

--
-- Name: challenges_open_by_identifier; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX challenges_open_by_identifier ON identity.challenges USING btree (purpose, identifier, created_at) WHERE (state = 'open'::text);

--
-- Name: code_budgets_by_day; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX code_budgets_by_day ON identity.code_budgets USING btree (day);

--
-- Name: destination_paces_by_last_send; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX destination_paces_by_last_send ON identity.destination_paces USING btree (last_sent_at);

--
-- Name: elevations_one_per_challenge; Type: INDEX; Schema: identity; Owner: -
--

CREATE UNIQUE INDEX elevations_one_per_challenge ON identity.elevations USING btree (challenge_id);

--
-- Name: invitations_one_pending; Type: INDEX; Schema: identity; Owner: -
--

CREATE UNIQUE INDEX invitations_one_pending ON identity.invitations USING btree (organization_id, email) WHERE (state = 'pending'::text);

--
-- Name: login_identifiers_by_identity; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX login_identifiers_by_identity ON identity.login_identifiers USING btree (identity_id);

--
-- Name: magic_links_open_by_email; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX magic_links_open_by_email ON identity.magic_links USING btree (email, created_at) WHERE (redeemed_at IS NULL);

--
-- Name: magic_links_open_by_identity; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX magic_links_open_by_identity ON identity.magic_links USING btree (identity_id, email, created_at) WHERE (redeemed_at IS NULL);

--
-- Name: rate_limit_counters_by_end; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX rate_limit_counters_by_end ON identity.rate_limit_counters USING btree (window_end);

--
-- Name: sessions_active_by_identity; Type: INDEX; Schema: identity; Owner: -
--

CREATE INDEX sessions_active_by_identity ON identity.sessions USING btree (identity_id) WHERE (revoked_at IS NULL);

--
-- Name: dead_letters_replays; Type: INDEX; Schema: inbox; Owner: -
--

CREATE INDEX dead_letters_replays ON inbox.dead_letters USING btree (consumer, replay_requested_at) WHERE (replay_requested_at IS NOT NULL);

--
-- Name: intents_by_recipient; Type: INDEX; Schema: notifications; Owner: -
--

CREATE INDEX intents_by_recipient ON notifications.intents USING btree (recipient_id, created_at);

--
-- Name: attempts_by_message; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX attempts_by_message ON outbox.attempts USING btree (message_id, id);

--
-- Name: attempts_by_provider_message_id; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX attempts_by_provider_message_id ON outbox.attempts USING btree (provider_message_id, provider) WHERE ((outcome = 'published'::text) AND (provider_message_id <> ''::text));

--
-- Name: messages_claim_by_priority; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_claim_by_priority ON outbox.messages USING btree (priority, claimable_at, created_at, id) WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text])) AND (priority IS NOT NULL));

--
-- Name: messages_claim_order; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_claim_order ON outbox.messages USING btree (claimable_at, created_at, id) WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text])) AND (claimable_at IS NOT NULL));

--
-- Name: messages_created; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_created ON outbox.messages USING btree (created_at, id);

--
-- Name: messages_dead_letter_age; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_dead_letter_age ON outbox.messages USING btree (dead_lettered_at, id) WHERE (state = 'dead_lettered'::text);

--
-- Name: messages_live_expiry; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_live_expiry ON outbox.messages USING btree (expires_at) WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text])) AND (expires_at IS NOT NULL));

--
-- Name: messages_live_subject; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_live_subject ON outbox.messages USING btree (subject_id, purpose) WHERE ((state = ANY (ARRAY['pending'::text, 'leased'::text])) AND (subject_id IS NOT NULL));

--
-- Name: messages_published_age; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX messages_published_age ON outbox.messages USING btree (published_at) WHERE (state = 'published'::text);

--
-- Name: receipts_by_message; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX receipts_by_message ON outbox.receipts USING btree (message_id, id) WHERE (message_id IS NOT NULL);

--
-- Name: receipts_unmatched_age; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX receipts_unmatched_age ON outbox.receipts USING btree (received_at) WHERE (message_id IS NULL);

--
-- Name: staff_audit_by_message; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX staff_audit_by_message ON outbox.staff_audit USING btree (message_id, action) WHERE (message_id IS NOT NULL);

--
-- Name: staff_audit_idempotency; Type: INDEX; Schema: outbox; Owner: -
--

CREATE UNIQUE INDEX staff_audit_idempotency ON outbox.staff_audit USING btree (actor_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);

--
-- Name: suppression_audit_by_suppression; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX suppression_audit_by_suppression ON outbox.suppression_audit USING btree (suppression_id, id);

--
-- Name: suppressions_by_age; Type: INDEX; Schema: outbox; Owner: -
--

CREATE INDEX suppressions_by_age ON outbox.suppressions USING btree (created_at DESC, id);

--
-- Name: suppressions_one_active; Type: INDEX; Schema: outbox; Owner: -
--

CREATE UNIQUE INDEX suppressions_one_active ON outbox.suppressions USING btree (destination_digest) WHERE (lifted_at IS NULL);

--
-- Name: consumer_deliveries consumer_deliveries_final_is_immutable; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER consumer_deliveries_final_is_immutable BEFORE UPDATE ON events.consumer_deliveries FOR EACH ROW WHEN ((old.state = ANY (ARRAY['completed'::text, 'dead_lettered'::text]))) EXECUTE FUNCTION events.refuse_final_delivery_update();

--
-- Name: consumer_processing_attempts consumer_processing_attempts_in_sequence; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER consumer_processing_attempts_in_sequence AFTER INSERT ON events.consumer_processing_attempts REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION events.check_processing_attempt();

--
-- Name: domain_event_publications domain_event_publications_fan_out; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER domain_event_publications_fan_out AFTER INSERT ON events.domain_event_publications REFERENCING NEW TABLE AS published FOR EACH STATEMENT EXECUTE FUNCTION events.fan_out_publication();

--
-- Name: domain_events domain_events_outbox_complete; Type: TRIGGER; Schema: events; Owner: -
--

CREATE CONSTRAINT TRIGGER domain_events_outbox_complete AFTER INSERT ON events.domain_events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events.require_one_outbox_record();

--
-- Name: outbox_records outbox_records_final_is_immutable; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER outbox_records_final_is_immutable BEFORE UPDATE ON events.outbox_records FOR EACH ROW WHEN ((old.state = ANY (ARRAY['published'::text, 'dead_lettered'::text]))) EXECUTE FUNCTION events.refuse_final_update();

--
-- Name: outbox_records outbox_records_never_orphan_their_event; Type: TRIGGER; Schema: events; Owner: -
--

CREATE CONSTRAINT TRIGGER outbox_records_never_orphan_their_event AFTER DELETE ON events.outbox_records DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events.refuse_orphaned_event();

--
-- Name: outbox_records outbox_records_retry_in_future; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER outbox_records_retry_in_future BEFORE UPDATE ON events.outbox_records FOR EACH ROW WHEN (((old.state = 'leased'::text) AND (new.state = 'pending'::text) AND (new.available_at <= statement_timestamp()))) EXECUTE FUNCTION events.refuse_past_retry();

--
-- Name: publication_attempts publication_attempts_in_sequence; Type: TRIGGER; Schema: events; Owner: -
--

CREATE TRIGGER publication_attempts_in_sequence AFTER INSERT ON events.publication_attempts REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION events.validate_publication_attempt_insert();

--
-- Name: challenges challenges_code_changes_are_sent; Type: TRIGGER; Schema: identity; Owner: -
--

CREATE CONSTRAINT TRIGGER challenges_code_changes_are_sent AFTER UPDATE OF code_hash ON identity.challenges DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ((old.code_hash IS DISTINCT FROM new.code_hash)) EXECUTE FUNCTION identity.refuse_unsent_code_change();

--
-- Name: intents intents_are_frozen; Type: TRIGGER; Schema: notifications; Owner: -
--

CREATE TRIGGER intents_are_frozen BEFORE UPDATE ON notifications.intents FOR EACH ROW EXECUTE FUNCTION notifications.refuse_change();

--
-- Name: snapshots snapshots_are_frozen; Type: TRIGGER; Schema: notifications; Owner: -
--

CREATE TRIGGER snapshots_are_frozen BEFORE UPDATE ON notifications.snapshots FOR EACH ROW EXECUTE FUNCTION notifications.refuse_change();

--
-- Name: attempts attempts_in_sequence; Type: TRIGGER; Schema: outbox; Owner: -
--

CREATE TRIGGER attempts_in_sequence BEFORE INSERT ON outbox.attempts FOR EACH ROW EXECUTE FUNCTION outbox.check_attempt_sequence();

--
-- Name: messages messages_final_is_immutable; Type: TRIGGER; Schema: outbox; Owner: -
--

CREATE TRIGGER messages_final_is_immutable BEFORE UPDATE ON outbox.messages FOR EACH ROW WHEN ((old.state = ANY (ARRAY['published'::text, 'dead_lettered'::text]))) EXECUTE FUNCTION outbox.refuse_final_update();

--
-- Name: messages messages_retry_in_future; Type: TRIGGER; Schema: outbox; Owner: -
--

CREATE TRIGGER messages_retry_in_future BEFORE UPDATE ON outbox.messages FOR EACH ROW WHEN (((old.state = 'leased'::text) AND (new.state = 'pending'::text) AND (new.available_at <= statement_timestamp()))) EXECUTE FUNCTION outbox.refuse_past_retry();

--
-- Name: messages messages_suppressed_at_claim; Type: TRIGGER; Schema: outbox; Owner: -
--

CREATE TRIGGER messages_suppressed_at_claim BEFORE UPDATE ON outbox.messages FOR EACH ROW WHEN (((new.state = 'leased'::text) AND (old.lease_token IS DISTINCT FROM new.lease_token))) EXECUTE FUNCTION outbox.suppress_at_claim();

--
-- Name: receipts receipts_insert_only; Type: TRIGGER; Schema: outbox; Owner: -
--

CREATE TRIGGER receipts_insert_only BEFORE DELETE OR UPDATE ON outbox.receipts FOR EACH ROW EXECUTE FUNCTION outbox.refuse_receipt_change();

--
-- Name: consumer_deliveries consumer_deliveries_consumer_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_consumer_id_fkey FOREIGN KEY (consumer_id) REFERENCES events.consumers(id);

--
-- Name: consumer_deliveries consumer_deliveries_domain_event_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_deliveries
    ADD CONSTRAINT consumer_deliveries_domain_event_id_fkey FOREIGN KEY (domain_event_id) REFERENCES events.domain_events(id) ON DELETE CASCADE;

--
-- Name: consumer_processing_attempts consumer_processing_attempts_delivery_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_processing_attempts
    ADD CONSTRAINT consumer_processing_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES events.consumer_deliveries(id) ON DELETE CASCADE;

--
-- Name: consumer_subscriptions consumer_subscriptions_consumer_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_subscriptions
    ADD CONSTRAINT consumer_subscriptions_consumer_id_fkey FOREIGN KEY (consumer_id) REFERENCES events.consumers(id);

--
-- Name: consumer_subscriptions consumer_subscriptions_event_type_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumer_subscriptions
    ADD CONSTRAINT consumer_subscriptions_event_type_code_fkey FOREIGN KEY (event_type_code) REFERENCES events.event_types(code);

--
-- Name: consumers consumers_owner_module_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.consumers
    ADD CONSTRAINT consumers_owner_module_code_fkey FOREIGN KEY (owner_module_code) REFERENCES events.modules(code);

--
-- Name: dead_letters dead_letters_domain_event_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.dead_letters
    ADD CONSTRAINT dead_letters_domain_event_id_fkey FOREIGN KEY (domain_event_id) REFERENCES events.domain_events(id) ON DELETE CASCADE;

--
-- Name: dead_letters dead_letters_outbox_record_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.dead_letters
    ADD CONSTRAINT dead_letters_outbox_record_id_fkey FOREIGN KEY (outbox_record_id) REFERENCES events.outbox_records(id) ON DELETE CASCADE;

--
-- Name: dead_letters dead_letters_republished_as_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.dead_letters
    ADD CONSTRAINT dead_letters_republished_as_fkey FOREIGN KEY (republished_as) REFERENCES events.outbox_records(id) ON DELETE SET NULL;

--
-- Name: domain_event_publications domain_event_publications_domain_event_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_event_publications
    ADD CONSTRAINT domain_event_publications_domain_event_id_fkey FOREIGN KEY (domain_event_id) REFERENCES events.domain_events(id) ON DELETE CASCADE;

--
-- Name: domain_event_publications domain_event_publications_outbox_record_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_event_publications
    ADD CONSTRAINT domain_event_publications_outbox_record_id_fkey FOREIGN KEY (outbox_record_id) REFERENCES events.outbox_records(id) ON DELETE CASCADE;

--
-- Name: domain_events domain_events_event_type_code_contract_version_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_events
    ADD CONSTRAINT domain_events_event_type_code_contract_version_fkey FOREIGN KEY (event_type_code, contract_version) REFERENCES events.event_type_versions(event_type_code, contract_version);

--
-- Name: domain_events domain_events_producer_module_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.domain_events
    ADD CONSTRAINT domain_events_producer_module_code_fkey FOREIGN KEY (producer_module_code) REFERENCES events.modules(code);

--
-- Name: event_type_versions event_type_versions_event_type_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.event_type_versions
    ADD CONSTRAINT event_type_versions_event_type_code_fkey FOREIGN KEY (event_type_code) REFERENCES events.event_types(code);

--
-- Name: event_types event_types_owner_module_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.event_types
    ADD CONSTRAINT event_types_owner_module_code_fkey FOREIGN KEY (owner_module_code) REFERENCES events.modules(code);

--
-- Name: outbox_records outbox_records_domain_event_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.outbox_records
    ADD CONSTRAINT outbox_records_domain_event_id_fkey FOREIGN KEY (domain_event_id) REFERENCES events.domain_events(id) ON DELETE CASCADE;

--
-- Name: outbox_records outbox_records_republish_of_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.outbox_records
    ADD CONSTRAINT outbox_records_republish_of_fkey FOREIGN KEY (republish_of) REFERENCES events.outbox_records(id) ON DELETE SET NULL;

--
-- Name: producer_roles producer_roles_module_code_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.producer_roles
    ADD CONSTRAINT producer_roles_module_code_fkey FOREIGN KEY (module_code) REFERENCES events.modules(code);

--
-- Name: publication_attempts publication_attempts_outbox_record_id_fkey; Type: FK CONSTRAINT; Schema: events; Owner: -
--

ALTER TABLE ONLY events.publication_attempts
    ADD CONSTRAINT publication_attempts_outbox_record_id_fkey FOREIGN KEY (outbox_record_id) REFERENCES events.outbox_records(id) ON DELETE CASCADE;

--
-- Name: case_duplicate_identifiers case_duplicate_identifiers_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.case_duplicate_identifiers
    ADD CONSTRAINT case_duplicate_identifiers_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: case_duplicate_identifiers case_duplicate_identifiers_kept_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.case_duplicate_identifiers
    ADD CONSTRAINT case_duplicate_identifiers_kept_identity_id_fkey FOREIGN KEY (kept_identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: challenges challenges_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.challenges
    ADD CONSTRAINT challenges_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: code_budgets code_budgets_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.code_budgets
    ADD CONSTRAINT code_budgets_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: elevations elevations_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.elevations
    ADD CONSTRAINT elevations_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: elevations elevations_session_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.elevations
    ADD CONSTRAINT elevations_session_id_fkey FOREIGN KEY (session_id) REFERENCES identity.sessions(id) ON DELETE CASCADE;

--
-- Name: invitations invitations_accepted_by_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.invitations
    ADD CONSTRAINT invitations_accepted_by_fkey FOREIGN KEY (accepted_by) REFERENCES identity.identities(id);

--
-- Name: invitations invitations_invited_by_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.invitations
    ADD CONSTRAINT invitations_invited_by_fkey FOREIGN KEY (invited_by) REFERENCES identity.identities(id);

--
-- Name: invitations invitations_organization_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.invitations
    ADD CONSTRAINT invitations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES identity.organizations(id) ON DELETE CASCADE;

--
-- Name: login_identifiers login_identifiers_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.login_identifiers
    ADD CONSTRAINT login_identifiers_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: magic_links magic_links_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.magic_links
    ADD CONSTRAINT magic_links_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: memberships memberships_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.memberships
    ADD CONSTRAINT memberships_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: memberships memberships_organization_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.memberships
    ADD CONSTRAINT memberships_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES identity.organizations(id) ON DELETE CASCADE;

--
-- Name: organizations organizations_created_by_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.organizations
    ADD CONSTRAINT organizations_created_by_fkey FOREIGN KEY (created_by) REFERENCES identity.identities(id);

--
-- Name: password_credentials password_credentials_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.password_credentials
    ADD CONSTRAINT password_credentials_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: sessions sessions_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.sessions
    ADD CONSTRAINT sessions_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: staff_members staff_members_identity_id_fkey; Type: FK CONSTRAINT; Schema: identity; Owner: -
--

ALTER TABLE ONLY identity.staff_members
    ADD CONSTRAINT staff_members_identity_id_fkey FOREIGN KEY (identity_id) REFERENCES identity.identities(id) ON DELETE CASCADE;

--
-- Name: consent_opt_outs consent_opt_outs_category_code_fkey; Type: FK CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.consent_opt_outs
    ADD CONSTRAINT consent_opt_outs_category_code_fkey FOREIGN KEY (category_code) REFERENCES notifications.categories(code);

--
-- Name: intents intents_category_code_fkey; Type: FK CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.intents
    ADD CONSTRAINT intents_category_code_fkey FOREIGN KEY (category_code) REFERENCES notifications.categories(code);

--
-- Name: snapshots snapshots_intent_id_fkey; Type: FK CONSTRAINT; Schema: notifications; Owner: -
--

ALTER TABLE ONLY notifications.snapshots
    ADD CONSTRAINT snapshots_intent_id_fkey FOREIGN KEY (intent_id) REFERENCES notifications.intents(id);

--
-- Name: attempts attempts_message_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.attempts
    ADD CONSTRAINT attempts_message_id_fkey FOREIGN KEY (message_id) REFERENCES outbox.messages(id) ON DELETE CASCADE;

--
-- Name: delivery_states delivery_states_message_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.delivery_states
    ADD CONSTRAINT delivery_states_message_id_fkey FOREIGN KEY (message_id) REFERENCES outbox.messages(id) ON DELETE CASCADE;

--
-- Name: envelopes envelopes_message_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.envelopes
    ADD CONSTRAINT envelopes_message_id_fkey FOREIGN KEY (message_id) REFERENCES outbox.messages(id) ON DELETE CASCADE;

--
-- Name: receipts receipts_message_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.receipts
    ADD CONSTRAINT receipts_message_id_fkey FOREIGN KEY (message_id) REFERENCES outbox.messages(id) ON DELETE CASCADE;

--
-- Name: suppression_audit suppression_audit_suppression_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.suppression_audit
    ADD CONSTRAINT suppression_audit_suppression_id_fkey FOREIGN KEY (suppression_id) REFERENCES outbox.suppressions(id);

--
-- Name: suppressions suppressions_receipt_id_fkey; Type: FK CONSTRAINT; Schema: outbox; Owner: -
--

ALTER TABLE ONLY outbox.suppressions
    ADD CONSTRAINT suppressions_receipt_id_fkey FOREIGN KEY (receipt_id) REFERENCES outbox.receipts(id) ON DELETE SET NULL;

--
-- Name: SCHEMA events; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA events TO outbox_worker;
GRANT USAGE ON SCHEMA events TO identity_service;
GRANT USAGE ON SCHEMA events TO events_consumer;

--
-- Name: SCHEMA identity; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA identity TO identity_service;

--
-- Name: SCHEMA inbox; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA inbox TO inbox_consumer;

--
-- Name: SCHEMA notifications; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA notifications TO notifications_producer;

--
-- Name: SCHEMA outbox; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA outbox TO outbox_worker;
GRANT USAGE ON SCHEMA outbox TO outbox_producer;

--
-- Name: SCHEMA outbox_meta; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA outbox_meta TO outbox_owner;
GRANT USAGE ON SCHEMA outbox_meta TO identity_service;
GRANT USAGE ON SCHEMA outbox_meta TO outbox_worker;

--
-- Name: FUNCTION aggregate_lock_key(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.aggregate_lock_key(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) FROM PUBLIC;

--
-- Name: FUNCTION append_domain_event(p_organization_id uuid, p_event_type text, p_contract_version integer, p_aggregate_type text, p_aggregate_id text, p_idempotency_key text, p_payload jsonb, p_occurred_at timestamp with time zone, p_trace_context text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.append_domain_event(p_organization_id uuid, p_event_type text, p_contract_version integer, p_aggregate_type text, p_aggregate_id text, p_idempotency_key text, p_payload jsonb, p_occurred_at timestamp with time zone, p_trace_context text) FROM PUBLIC;
GRANT ALL ON FUNCTION events.append_domain_event(p_organization_id uuid, p_event_type text, p_contract_version integer, p_aggregate_type text, p_aggregate_id text, p_idempotency_key text, p_payload jsonb, p_occurred_at timestamp with time zone, p_trace_context text) TO identity_service;

--
-- Name: FUNCTION backlog(p_actor uuid, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.backlog(p_actor uuid, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION backlog_metrics(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.backlog_metrics() FROM PUBLIC;
GRANT ALL ON FUNCTION events.backlog_metrics() TO identity_service;

--
-- Name: FUNCTION bulk_repair(p_actor uuid, p_elevation uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.bulk_repair(p_actor uuid, p_elevation uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION bulk_targets(p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.bulk_targets(p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION calling_module(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.calling_module() FROM PUBLIC;

--
-- Name: FUNCTION cancel_record(p_actor uuid, p_elevation uuid, p_record_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.cancel_record(p_actor uuid, p_elevation uuid, p_record_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION check_processing_attempt(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.check_processing_attempt() FROM PUBLIC;

--
-- Name: FUNCTION claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION events.claim_consumer_deliveries(p_consumer text, p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision) TO events_consumer;

--
-- Name: FUNCTION claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION events.claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision, p_window_seconds double precision) TO outbox_worker;

--
-- Name: FUNCTION consumer_aggregate_lock_key(p_consumer_id uuid, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.consumer_aggregate_lock_key(p_consumer_id uuid, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) FROM PUBLIC;

--
-- Name: FUNCTION consumer_dead_letters(p_consumer text, p_before bigint, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.consumer_dead_letters(p_consumer text, p_before bigint, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION consumer_lag(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.consumer_lag() FROM PUBLIC;
GRANT ALL ON FUNCTION events.consumer_lag() TO outbox_worker;
GRANT ALL ON FUNCTION events.consumer_lag() TO staff_service;

--
-- Name: FUNCTION consumer_lock_key(p_consumer_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.consumer_lock_key(p_consumer_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION count_backlog(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.count_backlog() FROM PUBLIC;

--
-- Name: FUNCTION count_bulk(p_actor uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.count_bulk(p_actor uuid, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION event_attempts(p_actor uuid, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.event_attempts(p_actor uuid, p_event_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION event_detail(p_actor uuid, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.event_detail(p_actor uuid, p_event_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION event_records(p_actor uuid, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.event_records(p_actor uuid, p_event_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION fan_out_publication(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.fan_out_publication() FROM PUBLIC;

--
-- Name: FUNCTION filtered_events(p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.filtered_events(p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION list_dead_letters(p_actor uuid, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.list_dead_letters(p_actor uuid, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION map_producer_role(p_role name, p_module text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.map_producer_role(p_role name, p_module text) FROM PUBLIC;

--
-- Name: FUNCTION open_repair(p_actor uuid, p_action text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.open_repair(p_actor uuid, p_action text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION operate_consumer(p_action text, p_actor uuid, p_elevation uuid, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.operate_consumer(p_action text, p_actor uuid, p_elevation uuid, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION operator_request_replay(p_actor uuid, p_key text, p_action text, p_dead_letter_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.operator_request_replay(p_actor uuid, p_key text, p_action text, p_dead_letter_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION own_consumer(p_consumer text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.own_consumer(p_consumer text) FROM PUBLIC;

--
-- Name: FUNCTION parked_aggregates(p_actor uuid, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.parked_aggregates(p_actor uuid, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION promote_head(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.promote_head(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) FROM PUBLIC;

--
-- Name: FUNCTION promote_head_after(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_after bigint); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.promote_head_after(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_after bigint) FROM PUBLIC;

--
-- Name: FUNCTION publish_contract_version(p_event_type text, p_version integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.publish_contract_version(p_event_type text, p_version integer) FROM PUBLIC;

--
-- Name: FUNCTION purge_events(p_published interval, p_dead_lettered interval, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.purge_events(p_published interval, p_dead_lettered interval, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.purge_events(p_published interval, p_dead_lettered interval, p_limit integer) TO outbox_worker;

--
-- Name: FUNCTION record_consumer_processing_attempt(p_delivery_id uuid, p_lease_token uuid, p_attempt integer, p_outcome text, p_error_class text, p_code text, p_retry_at timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.record_consumer_processing_attempt(p_delivery_id uuid, p_lease_token uuid, p_attempt integer, p_outcome text, p_error_class text, p_code text, p_retry_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION events.record_consumer_processing_attempt(p_delivery_id uuid, p_lease_token uuid, p_attempt integer, p_outcome text, p_error_class text, p_code text, p_retry_at timestamp with time zone) TO events_consumer;

--
-- Name: FUNCTION record_consumer_processing_attempts(p_delivery_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_error_classes text[], p_codes text[], p_retry_at timestamp with time zone[]); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.record_consumer_processing_attempts(p_delivery_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_error_classes text[], p_codes text[], p_retry_at timestamp with time zone[]) FROM PUBLIC;
GRANT ALL ON FUNCTION events.record_consumer_processing_attempts(p_delivery_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_error_classes text[], p_codes text[], p_retry_at timestamp with time zone[]) TO events_consumer;

--
-- Name: FUNCTION record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) FROM PUBLIC;
GRANT ALL ON FUNCTION events.record_publication_attempt(p_record_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_targets text[], p_retry_at timestamp with time zone[]) TO outbox_worker;

--
-- Name: FUNCTION refuse_final_delivery_update(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.refuse_final_delivery_update() FROM PUBLIC;

--
-- Name: FUNCTION refuse_final_update(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.refuse_final_update() FROM PUBLIC;

--
-- Name: FUNCTION refuse_orphaned_event(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.refuse_orphaned_event() FROM PUBLIC;

--
-- Name: FUNCTION refuse_past_retry(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.refuse_past_retry() FROM PUBLIC;

--
-- Name: FUNCTION register_consumer(p_code text, p_owner_module text, p_max_attempts integer, p_ordered boolean); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.register_consumer(p_code text, p_owner_module text, p_max_attempts integer, p_ordered boolean) FROM PUBLIC;

--
-- Name: FUNCTION register_event_type(p_code text, p_owner_module text, p_description text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.register_event_type(p_code text, p_owner_module text, p_description text) FROM PUBLIC;

--
-- Name: FUNCTION register_module(p_code text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.register_module(p_code text) FROM PUBLIC;

--
-- Name: FUNCTION release_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.release_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION reopen_aggregate(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.reopen_aggregate(p_organization_id uuid, p_aggregate_type text, p_aggregate_id text) FROM PUBLIC;

--
-- Name: FUNCTION replay_consumer(p_consumer text, p_from_sequence bigint, p_since timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.replay_consumer(p_consumer text, p_from_sequence bigint, p_since timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION republish_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.republish_dead_letter(p_actor uuid, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION require_one_outbox_record(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.require_one_outbox_record() FROM PUBLIC;

--
-- Name: FUNCTION retire_event_type(p_code text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.retire_event_type(p_code text) FROM PUBLIC;

--
-- Name: FUNCTION search_events(p_actor uuid, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.search_events(p_actor uuid, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION set_consumer_active(p_consumer text, p_active boolean); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.set_consumer_active(p_consumer text, p_active boolean) FROM PUBLIC;

--
-- Name: FUNCTION staff_activity(p_actor uuid, p_elevation text, p_minutes integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) TO staff_service;

--
-- Name: FUNCTION staff_backlog(p_actor uuid, p_elevation text, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_backlog(p_actor uuid, p_elevation text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_backlog(p_actor uuid, p_elevation text, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_bulk_repair(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_bulk_repair(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_bulk_repair(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone, p_reason text, p_idempotency_key text, p_limit integer) TO staff_service;

--
-- Name: FUNCTION staff_consumer_dead_letters(p_actor uuid, p_elevation text, p_consumer text, p_before bigint, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_consumer_dead_letters(p_actor uuid, p_elevation text, p_consumer text, p_before bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_consumer_dead_letters(p_actor uuid, p_elevation text, p_consumer text, p_before bigint, p_limit integer) TO staff_service;

--
-- Name: FUNCTION staff_consumer_lag(p_actor uuid, p_elevation text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_consumer_lag(p_actor uuid, p_elevation text) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_consumer_lag(p_actor uuid, p_elevation text) TO identity_service;

--
-- Name: FUNCTION staff_count_bulk(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_count_bulk(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_count_bulk(p_actor uuid, p_elevation text, p_action text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_as_of timestamp with time zone) TO staff_service;

--
-- Name: FUNCTION staff_event_attempts(p_actor uuid, p_elevation text, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_event_attempts(p_actor uuid, p_elevation text, p_event_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_event_attempts(p_actor uuid, p_elevation text, p_event_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_event_audit(p_actor uuid, p_elevation text, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_event_audit(p_actor uuid, p_elevation text, p_event_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_event_audit(p_actor uuid, p_elevation text, p_event_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_event_detail(p_actor uuid, p_elevation text, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_event_detail(p_actor uuid, p_elevation text, p_event_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_event_detail(p_actor uuid, p_elevation text, p_event_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_event_records(p_actor uuid, p_elevation text, p_event_id uuid); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_event_records(p_actor uuid, p_elevation text, p_event_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_event_records(p_actor uuid, p_elevation text, p_event_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_list_dead_letters(p_actor uuid, p_elevation text, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_list_dead_letters(p_actor uuid, p_elevation text, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_list_dead_letters(p_actor uuid, p_elevation text, p_organization_id uuid, p_unresolved_only boolean, p_after uuid, p_before uuid, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_operate_consumer(p_actor uuid, p_elevation text, p_action text, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_operate_consumer(p_actor uuid, p_elevation text, p_action text, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_operate_consumer(p_actor uuid, p_elevation text, p_action text, p_consumer text, p_from_sequence bigint, p_since timestamp with time zone, p_reason text) TO staff_service;

--
-- Name: FUNCTION staff_parked_aggregates(p_actor uuid, p_elevation text, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_parked_aggregates(p_actor uuid, p_elevation text, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_parked_aggregates(p_actor uuid, p_elevation text, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_release_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_release_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_release_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text) TO identity_service;

--
-- Name: FUNCTION staff_republish_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_republish_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_republish_dead_letter(p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_new_record_id uuid, p_reason text, p_idempotency_key text) TO identity_service;

--
-- Name: FUNCTION staff_search_events(p_actor uuid, p_elevation text, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.staff_search_events(p_actor uuid, p_elevation text, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION events.staff_search_events(p_actor uuid, p_elevation text, p_state text, p_event_type text, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text, p_since timestamp with time zone, p_until timestamp with time zone, p_before bigint, p_limit integer) TO staff_service;

--
-- Name: FUNCTION subscribe(p_consumer text, p_event_type text, p_min_version integer, p_max_version integer); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.subscribe(p_consumer text, p_event_type text, p_min_version integer, p_max_version integer) FROM PUBLIC;

--
-- Name: FUNCTION validate_publication_attempt_insert(); Type: ACL; Schema: events; Owner: -
--

REVOKE ALL ON FUNCTION events.validate_publication_attempt_insert() FROM PUBLIC;

--
-- Name: FUNCTION add_identity(p_id uuid, p_created_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.add_identity(p_id uuid, p_created_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.add_identity(p_id uuid, p_created_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION add_organization(p_id uuid, p_name text, p_created_by uuid, p_created_at timestamp with time zone, p_permissions text[]); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.add_organization(p_id uuid, p_name text, p_created_by uuid, p_created_at timestamp with time zone, p_permissions text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.add_organization(p_id uuid, p_name text, p_created_by uuid, p_created_at timestamp with time zone, p_permissions text[]) TO identity_service;

--
-- Name: FUNCTION add_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.add_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.add_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION add_staff_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.add_staff_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.add_staff_session(p_id uuid, p_identity_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) TO staff_service;

--
-- Name: FUNCTION elevate_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.elevate_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.elevate_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION elevate_staff_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.elevate_staff_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.elevate_staff_session(p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) TO staff_service;

--
-- Name: FUNCTION enqueue_invitation_message(p_identity_id uuid, p_organization_id uuid, p_invitation_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_pending_max integer, p_organization_limit integer, p_organization_window interval, p_address_limit integer, p_address_window interval, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.enqueue_invitation_message(p_identity_id uuid, p_organization_id uuid, p_invitation_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_pending_max integer, p_organization_limit integer, p_organization_window interval, p_address_limit integer, p_address_window interval, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.enqueue_invitation_message(p_identity_id uuid, p_organization_id uuid, p_invitation_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_pending_max integer, p_organization_limit integer, p_organization_window interval, p_address_limit integer, p_address_window interval, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) TO identity_service;

--
-- Name: FUNCTION find_account(p_identifier text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_account(p_identifier text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_account(p_identifier text) TO identity_service;

--
-- Name: FUNCTION find_challenge(p_purpose text, p_identity_id uuid, p_identifier text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_challenge(p_purpose text, p_identity_id uuid, p_identifier text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_challenge(p_purpose text, p_identity_id uuid, p_identifier text) TO identity_service;

--
-- Name: FUNCTION find_elevation(p_token_digest text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_elevation(p_token_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_elevation(p_token_digest text) TO identity_service;

--
-- Name: FUNCTION find_invitation(p_id uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_invitation(p_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_invitation(p_id uuid) TO identity_service;

--
-- Name: FUNCTION find_invitation_by_token(p_token_digest text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_invitation_by_token(p_token_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_invitation_by_token(p_token_digest text) TO identity_service;

--
-- Name: FUNCTION find_magic_link_by_token(p_token_digest text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_magic_link_by_token(p_token_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_magic_link_by_token(p_token_digest text) TO identity_service;

--
-- Name: FUNCTION find_magic_link_target(p_email text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_magic_link_target(p_email text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_magic_link_target(p_email text) TO identity_service;

--
-- Name: FUNCTION find_membership(p_organization_id uuid, p_identity_id uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_membership(p_organization_id uuid, p_identity_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_membership(p_organization_id uuid, p_identity_id uuid) TO identity_service;

--
-- Name: FUNCTION find_organization(p_id uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_organization(p_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_organization(p_id uuid) TO identity_service;

--
-- Name: FUNCTION find_recovery_target(p_identifier text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_recovery_target(p_identifier text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_recovery_target(p_identifier text) TO identity_service;

--
-- Name: FUNCTION find_session(p_token_digest text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_session(p_token_digest text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_session(p_token_digest text) TO identity_service;

--
-- Name: FUNCTION find_verified_identifiers(p_identity_id uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.find_verified_identifiers(p_identity_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.find_verified_identifiers(p_identity_id uuid) TO identity_service;

--
-- Name: FUNCTION grant_elevation(p_staff boolean, p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.grant_elevation(p_staff boolean, p_id uuid, p_session_id uuid, p_identity_id uuid, p_challenge_id uuid, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION hit_rate_limit(p_key text, p_window_start timestamp with time zone, p_window_end timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.hit_rate_limit(p_key text, p_window_start timestamp with time zone, p_window_end timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.hit_rate_limit(p_key text, p_window_start timestamp with time zone, p_window_end timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION hold_code_budget(p_identity_id uuid, p_audience text, p_day date); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.hold_code_budget(p_identity_id uuid, p_audience text, p_day date) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.hold_code_budget(p_identity_id uuid, p_audience text, p_day date) TO identity_service;

--
-- Name: FUNCTION notify_suppressed_identifier(p_destination text, p_occurred_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.notify_suppressed_identifier(p_destination text, p_occurred_at timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION open_magic_link_if_known(p_identity_id uuid, p_link_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.open_magic_link_if_known(p_identity_id uuid, p_link_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.open_magic_link_if_known(p_identity_id uuid, p_link_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) TO identity_service;

--
-- Name: FUNCTION open_recovery_if_known(p_identity_id uuid, p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.open_recovery_if_known(p_identity_id uuid, p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.open_recovery_if_known(p_identity_id uuid, p_challenge_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text) TO identity_service;

--
-- Name: FUNCTION pace_destination(p_key text, p_now timestamp with time zone, p_first_wait interval, p_max_wait interval, p_quiet interval); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.pace_destination(p_key text, p_now timestamp with time zone, p_first_wait interval, p_max_wait interval, p_quiet interval) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.pace_destination(p_key text, p_now timestamp with time zone, p_first_wait interval, p_max_wait interval, p_quiet interval) TO identity_service;

--
-- Name: FUNCTION pace_wait(p_key text, p_now timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.pace_wait(p_key text, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.pace_wait(p_key text, p_now timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION preferred_locale(p_identity_id uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.preferred_locale(p_identity_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.preferred_locale(p_identity_id uuid) TO identity_service;

--
-- Name: FUNCTION refuse_unsent_code_change(); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.refuse_unsent_code_change() FROM PUBLIC;

--
-- Name: FUNCTION revoke_session(p_session_id uuid, p_now timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.revoke_session(p_session_id uuid, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.revoke_session(p_session_id uuid, p_now timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION revoke_sessions(p_identity_id uuid, p_now timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.revoke_sessions(p_identity_id uuid, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.revoke_sessions(p_identity_id uuid, p_now timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_challenge(p_id uuid, p_purpose text, p_identity_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_challenge(p_id uuid, p_purpose text, p_identity_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_challenge(p_id uuid, p_purpose text, p_identity_id uuid, p_identifier text, p_channel text, p_code_hash text, p_failed_attempts integer, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_code_budget(p_identity_id uuid, p_audience text, p_day date, p_wrong_codes integer, p_exhausted_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_code_budget(p_identity_id uuid, p_audience text, p_day date, p_wrong_codes integer, p_exhausted_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_code_budget(p_identity_id uuid, p_audience text, p_day date, p_wrong_codes integer, p_exhausted_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_invitation(p_id uuid, p_organization_id uuid, p_email text, p_token_digest text, p_invited_by uuid, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone, p_accepted_by uuid); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_invitation(p_id uuid, p_organization_id uuid, p_email text, p_token_digest text, p_invited_by uuid, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone, p_accepted_by uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_invitation(p_id uuid, p_organization_id uuid, p_email text, p_token_digest text, p_invited_by uuid, p_state text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_ended_at timestamp with time zone, p_accepted_by uuid) TO identity_service;

--
-- Name: FUNCTION save_login_identifier(p_value text, p_channel text, p_identity_id uuid, p_created_at timestamp with time zone, p_verified_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_login_identifier(p_value text, p_channel text, p_identity_id uuid, p_created_at timestamp with time zone, p_verified_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_login_identifier(p_value text, p_channel text, p_identity_id uuid, p_created_at timestamp with time zone, p_verified_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_magic_link(p_id uuid, p_identity_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_redeemed_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_magic_link(p_id uuid, p_identity_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_redeemed_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_magic_link(p_id uuid, p_identity_id uuid, p_email text, p_token_digest text, p_created_at timestamp with time zone, p_expires_at timestamp with time zone, p_redeemed_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_membership(p_organization_id uuid, p_identity_id uuid, p_permissions text[], p_created_at timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_membership(p_organization_id uuid, p_identity_id uuid, p_permissions text[], p_created_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_membership(p_organization_id uuid, p_identity_id uuid, p_permissions text[], p_created_at timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION save_password(p_identity_id uuid, p_password_hash text, p_now timestamp with time zone); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.save_password(p_identity_id uuid, p_password_hash text, p_now timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.save_password(p_identity_id uuid, p_password_hash text, p_now timestamp with time zone) TO identity_service;

--
-- Name: FUNCTION set_preferred_locale(p_identity_id uuid, p_locale text); Type: ACL; Schema: identity; Owner: -
--

REVOKE ALL ON FUNCTION identity.set_preferred_locale(p_identity_id uuid, p_locale text) FROM PUBLIC;
GRANT ALL ON FUNCTION identity.set_preferred_locale(p_identity_id uuid, p_locale text) TO identity_service;

--
-- Name: FUNCTION list_dead_letters(p_consumer text, p_limit integer); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.list_dead_letters(p_consumer text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.list_dead_letters(p_consumer text, p_limit integer) TO inbox_consumer;

--
-- Name: FUNCTION list_dead_letters_unchecked(p_consumer text, p_limit integer); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.list_dead_letters_unchecked(p_consumer text, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION list_received(p_consumer text, p_limit integer); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.list_received(p_consumer text, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.list_received(p_consumer text, p_limit integer) TO inbox_consumer;

--
-- Name: FUNCTION list_received_unchecked(p_consumer text, p_limit integer); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.list_received_unchecked(p_consumer text, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION own_consumer(p_consumer text); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.own_consumer(p_consumer text) FROM PUBLIC;

--
-- Name: FUNCTION record_dead_letter(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.record_dead_letter(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.record_dead_letter(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text) TO inbox_consumer;

--
-- Name: FUNCTION record_dead_letter_unchecked(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.record_dead_letter_unchecked(p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea, p_attempts integer, p_error_class text) FROM PUBLIC;

--
-- Name: FUNCTION record_receipt(p_consumer text, p_event_id uuid, p_stream_sequence bigint); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.record_receipt(p_consumer text, p_event_id uuid, p_stream_sequence bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.record_receipt(p_consumer text, p_event_id uuid, p_stream_sequence bigint) TO inbox_consumer;

--
-- Name: FUNCTION record_receipt_unchecked(p_consumer text, p_event_id uuid, p_stream_sequence bigint); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.record_receipt_unchecked(p_consumer text, p_event_id uuid, p_stream_sequence bigint) FROM PUBLIC;

--
-- Name: FUNCTION request_replay(p_consumer text, p_event_id uuid); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.request_replay(p_consumer text, p_event_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.request_replay(p_consumer text, p_event_id uuid) TO inbox_consumer;

--
-- Name: FUNCTION request_replay_unchecked(p_consumer text, p_event_id uuid); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.request_replay_unchecked(p_consumer text, p_event_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION take_replay(p_consumer text); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.take_replay(p_consumer text) FROM PUBLIC;
GRANT ALL ON FUNCTION inbox.take_replay(p_consumer text) TO inbox_consumer;

--
-- Name: FUNCTION take_replay_unchecked(p_consumer text); Type: ACL; Schema: inbox; Owner: -
--

REVOKE ALL ON FUNCTION inbox.take_replay_unchecked(p_consumer text) FROM PUBLIC;

--
-- Name: FUNCTION intent_snapshots(p_id uuid); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.intent_snapshots(p_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION notifications.intent_snapshots(p_id uuid) TO notifications_producer;

--
-- Name: FUNCTION opt_in(p_recipient_id uuid, p_category text, p_channels text[]); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.opt_in(p_recipient_id uuid, p_category text, p_channels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION notifications.opt_in(p_recipient_id uuid, p_category text, p_channels text[]) TO notifications_producer;

--
-- Name: FUNCTION opt_out(p_recipient_id uuid, p_category text, p_channels text[]); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.opt_out(p_recipient_id uuid, p_category text, p_channels text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION notifications.opt_out(p_recipient_id uuid, p_category text, p_channels text[]) TO notifications_producer;

--
-- Name: FUNCTION opt_outs(p_recipient_id uuid); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.opt_outs(p_recipient_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION notifications.opt_outs(p_recipient_id uuid) TO notifications_producer;

--
-- Name: FUNCTION refuse_change(); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.refuse_change() FROM PUBLIC;

--
-- Name: FUNCTION take_snapshot(p_intent_id uuid, p_intent_key text, p_category text, p_recipient_id uuid, p_source text, p_snapshot_id uuid, p_channel text, p_destination text, p_masked_destination text, p_template text, p_locale text, p_variables jsonb); Type: ACL; Schema: notifications; Owner: -
--

REVOKE ALL ON FUNCTION notifications.take_snapshot(p_intent_id uuid, p_intent_key text, p_category text, p_recipient_id uuid, p_source text, p_snapshot_id uuid, p_channel text, p_destination text, p_masked_destination text, p_template text, p_locale text, p_variables jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION notifications.take_snapshot(p_intent_id uuid, p_intent_key text, p_category text, p_recipient_id uuid, p_source text, p_snapshot_id uuid, p_channel text, p_destination text, p_masked_destination text, p_template text, p_locale text, p_variables jsonb) TO notifications_producer;

--
-- Name: FUNCTION add_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_channel text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.add_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_channel text, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION backlog(p_actor uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.backlog(p_actor uuid) FROM PUBLIC;

--
-- Name: FUNCTION backlog_metrics(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.backlog_metrics() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.backlog_metrics() TO identity_service;

--
-- Name: FUNCTION break_glass_step_up(p_email text, p_challenge_id uuid, p_code_hash text, p_expires_at timestamp with time zone, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.break_glass_step_up(p_email text, p_challenge_id uuid, p_code_hash text, p_expires_at timestamp with time zone, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION cancel_by_subject(p_subject_id uuid, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.cancel_by_subject(p_subject_id uuid, p_reason text) TO identity_service;

--
-- Name: FUNCTION change_provider_pause(p_pause boolean, p_actor uuid, p_elevation uuid, p_provider text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.change_provider_pause(p_pause boolean, p_actor uuid, p_elevation uuid, p_provider text, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION check_attempt_sequence(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.check_attempt_sequence() FROM PUBLIC;

--
-- Name: FUNCTION claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision, p_leave_urgent_seconds double precision); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision, p_leave_urgent_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.claim_messages(p_owner text, p_limit integer, p_lease_seconds double precision, p_leave_urgent_seconds double precision) TO outbox_worker;

--
-- Name: FUNCTION claim_urgent_messages(p_owner text, p_limit integer, p_lease_seconds double precision); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.claim_urgent_messages(p_owner text, p_limit integer, p_lease_seconds double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.claim_urgent_messages(p_owner text, p_limit integer, p_lease_seconds double precision) TO outbox_worker;

--
-- Name: FUNCTION count_backlog(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.count_backlog() FROM PUBLIC;

--
-- Name: FUNCTION current_claim_floor(p_now timestamp with time zone); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.current_claim_floor(p_now timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION dead_letter_repairs(p_message_ids uuid[]); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.dead_letter_repairs(p_message_ids uuid[]) FROM PUBLIC;

--
-- Name: FUNCTION dead_letters(p_actor uuid, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.dead_letters(p_actor uuid, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION delivery_state_after(p_state text, p_event text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.delivery_state_after(p_state text, p_event text) FROM PUBLIC;

--
-- Name: FUNCTION delivery_state_counts(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.delivery_state_counts() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.delivery_state_counts() TO identity_service;

--
-- Name: FUNCTION delivery_state_rank(p_state text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.delivery_state_rank(p_state text) FROM PUBLIC;

--
-- Name: FUNCTION enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, p_subject_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text, p_expires_at timestamp with time zone, p_priority integer, p_not_before timestamp with time zone, p_trace_context text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, p_subject_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text, p_expires_at timestamp with time zone, p_priority integer, p_not_before timestamp with time zone, p_trace_context text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.enqueue_message(p_id uuid, p_purpose text, p_channel text, p_destination text, p_subject_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text, p_expires_at timestamp with time zone, p_priority integer, p_not_before timestamp with time zone, p_trace_context text) TO outbox_producer;

--
-- Name: FUNCTION expire_messages(p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.expire_messages(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.expire_messages(p_limit integer) TO outbox_worker;

--
-- Name: FUNCTION find_messages(p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.find_messages(p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION grant_staff(p_email text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.grant_staff(p_email text) FROM PUBLIC;

--
-- Name: FUNCTION health_work(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.health_work() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.health_work() TO staff_service;

--
-- Name: FUNCTION lease_picked(p_ids uuid[], p_owner text, p_now timestamp with time zone, p_lease_expires_at timestamp with time zone, p_floor timestamp with time zone); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.lease_picked(p_ids uuid[], p_owner text, p_now timestamp with time zone, p_lease_expires_at timestamp with time zone, p_floor timestamp with time zone) FROM PUBLIC;

--
-- Name: FUNCTION lift_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.lift_suppression(p_actor uuid, p_elevation_id uuid, p_destination text, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION list_suppressions(p_actor uuid, p_include_lifted boolean, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.list_suppressions(p_actor uuid, p_include_lifted boolean, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION mask_destination(p_value text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.mask_destination(p_value text) FROM PUBLIC;

--
-- Name: FUNCTION message_attempts(p_actor uuid, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.message_attempts(p_actor uuid, p_message_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION message_detail(p_actor uuid, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.message_detail(p_actor uuid, p_message_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION message_history(p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.message_history(p_message_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION message_receipts(p_actor uuid, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.message_receipts(p_actor uuid, p_message_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION pause_provider(p_actor uuid, p_provider text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.pause_provider(p_actor uuid, p_provider text, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION paused_providers(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.paused_providers() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.paused_providers() TO outbox_worker;
GRANT ALL ON FUNCTION outbox.paused_providers() TO staff_service;

--
-- Name: FUNCTION provider_pauses(p_actor uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.provider_pauses(p_actor uuid) FROM PUBLIC;

--
-- Name: FUNCTION purge_messages(p_published_retention interval, p_dead_lettered_retention interval, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.purge_messages(p_published_retention interval, p_dead_lettered_retention interval, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.purge_messages(p_published_retention interval, p_dead_lettered_retention interval, p_limit integer) TO outbox_worker;

--
-- Name: FUNCTION record_outcomes(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[]); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.record_outcomes(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[]) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.record_outcomes(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[]) TO outbox_worker;

--
-- Name: FUNCTION record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[]); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.record_outcomes_detailed(p_message_ids uuid[], p_lease_tokens uuid[], p_attempts integer[], p_outcomes text[], p_failure_classes text[], p_codes text[], p_providers text[], p_provider_message_ids text[], p_retry_at timestamp with time zone[], p_attempted boolean[], p_details text[]) TO outbox_worker;

--
-- Name: FUNCTION record_receipt(p_provider text, p_provider_event_id text, p_provider_message_id text, p_event text, p_detail text, p_occurred_at timestamp with time zone, p_raw jsonb); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.record_receipt(p_provider text, p_provider_event_id text, p_provider_message_id text, p_event text, p_detail text, p_occurred_at timestamp with time zone, p_raw jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.record_receipt(p_provider text, p_provider_event_id text, p_provider_message_id text, p_event text, p_detail text, p_occurred_at timestamp with time zone, p_raw jsonb) TO identity_service;

--
-- Name: FUNCTION refresh_claim_floor(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.refresh_claim_floor() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.refresh_claim_floor() TO outbox_worker;

--
-- Name: FUNCTION refuse_final_update(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.refuse_final_update() FROM PUBLIC;

--
-- Name: FUNCTION refuse_past_retry(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.refuse_past_retry() FROM PUBLIC;

--
-- Name: FUNCTION refuse_receipt_change(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.refuse_receipt_change() FROM PUBLIC;

--
-- Name: FUNCTION reissue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.reissue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION requeue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.requeue_dead_letter(p_actor uuid, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text) FROM PUBLIC;

--
-- Name: FUNCTION require_elevation(p_actor uuid, p_elevation text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.require_elevation(p_actor uuid, p_elevation text) FROM PUBLIC;

--
-- Name: FUNCTION require_operator(p_actor uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.require_operator(p_actor uuid) FROM PUBLIC;

--
-- Name: FUNCTION require_read_elevation(p_actor uuid, p_elevation text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.require_read_elevation(p_actor uuid, p_elevation text) FROM PUBLIC;

--
-- Name: FUNCTION require_staff(p_actor uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.require_staff(p_actor uuid) FROM PUBLIC;

--
-- Name: FUNCTION resume_provider(p_actor uuid, p_provider text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.resume_provider(p_actor uuid, p_provider text, p_reason text) FROM PUBLIC;

--
-- Name: FUNCTION revoke_staff(p_email text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.revoke_staff(p_email text) FROM PUBLIC;

--
-- Name: FUNCTION staff_activity(p_actor uuid, p_elevation text, p_minutes integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_activity(p_actor uuid, p_elevation text, p_minutes integer) TO identity_service;

--
-- Name: FUNCTION staff_add_suppression(p_actor uuid, p_elevation text, p_destination text, p_channel text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_add_suppression(p_actor uuid, p_elevation text, p_destination text, p_channel text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_add_suppression(p_actor uuid, p_elevation text, p_destination text, p_channel text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_backlog(p_actor uuid, p_elevation text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_backlog(p_actor uuid, p_elevation text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_backlog(p_actor uuid, p_elevation text) TO identity_service;

--
-- Name: FUNCTION staff_dead_letters(p_actor uuid, p_elevation text, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_dead_letters(p_actor uuid, p_elevation text, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_dead_letters(p_actor uuid, p_elevation text, p_after uuid, p_before uuid, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_elevation(p_actor uuid, p_elevation text, p_reading boolean); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_elevation(p_actor uuid, p_elevation text, p_reading boolean) FROM PUBLIC;

--
-- Name: FUNCTION staff_find_messages(p_actor uuid, p_elevation text, p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_find_messages(p_actor uuid, p_elevation text, p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_find_messages(p_actor uuid, p_elevation text, p_state text, p_purpose text, p_reason text, p_provider text, p_since timestamp with time zone, p_until timestamp with time zone, p_message_id uuid, p_destination_digest text, p_after uuid, p_before uuid, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_identity(p_email text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_identity(p_email text) FROM PUBLIC;

--
-- Name: FUNCTION staff_lift_suppression(p_actor uuid, p_elevation text, p_destination text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_lift_suppression(p_actor uuid, p_elevation text, p_destination text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_lift_suppression(p_actor uuid, p_elevation text, p_destination text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_message_attempts(p_actor uuid, p_elevation text, p_message_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_message_audit(p_actor uuid, p_elevation text, p_message_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_message_detail(p_actor uuid, p_elevation text, p_message_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_message_receipts(p_actor uuid, p_elevation text, p_message_id uuid) TO identity_service;

--
-- Name: FUNCTION staff_pause_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_pause_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_pause_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_provider_pauses(p_actor uuid, p_elevation text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_provider_pauses(p_actor uuid, p_elevation text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_provider_pauses(p_actor uuid, p_elevation text) TO identity_service;

--
-- Name: FUNCTION staff_reissue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_reissue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_reissue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text) TO identity_service;

--
-- Name: FUNCTION staff_reissue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_reissue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_reissue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_sealed_secret text, p_code_hash text, p_idempotency_key text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_request_replay(p_actor uuid, p_key text, p_action text, p_message_id uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_request_replay(p_actor uuid, p_key text, p_action text, p_message_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION staff_requeue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_requeue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_requeue_dead_letter(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text) TO identity_service;

--
-- Name: FUNCTION staff_requeue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_requeue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_requeue_dead_letter_for(p_actor uuid, p_elevation text, p_message_id uuid, p_new_message_id uuid, p_idempotency_key text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_resume_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_resume_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_resume_provider(p_actor uuid, p_elevation text, p_provider text, p_reason text) TO identity_service;

--
-- Name: FUNCTION staff_suppressions(p_actor uuid, p_elevation text, p_include_lifted boolean, p_limit integer); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_suppressions(p_actor uuid, p_elevation text, p_include_lifted boolean, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_suppressions(p_actor uuid, p_elevation text, p_include_lifted boolean, p_limit integer) TO identity_service;

--
-- Name: FUNCTION staff_workers(p_actor uuid, p_elevation text); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.staff_workers(p_actor uuid, p_elevation text) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.staff_workers(p_actor uuid, p_elevation text) TO staff_service;

--
-- Name: FUNCTION stored_claim_floor(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.stored_claim_floor() FROM PUBLIC;

--
-- Name: FUNCTION suppress_at_claim(); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.suppress_at_claim() FROM PUBLIC;

--
-- Name: FUNCTION worker_heartbeat(p_owner text, p_lane text, p_started_at timestamp with time zone, p_stopped boolean); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.worker_heartbeat(p_owner text, p_lane text, p_started_at timestamp with time zone, p_stopped boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION outbox.worker_heartbeat(p_owner text, p_lane text, p_started_at timestamp with time zone, p_stopped boolean) TO outbox_worker;
GRANT ALL ON FUNCTION outbox.worker_heartbeat(p_owner text, p_lane text, p_started_at timestamp with time zone, p_stopped boolean) TO events_consumer;

--
-- Name: FUNCTION workers(p_actor uuid); Type: ACL; Schema: outbox; Owner: -
--

REVOKE ALL ON FUNCTION outbox.workers(p_actor uuid) FROM PUBLIC;

--
-- Name: FUNCTION applied_migrations(); Type: ACL; Schema: outbox_meta; Owner: -
--

REVOKE ALL ON FUNCTION outbox_meta.applied_migrations() FROM PUBLIC;
GRANT ALL ON FUNCTION outbox_meta.applied_migrations() TO identity_service;
GRANT ALL ON FUNCTION outbox_meta.applied_migrations() TO outbox_worker;

--
-- Name: TABLE migrations; Type: ACL; Schema: outbox_meta; Owner: -
--

GRANT SELECT ON TABLE outbox_meta.migrations TO outbox_owner;

--
-- Name: DEFAULT PRIVILEGES FOR FUNCTIONS; Type: DEFAULT ACL; Schema: -; Owner: -
--

ALTER DEFAULT PRIVILEGES FOR ROLE outbox_owner REVOKE ALL ON FUNCTIONS FROM PUBLIC;

--
-- PostgreSQL database dump complete
--
