-- Consumers with exactly-once effects (SPEC §17, the seed's OX-E2).
--
-- A consumer belongs to a module and subscribes to event types over a range of contract
-- versions. When the worker records an event's publication (a row of
-- events.domain_event_publications), a trigger writes one delivery per subscribed consumer in
-- that same transaction. A consumer process claims its deliveries (lease + token, as the
-- outbox's records), runs its handler in a transaction of its own and records the completion
-- in that transaction: the handler's writes and the completion commit together or not at all.
--
-- Roles. A consumer runs with its module's role: the role events.producer_roles maps to the
-- consumer's owning module, made a member of the group role events_consumer, which alone may
-- execute the claim and the record. The functions check the module, so one module's role can
-- neither claim nor complete another module's deliveries (42501), and no other job role may
-- call them at all. The worker only reads the lag (its metrics); the database operator
-- (outbox_owner) registers, subscribes, replays, pauses and resumes.
--
-- Locks. Three things must not interleave: the fan-out of one aggregate's event beside the
-- completion of that aggregate's previous delivery (ordered consumers keep one live head per
-- aggregate), and a replay beside either. Fan-out and record take the consumer's advisory
-- lock shared and, for an ordered consumer, the aggregate's exclusively; a replay takes the
-- consumer's exclusively, so it sees every publication whose fan-out ran before it.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'events_consumer') THEN
        BEGIN
            CREATE ROLE events_consumer NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a migration of another database in the cluster created it meanwhile
        END;
    END IF;
END
$$;

SET LOCAL ROLE outbox_owner;

-- A consumer: a code named after its module (`identity.security_notices`), how many attempts a
-- delivery gets, and whether it keeps per-aggregate order. `replay_round` numbers the rounds
-- of deliveries: a replay starts a new one, so an event may be delivered again.
CREATE TABLE events.consumers (
    id uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
    code text NOT NULL UNIQUE CONSTRAINT consumers_code_shape CHECK (
        code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'
    ),
    owner_module_code text NOT NULL REFERENCES events.modules (code),
    active boolean NOT NULL DEFAULT true,
    max_attempts integer NOT NULL DEFAULT 5 CONSTRAINT consumers_max_attempts_range CHECK (
        max_attempts BETWEEN 1 AND 100
    ),
    ordered boolean NOT NULL DEFAULT true,
    replay_round integer NOT NULL DEFAULT 0 CONSTRAINT consumers_round_counted CHECK (
        replay_round >= 0
    ),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    CONSTRAINT consumers_code_owned CHECK (pg_catalog.split_part(code, '.', 1) = owner_module_code)
);

-- What a consumer receives: an event type and a range of its contract versions.
CREATE TABLE events.consumer_subscriptions (
    consumer_id uuid NOT NULL REFERENCES events.consumers (id),
    event_type_code text NOT NULL REFERENCES events.event_types (code),
    min_version integer NOT NULL CONSTRAINT consumer_subscriptions_min_positive CHECK (
        min_version >= 1
    ),
    max_version integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    PRIMARY KEY (consumer_id, event_type_code),
    CONSTRAINT consumer_subscriptions_range_not_empty CHECK (min_version <= max_version)
);
CREATE INDEX consumer_subscriptions_by_type ON events.consumer_subscriptions (event_type_code);

-- One event delivered to one consumer in one round: the outbox record's lifecycle with one more
-- state. An ordered consumer's delivery waits (`waiting`) behind the live delivery of its
-- aggregate and becomes `pending` when that one completes or is dead-lettered; only pending
-- and leased deliveries are claimable, so the claim reads heads only.
-- waiting -> pending -> leased -> completed | dead_lettered (or back to pending on a retry);
-- final states are immutable. The deliveries go with their event (retention).
CREATE TABLE events.consumer_deliveries (
    id uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid(),
    delivery_sequence bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    consumer_id uuid NOT NULL REFERENCES events.consumers (id),
    domain_event_id uuid NOT NULL REFERENCES events.domain_events (id) ON DELETE CASCADE,
    replay_round integer NOT NULL,
    -- Copied from the event and its publication, so the claim reads one table.
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    publication_sequence bigint NOT NULL,
    state text NOT NULL CONSTRAINT consumer_deliveries_state_known CHECK (
        state IN ('waiting', 'pending', 'leased', 'completed', 'dead_lettered')
    ),
    attempt_count integer NOT NULL DEFAULT 0 CONSTRAINT consumer_deliveries_attempts_counted
        CHECK (attempt_count >= 0),
    available_at timestamptz NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamptz,
    claimable_at timestamptz GENERATED ALWAYS AS (
        CASE state WHEN 'pending' THEN available_at WHEN 'leased' THEN lease_expires_at END
    ) STORED,
    created_at timestamptz NOT NULL,
    completed_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text CONSTRAINT consumer_deliveries_reason_known CHECK (
        dead_letter_reason IN ('rejected', 'attempts_exhausted')
    ),
    dead_letter_code text NOT NULL DEFAULT '' CONSTRAINT consumer_deliveries_code_short CHECK (
        pg_catalog.length(dead_letter_code) <= 100
    ),
    CONSTRAINT consumer_deliveries_once_per_round
        UNIQUE (organization_id, consumer_id, domain_event_id, replay_round),
    CONSTRAINT consumer_deliveries_lease_shape CHECK (
        (state = 'leased'
            AND lease_owner IS NOT NULL AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)
        OR (state <> 'leased'
            AND lease_owner IS NULL AND lease_token IS NULL AND lease_expires_at IS NULL)
    ),
    CONSTRAINT consumer_deliveries_completed_shape CHECK (
        (state = 'completed') = (completed_at IS NOT NULL)
    ),
    CONSTRAINT consumer_deliveries_dead_letter_shape CHECK (
        (state = 'dead_lettered') = (dead_lettered_at IS NOT NULL)
        AND (state = 'dead_lettered') = (dead_letter_reason IS NOT NULL)
    )
);
-- The claim: one consumer's claimable deliveries by when they may be taken, and per
-- organization for fairness.
CREATE INDEX consumer_deliveries_claim_order
    ON events.consumer_deliveries (consumer_id, claimable_at, delivery_sequence)
    WHERE state IN ('pending', 'leased');
CREATE INDEX consumer_deliveries_claim_by_organization
    ON events.consumer_deliveries (consumer_id, organization_id, claimable_at, delivery_sequence)
    WHERE state IN ('pending', 'leased');
-- An aggregate's live deliveries in order: the head, and the next one to promote.
CREATE INDEX consumer_deliveries_live_by_aggregate
    ON events.consumer_deliveries (
        consumer_id, organization_id, aggregate_type, aggregate_id, delivery_sequence
    )
    WHERE state IN ('waiting', 'pending', 'leased');
-- The lag: live deliveries by age.
CREATE INDEX consumer_deliveries_live_age ON events.consumer_deliveries (consumer_id, created_at)
    WHERE state IN ('waiting', 'pending', 'leased');
CREATE INDEX consumer_deliveries_dead_letters
    ON events.consumer_deliveries (consumer_id, delivery_sequence)
    WHERE state = 'dead_lettered';
-- Retention deletes events; their deliveries follow through this index.
CREATE INDEX consumer_deliveries_by_event ON events.consumer_deliveries (domain_event_id);

CREATE FUNCTION events.refuse_final_delivery_update() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'consumer delivery % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
REVOKE ALL ON FUNCTION events.refuse_final_delivery_update() FROM PUBLIC;

CREATE TRIGGER consumer_deliveries_final_is_immutable
    BEFORE UPDATE ON events.consumer_deliveries
    FOR EACH ROW
    WHEN (OLD.state IN ('completed', 'dead_lettered'))
    EXECUTE FUNCTION events.refuse_final_delivery_update();

-- One row per recorded processing attempt, naming the lease it was recorded under. Only a
-- class name or a short code is kept of a failure, never an exception's text.
CREATE TABLE events.consumer_processing_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id uuid NOT NULL REFERENCES events.consumer_deliveries (id) ON DELETE CASCADE,
    attempt integer NOT NULL CONSTRAINT consumer_processing_attempts_numbered CHECK (attempt >= 1),
    outcome text NOT NULL CONSTRAINT consumer_processing_attempts_outcome_known CHECK (
        outcome IN ('completed', 'retry', 'dead_letter')
    ),
    error_class text CONSTRAINT consumer_processing_attempts_class_shape CHECK (
        error_class ~ '^[A-Za-z_][A-Za-z0-9_.]{0,99}$'
    ),
    code text NOT NULL DEFAULT '' CONSTRAINT consumer_processing_attempts_code_short CHECK (
        pg_catalog.length(code) <= 100
    ),
    recorded_at timestamptz NOT NULL,
    retry_at timestamptz,
    lease_token uuid NOT NULL,
    CONSTRAINT consumer_processing_attempts_retry_shape CHECK (
        (outcome = 'retry') = (retry_at IS NOT NULL)
    )
);
CREATE INDEX consumer_processing_attempts_by_delivery
    ON events.consumer_processing_attempts (delivery_id, id);

-- A processing attempt is its delivery's next one, under the delivery's live lease; a row
-- written any other way (by hand, as the owner) is refused.
CREATE FUNCTION events.check_processing_attempt() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_delivery events.consumer_deliveries%ROWTYPE;
BEGIN
    SELECT * INTO v_delivery FROM events.consumer_deliveries AS d WHERE d.id = NEW.delivery_id;
    IF NOT FOUND
        OR v_delivery.state <> 'leased'
        OR v_delivery.lease_token IS DISTINCT FROM NEW.lease_token
        OR v_delivery.lease_expires_at <= pg_catalog.statement_timestamp()
        OR NEW.attempt <> v_delivery.attempt_count + 1
    THEN
        RAISE EXCEPTION 'a processing attempt must be its delivery''s next one, under its live lease'
            USING ERRCODE = 'integrity_constraint_violation',
                  SCHEMA = 'events', TABLE = 'consumer_processing_attempts',
                  CONSTRAINT = 'consumer_processing_attempts_in_sequence';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION events.check_processing_attempt() FROM PUBLIC;

CREATE TRIGGER consumer_processing_attempts_in_sequence
    BEFORE INSERT ON events.consumer_processing_attempts
    FOR EACH ROW
    EXECUTE FUNCTION events.check_processing_attempt();

-- Registration (the database operator) --------------------------------------------------------

-- Register a consumer, or change its attempts and ordering; idempotent. Its module is fixed.
CREATE FUNCTION events.register_consumer(
    p_code text,
    p_owner_module text,
    p_max_attempts integer DEFAULT 5,
    p_ordered boolean DEFAULT true
) RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
$$;
REVOKE ALL ON FUNCTION events.register_consumer(text, text, integer, boolean) FROM PUBLIC;

-- Subscribe a consumer to an event type's versions p_min_version..p_max_version; a second call
-- replaces the range. New publications only: events published before are reached by a replay.
CREATE FUNCTION events.subscribe(
    p_consumer text,
    p_event_type text,
    p_min_version integer,
    p_max_version integer
) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION events.subscribe(text, text, integer, integer) FROM PUBLIC;

-- The calling role's module, as append_domain_event takes it: SET ROLE's role, else the login.
-- A role no module maps is refused (42501).
CREATE FUNCTION events.calling_module() RETURNS text
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION events.calling_module() FROM PUBLIC;

-- The consumer named p_consumer, when the calling role's module owns it (else 42501).
CREATE FUNCTION events.own_consumer(p_consumer text) RETURNS events.consumers
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION events.own_consumer(text) FROM PUBLIC;

-- The advisory lock keys of a consumer and of one of its aggregates.
CREATE FUNCTION events.consumer_lock_key(p_consumer_id uuid) RETURNS bigint
LANGUAGE sql
IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.hashtextextended('events.consumer:' || p_consumer_id::text, 0)
$$;
REVOKE ALL ON FUNCTION events.consumer_lock_key(uuid) FROM PUBLIC;

CREATE FUNCTION events.consumer_aggregate_lock_key(
    p_consumer_id uuid, p_organization_id uuid, p_aggregate_type text, p_aggregate_id text
) RETURNS bigint
LANGUAGE sql
IMMUTABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.hashtextextended(
        'events.aggregate:' || p_consumer_id::text || '/' || p_organization_id::text || '/'
            || p_aggregate_type || '/' || p_aggregate_id,
        0
    )
$$;
REVOKE ALL ON FUNCTION events.consumer_aggregate_lock_key(uuid, uuid, text, text) FROM PUBLIC;

-- Fan-out: a published event becomes one delivery per consumer subscribed to its type and
-- version, in the transaction that records the publication. A paused consumer still gets its
-- deliveries (its lag grows; resuming loses nothing). An ordered consumer's delivery waits
-- when its aggregate already has a live one.
CREATE FUNCTION events.fan_out_publication() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_event events.domain_events%ROWTYPE;
    v_consumer record;
BEGIN
    FOR v_consumer IN
        SELECT c.id, c.ordered
        FROM events.consumer_subscriptions AS s
        JOIN events.consumers AS c ON c.id = s.consumer_id
        WHERE s.event_type_code = NEW.event_type_code
          AND NEW.contract_version BETWEEN s.min_version AND s.max_version
        ORDER BY c.id
    LOOP
        IF v_event.id IS NULL THEN
            SELECT * INTO STRICT v_event FROM events.domain_events AS e
            WHERE e.id = NEW.domain_event_id;
        END IF;
        PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer.id));
        IF v_consumer.ordered THEN
            PERFORM pg_catalog.pg_advisory_xact_lock(events.consumer_aggregate_lock_key(
                v_consumer.id, v_event.organization_id, v_event.aggregate_type,
                v_event.aggregate_id
            ));
        END IF;
        -- A new statement after the locks: it sees the round a replay just started and the
        -- completion that just freed the aggregate.
        INSERT INTO events.consumer_deliveries (
            consumer_id, domain_event_id, replay_round, organization_id, aggregate_type,
            aggregate_id, publication_sequence, state, available_at, created_at
        )
        SELECT c.id, v_event.id, c.replay_round, v_event.organization_id, v_event.aggregate_type,
               v_event.aggregate_id, NEW.publication_sequence,
               CASE WHEN c.ordered AND EXISTS (
                   SELECT 1 FROM events.consumer_deliveries AS d
                   WHERE d.consumer_id = c.id
                     AND d.organization_id = v_event.organization_id
                     AND d.aggregate_type = v_event.aggregate_type
                     AND d.aggregate_id = v_event.aggregate_id
                     AND d.state IN ('waiting', 'pending', 'leased')
               ) THEN 'waiting' ELSE 'pending' END,
               v_now, v_now
        FROM events.consumers AS c
        WHERE c.id = v_consumer.id
        ON CONFLICT ON CONSTRAINT consumer_deliveries_once_per_round DO NOTHING;
    END LOOP;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events.fan_out_publication() FROM PUBLIC;

CREATE TRIGGER domain_event_publications_fan_out
    AFTER INSERT ON events.domain_event_publications
    FOR EACH ROW
    EXECUTE FUNCTION events.fan_out_publication();

-- The consumer's job (events_consumer, checked against the module) ---------------------------

-- Lease up to p_limit claimable deliveries of one consumer: pending and due, or leased under
-- an expired lease. Organizations are served fairly: up to p_limit organizations with live
-- deliveries are found from a random point of the organization order (wrapping around), each
-- gets an equal share of the batch, and what they leave is filled in claim order. Every step
-- reads an index range as long as the batch, never the backlog. An ordered consumer's
-- claimable deliveries are its aggregates' heads only, so order holds by construction. A
-- paused consumer's claim returns nothing.
CREATE FUNCTION events.claim_consumer_deliveries(
    p_consumer text,
    p_owner text,
    p_limit integer,
    p_lease_seconds double precision
) RETURNS TABLE (
    delivery_id uuid,
    domain_event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    append_sequence bigint,
    publication_sequence bigint,
    replay_round integer,
    payload jsonb,
    occurred_at timestamptz,
    trace_context text,
    attempt_count integer,
    max_attempts integer,
    lease_token uuid,
    lease_expires_at timestamptz
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_consumer events.consumers%ROWTYPE;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_organizations uuid[];
    v_share integer;
    v_ids uuid[];
BEGIN
    IF p_owner IS NULL OR p_owner = '' THEN
        RAISE EXCEPTION 'p_owner: a claim names its process' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'p_limit: must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lease_seconds IS NULL OR NOT p_lease_seconds > 0 THEN
        RAISE EXCEPTION 'p_lease_seconds: must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_consumer := events.own_consumer(p_consumer);
    IF NOT v_consumer.active THEN
        RETURN;
    END IF;

    -- Organizations with claimable work, by a loose index scan: one probe each.
    WITH RECURSIVE after_start AS (
        (SELECT d.organization_id FROM events.consumer_deliveries AS d
         WHERE d.consumer_id = v_consumer.id AND d.state IN ('pending', 'leased')
           AND d.organization_id >= v_start
         ORDER BY d.organization_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                WHERE d.consumer_id = v_consumer.id AND d.state IN ('pending', 'leased')
                  AND d.organization_id > a.organization_id
                ORDER BY d.organization_id LIMIT 1)
        FROM after_start AS a WHERE a.organization_id IS NOT NULL
    )
    SELECT pg_catalog.array_agg(o.organization_id) INTO v_organizations
    FROM (SELECT a.organization_id FROM after_start AS a WHERE a.organization_id IS NOT NULL
          LIMIT p_limit) AS o;
    v_organizations := COALESCE(v_organizations, '{}');
    IF pg_catalog.cardinality(v_organizations) < p_limit THEN
        WITH RECURSIVE before_start AS (
            (SELECT d.organization_id FROM events.consumer_deliveries AS d
             WHERE d.consumer_id = v_consumer.id AND d.state IN ('pending', 'leased')
               AND d.organization_id < v_start
             ORDER BY d.organization_id LIMIT 1)
            UNION ALL
            SELECT (SELECT d.organization_id FROM events.consumer_deliveries AS d
                    WHERE d.consumer_id = v_consumer.id AND d.state IN ('pending', 'leased')
                      AND d.organization_id > b.organization_id AND d.organization_id < v_start
                    ORDER BY d.organization_id LIMIT 1)
            FROM before_start AS b WHERE b.organization_id IS NOT NULL
        )
        SELECT v_organizations || COALESCE(pg_catalog.array_agg(o.organization_id), '{}')
        INTO v_organizations
        FROM (SELECT b.organization_id FROM before_start AS b
              WHERE b.organization_id IS NOT NULL
              LIMIT p_limit - pg_catalog.cardinality(v_organizations)) AS o;
    END IF;
    IF pg_catalog.cardinality(v_organizations) = 0 THEN
        RETURN;
    END IF;

    -- An equal share for each organization, then what is left in claim order.
    v_share := p_limit / pg_catalog.cardinality(v_organizations);
    SELECT COALESCE(pg_catalog.array_agg(x.id), '{}') INTO v_ids
    FROM pg_catalog.unnest(v_organizations) AS o (organization_id)
    CROSS JOIN LATERAL (
        SELECT d.id
        FROM events.consumer_deliveries AS d
        WHERE d.consumer_id = v_consumer.id
          AND d.organization_id = o.organization_id
          AND d.state IN ('pending', 'leased')
          AND d.claimable_at <= v_now
        ORDER BY d.claimable_at, d.delivery_sequence
        LIMIT v_share
        FOR UPDATE SKIP LOCKED
    ) AS x;
    IF pg_catalog.cardinality(v_ids) < p_limit THEN
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

    RETURN QUERY
    WITH taken AS (
        UPDATE events.consumer_deliveries AS d
        SET state = 'leased',
            lease_owner = p_owner,
            lease_token = pg_catalog.gen_random_uuid(),
            lease_expires_at = v_now + pg_catalog.make_interval(secs => p_lease_seconds)
        WHERE d.id = ANY (v_ids)
          AND d.state IN ('pending', 'leased')
          AND d.claimable_at <= v_now
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
REVOKE ALL ON FUNCTION events.claim_consumer_deliveries(text, text, integer, double precision)
    FROM PUBLIC;

-- Record one processing attempt of a leased delivery: 'completed', 'retry' (at p_retry_at, in
-- the future) or 'dead_letter' (the handler rejected the event: p_code says why). A retry of
-- the consumer's last allowed attempt is recorded as a dead letter (`attempts_exhausted`).
-- Fenced by the lease token, the lease expiry and the attempt number (the claimed count + 1):
-- a record failing any answers 'lease_lost' and changes nothing. A paused consumer's record
-- raises OXE04, so the handler's transaction cannot commit its effect. A completion is called
-- inside the handler's own transaction. When an ordered consumer's delivery ends, the next
-- delivery of its aggregate becomes pending.
CREATE FUNCTION events.record_consumer_processing_attempt(
    p_delivery_id uuid,
    p_lease_token uuid,
    p_attempt integer,
    p_outcome text,
    p_error_class text DEFAULT NULL,
    p_code text DEFAULT '',
    p_retry_at timestamptz DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_module text := events.calling_module();
    v_delivery events.consumer_deliveries%ROWTYPE;
    v_consumer events.consumers%ROWTYPE;
    v_outcome text := p_outcome;
    v_state text;
BEGIN
    IF p_outcome IS NULL OR p_outcome NOT IN ('completed', 'retry', 'dead_letter') THEN
        RAISE EXCEPTION 'p_outcome: expected completed, retry or dead_letter, got %', p_outcome
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF (p_outcome = 'retry') <> (p_retry_at IS NOT NULL) THEN
        RAISE EXCEPTION 'p_retry_at: a retry names its time, no other outcome does'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_retry_at <= v_now THEN
        RAISE EXCEPTION 'p_retry_at: a retry time must be in the future'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_error_class IS NOT NULL AND p_error_class !~ '^[A-Za-z_][A-Za-z0-9_.]{0,99}$' THEN
        RAISE EXCEPTION 'p_error_class: expected a class name'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.length(COALESCE(p_code, '')) > 100 THEN
        RAISE EXCEPTION 'p_code: at most 100 characters' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO v_delivery FROM events.consumer_deliveries AS d WHERE d.id = p_delivery_id;
    IF NOT FOUND THEN
        RETURN 'lease_lost';  -- purged with its event, or never there
    END IF;
    SELECT * INTO v_consumer FROM events.consumers AS c WHERE c.id = v_delivery.consumer_id;
    IF v_consumer.owner_module_code <> v_module THEN
        RAISE EXCEPTION 'consumer % is module %''s, not %''s', v_consumer.code,
            v_consumer.owner_module_code, v_module
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT v_consumer.active THEN
        RAISE EXCEPTION 'consumer % is paused', v_consumer.code USING ERRCODE = 'OXE04';
    END IF;

    PERFORM pg_catalog.pg_advisory_xact_lock_shared(events.consumer_lock_key(v_consumer.id));
    IF v_consumer.ordered THEN
        PERFORM pg_catalog.pg_advisory_xact_lock(events.consumer_aggregate_lock_key(
            v_consumer.id, v_delivery.organization_id, v_delivery.aggregate_type,
            v_delivery.aggregate_id
        ));
    END IF;
    SELECT * INTO v_delivery FROM events.consumer_deliveries AS d
    WHERE d.id = p_delivery_id
    FOR UPDATE;
    IF v_delivery.state <> 'leased'
        OR v_delivery.lease_token IS DISTINCT FROM p_lease_token
        OR v_delivery.lease_expires_at <= v_now
        OR p_attempt IS DISTINCT FROM v_delivery.attempt_count + 1
    THEN
        RETURN 'lease_lost';
    END IF;

    IF p_outcome = 'retry' AND p_attempt >= v_consumer.max_attempts THEN
        v_outcome := 'dead_letter';
    END IF;
    INSERT INTO events.consumer_processing_attempts (
        delivery_id, attempt, outcome, error_class, code, recorded_at, retry_at, lease_token
    ) VALUES (
        p_delivery_id, p_attempt, v_outcome, p_error_class, COALESCE(p_code, ''), v_now,
        CASE WHEN v_outcome = 'retry' THEN p_retry_at END, p_lease_token
    );
    v_state := CASE v_outcome
        WHEN 'completed' THEN 'completed' WHEN 'retry' THEN 'pending' ELSE 'dead_lettered'
    END;
    UPDATE events.consumer_deliveries AS d
    SET state = v_state,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL,
        attempt_count = p_attempt,
        available_at = CASE WHEN v_outcome = 'retry' THEN p_retry_at ELSE d.available_at END,
        completed_at = CASE WHEN v_outcome = 'completed' THEN v_now END,
        dead_lettered_at = CASE WHEN v_outcome = 'dead_letter' THEN v_now END,
        dead_letter_reason = CASE
            WHEN v_outcome = 'dead_letter' AND p_outcome = 'retry' THEN 'attempts_exhausted'
            WHEN v_outcome = 'dead_letter' THEN 'rejected'
        END,
        dead_letter_code = CASE
            WHEN v_outcome = 'dead_letter' THEN COALESCE(NULLIF(p_code, ''), p_error_class, '')
            ELSE ''
        END
    WHERE d.id = p_delivery_id;

    IF v_consumer.ordered AND v_state IN ('completed', 'dead_lettered') THEN
        UPDATE events.consumer_deliveries AS d
        SET state = 'pending', available_at = v_now
        WHERE d.id = (
            SELECT n.id FROM events.consumer_deliveries AS n
            WHERE n.consumer_id = v_consumer.id
              AND n.organization_id = v_delivery.organization_id
              AND n.aggregate_type = v_delivery.aggregate_type
              AND n.aggregate_id = v_delivery.aggregate_id
              AND n.state IN ('waiting', 'pending', 'leased')
            ORDER BY n.delivery_sequence
            LIMIT 1
        ) AND d.state = 'waiting';
    END IF;
    RETURN 'recorded';
END
$$;
REVOKE ALL ON FUNCTION events.record_consumer_processing_attempt(
    uuid, uuid, integer, text, text, text, timestamptz
) FROM PUBLIC;

-- The database operator's controls -----------------------------------------------------------

-- Deliver again, in a new round, every event published from publication p_from_sequence on, or
-- at p_since or later (exactly one of them), that the consumer's subscriptions match today;
-- in publication order. Returns how many deliveries it wrote. It holds the consumer's lock
-- exclusively: every publication whose fan-out ran before has committed when it reads, and
-- every later one lands in the new round, so no event is skipped and none is doubled. (A
-- one-shot read, so it need not stop below pg_snapshot_xmin as a continuous reader must.)
CREATE FUNCTION events.replay_consumer(
    p_consumer text,
    p_from_sequence bigint DEFAULT NULL,
    p_since timestamptz DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
           CASE WHEN v_consumer.ordered AND (r.nth > 1 OR EXISTS (
               SELECT 1 FROM events.consumer_deliveries AS d
               WHERE d.consumer_id = v_consumer.id
                 AND d.organization_id = r.organization_id
                 AND d.aggregate_type = r.aggregate_type
                 AND d.aggregate_id = r.aggregate_id
                 AND d.state IN ('waiting', 'pending', 'leased')
           )) THEN 'waiting' ELSE 'pending' END,
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
REVOKE ALL ON FUNCTION events.replay_consumer(text, bigint, timestamptz) FROM PUBLIC;

-- Pause (claims return nothing, records raise OXE04; deliveries keep arriving) and resume.
-- Each returns whether it changed anything.
CREATE FUNCTION events.set_consumer_active(p_consumer text, p_active boolean) RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION events.set_consumer_active(text, boolean) FROM PUBLIC;

-- Every consumer with its subscriptions (`type:min-max`) and its lag: deliveries not yet
-- completed or dead-lettered, and the age of the oldest of them (NULL when none).
CREATE FUNCTION events.consumer_lag() RETURNS TABLE (
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
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.code, c.owner_module_code, c.active, c.ordered, c.max_attempts, c.replay_round,
           ARRAY(
               SELECT s.event_type_code || ':' || s.min_version || '-' || s.max_version
               FROM events.consumer_subscriptions AS s
               WHERE s.consumer_id = c.id
               ORDER BY s.event_type_code
           ),
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')),
           (SELECT pg_catalog.date_part('epoch',
                       pg_catalog.statement_timestamp() - pg_catalog.min(d.created_at))
            FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state IN ('waiting', 'pending', 'leased')),
           (SELECT pg_catalog.count(*) FROM events.consumer_deliveries AS d
            WHERE d.consumer_id = c.id AND d.state = 'dead_lettered')
    FROM events.consumers AS c
    ORDER BY c.code
$$;
REVOKE ALL ON FUNCTION events.consumer_lag() FROM PUBLIC;

-- One consumer's dead letters, newest first, a keyset page below p_before (a delivery sequence).
CREATE FUNCTION events.consumer_dead_letters(
    p_consumer text,
    p_before bigint DEFAULT NULL,
    p_limit integer DEFAULT 50
) RETURNS TABLE (
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
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
REVOKE ALL ON FUNCTION events.consumer_dead_letters(text, bigint, integer) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    events.claim_consumer_deliveries(text, text, integer, double precision),
    events.record_consumer_processing_attempt(uuid, uuid, integer, text, text, text, timestamptz)
TO events_consumer;
GRANT EXECUTE ON FUNCTION events.consumer_lag() TO outbox_worker;

RESET ROLE;

GRANT USAGE ON SCHEMA events TO events_consumer;
