-- The events claim starts at a floor, as the codes' does (0047, 0052) (issue 31).
--
-- Under a held xmin horizon every version of every former head stays in the heads indexes,
-- below the live heads, and each scan of them that starts at an organization's lowest entry
-- walked them all: after 20,000 events published under a hold one claim read 61,547 heap
-- buffers of events.outbox_records, 744 clean (`python -m bench.events_hold_walks`,
-- docs/benchmarks.md). It cost the same whether it found one head or sixty-four, and every
-- new event woke each idle batch of the lane to make one, so at 100 events a second the
-- events' claims took the cores the codes needed.
--
-- - A head's claimable_at is never below the time it became the head: the promotion takes
--   the later of the record's available_at and its own statement's time (before, a record
--   that waited behind its predecessor kept its append time). Appends, retries and releases
--   already set a time at or after their own statement.
-- - So a head can be below the oldest live head's claimable_at only by a late commit (made
--   more than a second before its transaction committed), and the claim starts its scans
--   one second below that oldest: the floor, kept in an unlogged table, recomputed every
--   second by the events lane off the claim's path and stepped as the codes' is (a whole
--   walk when the last took under 10 ms, else after fifty times its cost, at most a minute
--   later). A claim recomputes a floor older than ten seconds itself. A late commit below
--   the floor is found by the next whole walk.
-- - The organizations come from a list of their own, not from the heads index: the probe
--   for "the next organization" walked its every dead head from the lowest. An append notes
--   an organization on neither the list nor the arrivals in a table of arrivals (no unique
--   key, so the first appends of a new organization never wait on one another), and each
--   claim first moves the arrivals onto the list: a new organization has its share from its
--   first claim. The fill, from the floor, is short, and now always runs when the shares
--   leave room: it also finds the heads of an organization whose records were written by
--   other means than an append, and the claim lists it. Every organization with a live
--   record or an open dead letter is listed here.

SET LOCAL ROLE outbox_owner;

-- The fill's and the refresh's index only: a predicate no other statement implies. With
-- `state IN ('pending', 'leased')` (0054), the claim index (every live record, the waiting
-- ones too) matched the fill as well, and the planner took it under a hold (1,704 entries
-- from the floor for one claim, where the heads index had 64).
DROP INDEX events.outbox_records_heads_due;
CREATE INDEX outbox_records_heads_due ON events.outbox_records (claimable_at, append_sequence)
    WHERE head AND state NOT IN ('published', 'dead_lettered');

CREATE UNLOGGED TABLE events.claim_floor (
    only_row boolean PRIMARY KEY DEFAULT true CONSTRAINT claim_floor_one_row CHECK (only_row),
    floor timestamptz NOT NULL,
    computed_at timestamptz NOT NULL,
    walk_due_at timestamptz
);

COMMENT ON TABLE events.claim_floor IS
    'Where the events claim starts: one second below the oldest live head (0055).';
COMMENT ON COLUMN events.claim_floor.walk_due_at IS
    'When the next refresh walks the heads index whole (NULL: the next one does).';

CREATE TABLE events.claim_organizations (
    organization_id uuid PRIMARY KEY,
    noted_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

COMMENT ON TABLE events.claim_organizations IS
    'The organizations whose heads the events claim shares out fairly (0055).';

CREATE TABLE events.organization_arrivals (
    organization_id uuid NOT NULL,
    noted_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

-- Not unique: two transactions appending for a new organization each note it, neither waits.
CREATE INDEX organization_arrivals_by_organization
    ON events.organization_arrivals (organization_id);

COMMENT ON TABLE events.organization_arrivals IS
    'Organizations an append found missing from claim_organizations; the claim lists them (0055).';

INSERT INTO events.claim_organizations (organization_id)
SELECT r.organization_id FROM events.outbox_records AS r WHERE r.state IN ('pending', 'leased')
UNION
SELECT d.organization_id FROM events.dead_letters AS d WHERE d.resolution IS NULL;

-- The events lane's, every second: compute the floor and store it (one caller at a time;
-- another gets the stored one).
CREATE FUNCTION events.refresh_claim_floor() RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_stored events.claim_floor%ROWTYPE;
    v_whole boolean;
    v_from timestamptz := '-infinity';
    v_started timestamptz;
    v_took interval;
    v_oldest timestamptz;
    v_floor timestamptz;
    v_due timestamptz;
BEGIN
    IF NOT pg_catalog.pg_try_advisory_xact_lock(pg_catalog.hashtext('events.claim_floor')) THEN
        SELECT f.floor INTO v_floor FROM events.claim_floor AS f WHERE f.only_row;
        RETURN COALESCE(v_floor, '-infinity');
    END IF;
    SELECT f.* INTO v_stored FROM events.claim_floor AS f WHERE f.only_row;
    v_whole := NOT FOUND OR v_stored.walk_due_at IS NULL OR v_stored.walk_due_at <= v_now;
    IF NOT v_whole THEN
        v_from := LEAST(v_stored.floor, v_now) - interval '5 seconds';
    END IF;
    v_started := pg_catalog.clock_timestamp();
    SELECT r.claimable_at INTO v_oldest
    FROM events.outbox_records AS r
    WHERE r.head AND r.state NOT IN ('published', 'dead_lettered') AND r.claimable_at >= v_from
    ORDER BY r.claimable_at, r.append_sequence
    LIMIT 1;
    v_floor := LEAST(COALESCE(v_oldest, v_now), v_now) - interval '1 second';
    v_took := pg_catalog.clock_timestamp() - v_started;
    v_due := CASE
        WHEN NOT v_whole THEN v_stored.walk_due_at
        WHEN v_took < interval '10 milliseconds' THEN NULL  -- cheap: the next one walks too
        ELSE v_now + LEAST(interval '1 minute', v_took * 50)
    END;
    INSERT INTO events.claim_floor AS f (only_row, floor, computed_at, walk_due_at)
    VALUES (true, v_floor, v_now, v_due)
    ON CONFLICT (only_row) DO UPDATE
    SET floor = excluded.floor, computed_at = excluded.computed_at,
        walk_due_at = excluded.walk_due_at;
    RETURN v_floor;
END
$$;

-- Granted to nobody: the floor a claim at p_now starts from, recomputed when no lane has
-- for ten seconds (an older worker, a drain, a test calling the claim alone).
CREATE FUNCTION events.current_claim_floor(p_now timestamptz) RETURNS timestamptz
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_stored events.claim_floor%ROWTYPE;
BEGIN
    SELECT f.* INTO v_stored FROM events.claim_floor AS f WHERE f.only_row;
    IF FOUND AND v_stored.computed_at > p_now - interval '10 seconds' THEN
        RETURN v_stored.floor;
    END IF;
    RETURN events.refresh_claim_floor();
END
$$;

REVOKE ALL ON FUNCTION events.current_claim_floor(timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION events.refresh_claim_floor() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION events.refresh_claim_floor() TO outbox_worker;

-- Every append of an organization the claim does not list yet notes it (see above).
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
            -- An organization not on the claim's list arrives (0055); never waits on another.
            IF NOT EXISTS (
                SELECT 1 FROM events.claim_organizations AS o
                WHERE o.organization_id = p_organization_id
            ) AND NOT EXISTS (
                SELECT 1 FROM events.organization_arrivals AS a
                WHERE a.organization_id = p_organization_id
            ) THEN
                INSERT INTO events.organization_arrivals (organization_id)
                VALUES (p_organization_id);
            END IF;
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
$_$;

-- A head is due no earlier than it became the head (see above).
CREATE OR REPLACE FUNCTION events.promote_head_after(
    p_organization_id uuid,
    p_aggregate_type text,
    p_aggregate_id text,
    p_after bigint
) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM events.dead_letters AS d
        WHERE d.resolution IS NULL AND d.organization_id = p_organization_id
          AND d.aggregate_type = p_aggregate_type AND d.aggregate_id = p_aggregate_id
    ) THEN
        RETURN false;
    END IF;
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

CREATE OR REPLACE FUNCTION events.claim_outbox_batch(p_owner text, p_limit integer, p_lease_seconds double precision) RETURNS TABLE(record_id uuid, event_id uuid, organization_id uuid, event_type text, contract_version integer, aggregate_type text, aggregate_id text, append_sequence bigint, payload jsonb, occurred_at timestamp with time zone, appended_at timestamp with time zone, attempts integer, lease_token uuid, lease_expires_at timestamp with time zone, trace_context text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := pg_catalog.statement_timestamp();
    v_lease_expires_at timestamptz;
    v_floor timestamptz;
    v_vacancy record;
    v_start uuid := pg_catalog.gen_random_uuid();
    v_candidates uuid[];
    v_orgs uuid[];
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

    -- The organizations that appended since the last claim join the list.
    WITH arrived AS (
        DELETE FROM events.organization_arrivals AS a
        USING (
            SELECT n.ctid FROM events.organization_arrivals AS n FOR UPDATE SKIP LOCKED
        ) AS n
        WHERE a.ctid = n.ctid
        RETURNING a.organization_id
    )
    INSERT INTO events.claim_organizations (organization_id)
    SELECT DISTINCT a.organization_id FROM arrived AS a
    ON CONFLICT DO NOTHING;

    -- After the vacancies: a head they made is at this statement's time, above any floor.
    v_floor := events.current_claim_floor(v_now);

    -- Up to 4 x p_limit organizations of the list, from a random one on, wrapping around.
    SELECT pg_catalog.array_agg(c.organization_id ORDER BY c.part, c.organization_id)
    INTO v_candidates
    FROM (
        (SELECT 1 AS part, o.organization_id FROM events.claim_organizations AS o
         WHERE o.organization_id >= v_start ORDER BY o.organization_id LIMIT 4 * p_limit)
        UNION ALL
        (SELECT 2, o.organization_id FROM events.claim_organizations AS o
         WHERE o.organization_id < v_start ORDER BY o.organization_id LIMIT 4 * p_limit)
    ) AS c;
    v_candidates := COALESCE(v_candidates[1:4 * p_limit], '{}');

    -- Of those, the first p_limit with a due head, each found from the floor.
    SELECT COALESCE(pg_catalog.array_agg(d.organization_id ORDER BY d.ord), '{}') INTO v_orgs
    FROM (
        SELECT c.organization_id, c.ord
        FROM pg_catalog.unnest(v_candidates) WITH ORDINALITY AS c (organization_id, ord)
        WHERE EXISTS (
            SELECT 1 FROM events.outbox_records AS r
            WHERE r.head AND r.organization_id = c.organization_id
              AND r.claimable_at >= v_floor AND r.claimable_at <= v_now
        )
        ORDER BY c.ord
        LIMIT p_limit
    ) AS d;

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
                WHERE r.head AND r.organization_id = o.id
                  AND r.claimable_at >= v_floor AND r.claimable_at <= v_now
                ORDER BY r.claimable_at, r.append_sequence
                LIMIT v_share
                FOR UPDATE SKIP LOCKED
            ) AS c
        ) AS t
        ORDER BY t.rank, t.claimable_at, t.append_sequence
        LIMIT p_limit
    ) AS s;

    -- The rest oldest first, from the floor, whatever the organization: what the shares left,
    -- the heads of organizations past the candidates, and those of one not listed (its
    -- records written by other means than an append): the claim lists it below. From the
    -- floor this walk is short, and it is no longer skipped when it could find nothing
    -- (0054). SKIP LOCKED does not skip this transaction's own locks, so the shares already
    -- taken are left out by id. `state NOT IN` names the index this scan alone may read.
    IF pg_catalog.cardinality(v_ids) < p_limit THEN
        SELECT v_ids || COALESCE(pg_catalog.array_agg(f.id), '{}') INTO v_ids
        FROM (
            SELECT r.id
            FROM events.outbox_records AS r
            WHERE r.head AND r.state NOT IN ('published', 'dead_lettered')
              AND r.claimable_at >= v_floor AND r.claimable_at <= v_now
              AND r.id <> ALL (v_ids)
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
        -- By primary key, whatever the statistics say: the re-check is a CASE, which implies
        -- no partial index's predicate.
        WHERE r.id = ANY (v_ids)
          AND CASE WHEN r.head THEN r.claimable_at <= v_now ELSE false END
        RETURNING r.*
    ), listed AS (
        INSERT INTO events.claim_organizations (organization_id)
        SELECT DISTINCT t.organization_id FROM taken AS t
        WHERE t.organization_id <> ALL (v_candidates)
        ON CONFLICT DO NOTHING
    )
    SELECT t.id, e.id, t.organization_id, e.event_type_code, e.contract_version,
           t.aggregate_type, t.aggregate_id, t.append_sequence, e.payload, e.occurred_at,
           e.appended_at, t.attempt_count, t.lease_token, t.lease_expires_at, e.trace_context
    FROM taken AS t
    JOIN events.domain_events AS e ON e.id = t.domain_event_id
    ORDER BY t.organization_id, t.append_sequence;
END
$$;

RESET ROLE;
