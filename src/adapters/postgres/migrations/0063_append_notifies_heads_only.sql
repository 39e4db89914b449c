-- An append notifies the events lane only when its event is the aggregate's head.
--
-- Every append sent `pg_notify('events_work', '')`. An event appended behind a live record of
-- its aggregate cannot be claimed until that record is published, and the record that
-- publishes it hands the head on and notifies then (0061): the append's notification gave
-- the lane nothing to do. A NOTIFY is not free: at commit PostgreSQL takes a cluster-wide
-- lock on the notification queue and holds it through the commit's WAL flush, so notifying
-- producers commit one after another instead of sharing flushes (issue 30; under a held
-- horizon the appends waited on that lock). The append now notifies only when its record
-- is the head, or when its snapshot is older than READ COMMITTED and it noted a vacancy
-- for the next claim. tests/integration/postgres/test_append_notifies_heads_only.py.

SET LOCAL ROLE outbox_owner;

CREATE OR REPLACE FUNCTION events.append_domain_event(p_organization_id uuid, p_event_type text, p_contract_version integer, p_aggregate_type text, p_aggregate_id text, p_idempotency_key text, p_payload jsonb, p_occurred_at timestamp with time zone, p_trace_context text DEFAULT NULL::text) RETURNS uuid
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

RESET ROLE;
