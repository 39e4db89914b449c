-- The functions of the tenant events outbox (SPEC §16, the seed's OX-E1): registration (the
-- owner only), the producer's append, the worker's claim and record, and the triggers that
-- hold the rules a single row cannot.
--
-- Per-aggregate order. The events of one (organization, aggregate) are published in append
-- order: only the aggregate's head is ever claimable. `head` marks the oldest live record of
-- an aggregate that no unresolved dead letter parks; at most one per aggregate (a unique
-- index). The claim reads heads only, so it costs O(batch) however deep a backlog is.
--   - append: under the aggregate's advisory lock, the new record is the head when the
--     aggregate has no live record and no unresolved dead letter;
--   - record 'published': the head passes to the aggregate's next live record;
--   - record 'dead_letter': nobody is head; the aggregate is parked until an operator releases
--     or republishes, which calls events.reopen_aggregate.
-- Moving a head needs the aggregate's lock (an append in progress decides from what it sees).
-- The worker never waits for it: it tries the lock and, when a producer holds it, notes a
-- vacancy (events.head_vacancies) that the next claim fills under the lock. An append in a
-- REPEATABLE READ or SERIALIZABLE transaction cannot trust its snapshot to decide, so it
-- always notes a vacancy instead.

SET LOCAL ROLE outbox_owner;

ALTER TABLE events.outbox_records ADD COLUMN head boolean NOT NULL DEFAULT false;
ALTER TABLE events.outbox_records ADD CONSTRAINT outbox_records_head_is_live
    CHECK (NOT head OR state IN ('pending', 'leased'));
CREATE UNIQUE INDEX outbox_records_one_head_per_aggregate
    ON events.outbox_records (organization_id, aggregate_type, aggregate_id) WHERE head;
-- The claim: due heads of one organization in order, and organizations one after another.
CREATE INDEX outbox_records_heads_by_organization
    ON events.outbox_records (organization_id, claimable_at, append_sequence) WHERE head;
-- The claim's fill: due heads of every organization in order.
CREATE INDEX outbox_records_heads_due ON events.outbox_records (claimable_at, append_sequence)
    WHERE head;

-- Aggregates whose head must be looked for again, under their lock, by the next claim.
CREATE TABLE events.head_vacancies (
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    noted_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    PRIMARY KEY (organization_id, aggregate_type, aggregate_id)
);
CREATE INDEX head_vacancies_by_age ON events.head_vacancies (noted_at);

-- Internal helpers (no grant: only the functions below call them) ---------------------------

-- The transaction-level advisory lock key of one aggregate. Two aggregates sharing a key
-- only wait for each other.
CREATE FUNCTION events.aggregate_lock_key(
    p_organization_id uuid, p_aggregate_type text, p_aggregate_id text
) RETURNS bigint
LANGUAGE sql IMMUTABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.hashtextextended(
        'events.aggregate/' || p_organization_id::text || '/' || p_aggregate_type || '/'
            || p_aggregate_id,
        0
    )
$$;

-- Make the aggregate's oldest live record its head, when it has none and nothing parks it.
-- The caller holds the aggregate's lock. Returns whether a head was set.
CREATE FUNCTION events.promote_head(
    p_organization_id uuid, p_aggregate_type text, p_aggregate_id text
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.outbox_records AS r
        WHERE r.head AND r.organization_id = p_organization_id
          AND r.aggregate_type = p_aggregate_type AND r.aggregate_id = p_aggregate_id
    ) OR EXISTS (
        SELECT 1 FROM events.dead_letters AS d
        WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
          AND d.aggregate_type = p_aggregate_type AND d.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
    UPDATE events.outbox_records AS r
    SET head = true
    WHERE r.id = (
        SELECT n.id FROM events.outbox_records AS n
        WHERE n.state IN ('pending', 'leased') AND n.organization_id = p_organization_id
          AND n.aggregate_type = p_aggregate_type AND n.aggregate_id = p_aggregate_id
        ORDER BY n.append_sequence
        LIMIT 1
    );
    RETURN FOUND;
END
$$;

-- For the operator's release and republish of a dead letter: the aggregate may flow again.
-- The next claim looks for its head; the worker is woken.
CREATE FUNCTION events.reopen_aggregate(
    p_organization_id uuid, p_aggregate_type text, p_aggregate_id text
) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
    VALUES (p_organization_id, p_aggregate_type, p_aggregate_id)
    ON CONFLICT DO NOTHING;
    SELECT pg_catalog.pg_notify('events_work', '');
$$;

-- Registration (the owner only: migrations and `outboxctl db sql`) ----------------------------

CREATE FUNCTION events.register_module(p_code text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_code IS NULL OR p_code !~ '^[a-z][a-z0-9_]{0,39}$' THEN
        RAISE EXCEPTION 'p_code: a module code is a lowercase word of up to 40 characters'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO events.modules (code) VALUES (p_code) ON CONFLICT DO NOTHING;
END
$$;

CREATE FUNCTION events.register_event_type(
    p_code text, p_owner_module text, p_description text DEFAULT ''
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
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
$$;

CREATE FUNCTION events.publish_contract_version(p_event_type text, p_version integer)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

CREATE FUNCTION events.retire_event_type(p_code text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The role's module is the one its appends are for; the role gets USAGE on events and EXECUTE
-- on append_domain_event, nothing else. The owner and the worker cannot be producers.
CREATE FUNCTION events.map_producer_role(p_role name, p_module text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The producer ----------------------------------------------------------------------------------

-- Append a domain event and its outbox record, inside the caller's own transaction (SPEC §16).
-- The producer module is the calling role's (events.producer_roles), never a parameter.
-- SQLSTATEs: 42501 the role is no producer, or the type is another module's; OXE03 unknown
-- type or unpublished version; OXE02 retired type; OXE01 the idempotency key was used for
-- other content; 22023 a bad argument, named. A replay with the same content (type, version,
-- aggregate, payload, occurred-at) returns the first event's id, even once the type retired.
-- Appends to one aggregate take its lock until commit, so their order is their commit order;
-- a transaction appending to several aggregates should take them in one order.
CREATE FUNCTION events.append_domain_event(
    p_organization_id uuid,
    p_event_type text,
    p_contract_version integer,
    p_aggregate_type text,
    p_aggregate_id text,
    p_idempotency_key text,
    p_payload jsonb,
    p_occurred_at timestamptz,
    p_trace_context text DEFAULT NULL
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
        )
        SELECT event.id INTO v_id FROM event;

        IF v_id IS NOT NULL THEN
            IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
                INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
                VALUES (p_organization_id, p_aggregate_type, p_aggregate_id)
                ON CONFLICT DO NOTHING;
            END IF;
            PERFORM pg_catalog.pg_notify('events_work', '');
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
$$;

-- The worker ------------------------------------------------------------------------------------

-- Lease up to p_limit due heads (pending and due, or leased with an expired lease) for
-- p_lease_seconds, each with a fresh token. Organizations are served fairly: the
-- organizations with a head are visited from a random point (a loose index scan, one probe
-- each, at most 4 x p_limit of them), the due ones get an equal share of the batch first, and
-- the rest is filled oldest first. So when at most p_limit organizations have due events (and
-- at most 4 x p_limit have any), each of them is in the batch, whatever one of them has
-- queued; with more, each batch serves a random run of them. Vacancies noted since the last
-- claim are filled first, under their aggregate's lock (never waited for).
CREATE FUNCTION events.claim_outbox_batch(
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision
) RETURNS TABLE (
    record_id uuid,
    event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    append_sequence bigint,
    payload jsonb,
    occurred_at timestamptz,
    appended_at timestamptz,
    attempts integer,
    lease_token uuid,
    lease_expires_at timestamptz,
    trace_context text
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its worker' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 1000 THEN
        RAISE EXCEPTION 'p_limit: must be between 1 and 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_lease_expires_at := v_now + pg_catalog.make_interval(secs => p_lease_seconds);

    FOR v_vacancy IN
        SELECT v.organization_id, v.aggregate_type, v.aggregate_id
        FROM events.head_vacancies AS v
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

    -- The organizations with a due head, from a random one on, wrapping around once.
    v_org := v_start;
    LOOP
        EXIT WHEN pg_catalog.cardinality(v_orgs) >= p_limit OR v_examined >= 4 * p_limit;
        SELECT r.organization_id INTO v_next
        FROM events.outbox_records AS r
        WHERE r.head AND r.organization_id > v_org
        ORDER BY r.organization_id
        LIMIT 1;
        IF v_next IS NULL THEN
            EXIT WHEN v_wrapped;
            v_wrapped := true;
            v_org := '00000000-0000-0000-0000-000000000000';  -- below every real id
            CONTINUE;
        END IF;
        EXIT WHEN v_wrapped AND v_next > v_start;
        v_examined := v_examined + 1;
        -- The organization's soonest head, read off the index (one probe, however many).
        IF (
            SELECT r.claimable_at FROM events.outbox_records AS r
            WHERE r.head AND r.organization_id = v_next
            ORDER BY r.organization_id, r.claimable_at
            LIMIT 1
        ) <= v_now THEN
            v_orgs := v_orgs || v_next;
        END IF;
        v_org := v_next;
    END LOOP;

    -- No due organization among those visited: the fill below still finds any due head.
    v_share := (p_limit + pg_catalog.cardinality(v_orgs) - 1)
        / GREATEST(pg_catalog.cardinality(v_orgs), 1);

    -- An equal share per organization, by rank: every organization's oldest first.
    SELECT COALESCE(pg_catalog.array_agg(s.id), '{}') INTO v_ids
    FROM (
        SELECT t.id
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
    -- shares already taken are left out by id.
    IF pg_catalog.cardinality(v_ids) < p_limit THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
        FROM (
            SELECT r.id
            FROM events.outbox_records AS r
            WHERE r.head AND r.claimable_at <= v_now AND r.id <> ALL (v_ids)
            ORDER BY r.claimable_at, r.append_sequence
            LIMIT p_limit - pg_catalog.cardinality(v_ids)
            FOR UPDATE SKIP LOCKED
        ) AS f;
    END IF;

    RETURN QUERY
    WITH taken AS (
        UPDATE events.outbox_records AS r
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_lease_expires_at
        WHERE r.id = ANY (v_ids) AND r.head AND r.claimable_at <= v_now
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

-- Record the outcome of each claimed record, fenced by its lease token, live lease and attempt
-- number (the claimed attempt count + 1); one result per record, in order: 'recorded' or
-- 'lease_lost'. 'published' and 'dead_letter' are final; 'retry' and 'release' put the record
-- back until p_retry_at (in the future). 'release' does not count an attempt. A published
-- record gets its publication row (and, through that table's triggers, its deliveries) in
-- this transaction and hands the aggregate's head on; a dead letter parks its aggregate.
CREATE FUNCTION events.record_publication_attempt(
    p_record_ids uuid[],
    p_lease_tokens uuid[],
    p_attempts integer[],
    p_outcomes text[],
    p_failure_classes text[],
    p_codes text[],
    p_targets text[],
    p_retry_at timestamptz[]
) RETURNS TABLE (result text)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_count integer := pg_catalog.cardinality(p_record_ids);
    v_ok bigint[];
    v_published uuid[];
    v_aggregate record;
    v_reopened boolean := false;
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
        SELECT r.id FROM events.outbox_records AS r
        WHERE r.id = i.record_id AND r.state = 'leased' AND r.lease_token = i.lease_token
          AND r.lease_expires_at > v_now AND i.attempt = r.attempt_count + 1
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

    -- Hand each published head on: now, when no producer holds the aggregate; else at the
    -- next claim. In lock-key order, though a try never waits.
    FOR v_aggregate IN
        SELECT DISTINCT d.organization_id, d.aggregate_type, d.aggregate_id,
               events.aggregate_lock_key(d.organization_id, d.aggregate_type, d.aggregate_id)
                   AS lock_key
        FROM events.outbox_records AS d
        WHERE d.id = ANY (v_published)
        ORDER BY lock_key
    LOOP
        v_reopened := true;
        IF pg_catalog.pg_try_advisory_xact_lock(v_aggregate.lock_key) THEN
            PERFORM events.promote_head(
                v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id
            );
        ELSE
            INSERT INTO events.head_vacancies (organization_id, aggregate_type, aggregate_id)
            VALUES (
                v_aggregate.organization_id, v_aggregate.aggregate_type, v_aggregate.aggregate_id
            )
            ON CONFLICT DO NOTHING;
        END IF;
    END LOOP;
    IF v_reopened THEN
        PERFORM pg_catalog.pg_notify('events_work', '');
    END IF;

    RETURN QUERY
    SELECT CASE WHEN i.ord = ANY (v_ok) THEN 'recorded' ELSE 'lease_lost' END
    FROM pg_catalog.unnest(p_record_ids) WITH ORDINALITY AS i (record_id, ord)
    ORDER BY i.ord;
END
$$;

-- Triggers --------------------------------------------------------------------------------------

-- The seed's evt_domain_events_outbox_complete_trg: at commit, every new domain event has
-- exactly one outbox record.
CREATE FUNCTION events.require_one_outbox_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

CREATE CONSTRAINT TRIGGER domain_events_outbox_complete
    AFTER INSERT ON events.domain_events
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    EXECUTE FUNCTION events.require_one_outbox_record();

-- The seed's validate_publication_attempt_insert: an attempt is recorded under the record's
-- live lease and token, numbered as its next attempt.
CREATE FUNCTION events.validate_publication_attempt_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_record events.outbox_records%ROWTYPE;
BEGIN
    SELECT * INTO v_record FROM events.outbox_records AS r WHERE r.id = NEW.outbox_record_id;
    IF NOT FOUND OR v_record.state <> 'leased'
        OR v_record.lease_token IS DISTINCT FROM NEW.lease_token
        OR v_record.lease_expires_at <= pg_catalog.statement_timestamp()
    THEN
        RAISE EXCEPTION 'an attempt is recorded under the record''s live lease'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.attempt <> v_record.attempt_count + 1 THEN
        RAISE EXCEPTION 'attempt % of a record with % attempts: expected %',
            NEW.attempt, v_record.attempt_count, v_record.attempt_count + 1
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER publication_attempts_in_sequence
    BEFORE INSERT ON events.publication_attempts
    FOR EACH ROW
    EXECUTE FUNCTION events.validate_publication_attempt_insert();

-- A record put back must wait until a time still to come.
CREATE FUNCTION events.refuse_past_retry() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
        USING ERRCODE = 'invalid_parameter_value';
END
$$;

CREATE TRIGGER outbox_records_retry_in_future
    BEFORE UPDATE ON events.outbox_records
    FOR EACH ROW
    WHEN (
        OLD.state = 'leased' AND NEW.state = 'pending'
        AND NEW.available_at <= pg_catalog.statement_timestamp()
    )
    EXECUTE FUNCTION events.refuse_past_retry();

-- Grants ----------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    events.aggregate_lock_key(uuid, text, text),
    events.promote_head(uuid, text, text),
    events.reopen_aggregate(uuid, text, text),
    events.register_module(text),
    events.register_event_type(text, text, text),
    events.publish_contract_version(text, integer),
    events.retire_event_type(text),
    events.map_producer_role(name, text),
    events.append_domain_event(uuid, text, integer, text, text, text, jsonb, timestamptz, text),
    events.claim_outbox_batch(text, integer, double precision),
    events.record_publication_attempt(
        uuid[], uuid[], integer[], text[], text[], text[], text[], timestamptz[]
    ),
    events.require_one_outbox_record(),
    events.validate_publication_attempt_insert(),
    events.refuse_past_retry()
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    events.claim_outbox_batch(text, integer, double precision),
    events.record_publication_attempt(
        uuid[], uuid[], integer[], text[], text[], text[], text[], timestamptz[]
    )
TO outbox_worker;

RESET ROLE;
