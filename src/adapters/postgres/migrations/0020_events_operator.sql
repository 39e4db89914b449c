-- Operating the tenant events outbox (SPEC §8, §11, §16): retention, the operator's reads
-- (backlog per organization, dead letters, parked aggregates, one event with its records and
-- attempts), the two repairs of a dead letter (republish, release), their audit, the staff
-- versions the admin HTTP listener calls and the metrics counts.
--
-- Who may call what (the grants are at the end of this file), as for the security outbox
-- (0007_operator_functions.sql, 0009_roles_by_job.sql):
-- - the reads take p_actor: NULL means the database operator (a member of outbox_owner, the
--   outboxctl login), else an active staff member (outbox.require_operator);
-- - the repairs take the acting staff member (outbox.require_staff): the database operator
--   acts in a staff member's name (outboxctl ... --staff EMAIL);
-- - none of those is granted to a role; the API (identity_service) calls the events.staff_*
--   functions, which first check the staff member's own fresh elevation
--   (outbox.require_elevation), then the metrics counts; the worker gets the retention sweep.
-- Payloads never leave these functions (a payload may carry a tenant's personal data): an
-- event is shown by its metadata and its payload's size.

SET LOCAL ROLE outbox_owner;

-- The audit of every repair: who, when, why, of which dead letter, and the request's
-- idempotency key (a replay answers from it). No foreign key: the audit outlives retention.
CREATE TABLE events.operator_audit (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    action text NOT NULL CONSTRAINT operator_audit_action_known CHECK (
        action IN ('republish', 'release')
    ),
    actor_id uuid NOT NULL,
    -- The elevation that allowed a staff route's repair; NULL when the database operator acted.
    elevation_id uuid,
    dead_letter_id uuid NOT NULL,
    domain_event_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    new_record_id uuid,
    -- The operator's reason (a ticket, a sentence): never a payload, a secret or an address.
    reason text NOT NULL CONSTRAINT operator_audit_reason_length CHECK (
        pg_catalog.length(reason) BETWEEN 1 AND 500
    ),
    idempotency_key text NOT NULL CONSTRAINT operator_audit_key_length CHECK (
        pg_catalog.length(idempotency_key) BETWEEN 1 AND 255
    ),
    occurred_at timestamptz NOT NULL,
    CONSTRAINT operator_audit_copy_shape CHECK (
        (action = 'republish') = (new_record_id IS NOT NULL)
    )
);
-- A key names one request of one staff member.
CREATE UNIQUE INDEX operator_audit_idempotency
    ON events.operator_audit (actor_id, idempotency_key);
CREATE INDEX operator_audit_by_dead_letter ON events.operator_audit (dead_letter_id);

-- Retention (SPEC §8, OB11) --------------------------------------------------------------------

-- Delete up to p_limit events whose every outbox record is final and past its window
-- (published ones p_published after publication, dead-lettered ones p_dead_lettered after
-- dead-lettering) and none of whose dead letters is unresolved, oldest first; returns how
-- many. The delete cascades to the event's records, attempts, dead letters and publication.
-- An event with a live record, or whose dead letter still parks its aggregate, is never
-- deleted; a blocked event is skipped inside the scan, so it never holds the others back.
-- One sweeper at a time (the advisory lock, tried: a second sweeper returns 0 at once), as
-- outbox.purge_messages.
-- Consumers' deliveries (SPEC §17) reference the event with ON DELETE CASCADE: the migration
-- that adds them must also keep an event with an unfinished delivery out of `doomed` below.
CREATE FUNCTION events.purge_events(
    p_published interval,
    p_dead_lettered interval,
    p_limit integer
) RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

-- Backlog ----------------------------------------------------------------------------------------

-- Per organization with anything live or parked: pending and leased records, how long the
-- oldest due pending record has waited (NULL when none is due; a record parked behind an
-- unresolved dead letter does not count, the parked aggregates say it), unresolved dead
-- letters and the aggregates they park. Internal: backlog and backlog_metrics read it.
CREATE FUNCTION events.count_backlog()
RETURNS TABLE (
    organization_id uuid,
    pending bigint,
    leased bigint,
    oldest_due_age_seconds double precision,
    dead_letters bigint,
    parked_aggregates bigint
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The backlog of up to p_limit organizations, the largest first (live records, then dead
-- letters, then id), for a staff member or the database operator.
CREATE FUNCTION events.backlog(p_actor uuid, p_limit integer)
RETURNS TABLE (
    organization_id uuid,
    pending bigint,
    leased bigint,
    oldest_due_age_seconds double precision,
    dead_letters bigint,
    parked_aggregates bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The metrics counts, bounded in cardinality: the ten organizations with the largest backlog
-- by id, then one row 'other' that sums the rest (its age: the oldest of theirs), always
-- present. Counts and ages only; a scrape has no identity.
CREATE FUNCTION events.backlog_metrics()
RETURNS TABLE (
    organization text,
    pending bigint,
    leased bigint,
    oldest_due_age_seconds double precision,
    dead_letters bigint,
    parked_aggregates bigint
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Dead letters and parked aggregates --------------------------------------------------------------

-- One keyset page of dead letters, newest first (dead-lettered-at, then record id), of one
-- organization or all (p_organization_id NULL), unresolved only or all. p_after: the page of
-- older rows after that dead letter; p_before: the page of newer rows before it (still
-- returned newest first). The cursor must name a dead letter.
CREATE FUNCTION events.list_dead_letters(
    p_actor uuid,
    p_organization_id uuid,
    p_unresolved_only boolean,
    p_after uuid,
    p_before uuid,
    p_limit integer
)
RETURNS TABLE (
    dead_letter_id uuid,
    domain_event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    reason text,
    attempt_count integer,
    dead_lettered_at timestamptz,
    resolution text,
    resolved_at timestamptz,
    resolved_by text,
    republished_as uuid
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- One keyset page of parked aggregates (those an unresolved dead letter holds), newest first
-- as list_dead_letters: the dead event, since when, and how many live events wait behind it.
CREATE FUNCTION events.parked_aggregates(
    p_actor uuid, p_organization_id uuid, p_after uuid, p_before uuid, p_limit integer
)
RETURNS TABLE (
    organization_id uuid,
    aggregate_type text,
    aggregate_id text,
    dead_letter_id uuid,
    domain_event_id uuid,
    event_type text,
    reason text,
    parked_since timestamptz,
    waiting bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- One event and its story ----------------------------------------------------------------------

-- One event's metadata (never its payload: its size only) and its publication, if any. No row
-- for an unknown id.
CREATE FUNCTION events.event_detail(p_actor uuid, p_event_id uuid)
RETURNS TABLE (
    id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    producer_module text,
    aggregate_type text,
    aggregate_id text,
    append_sequence bigint,
    occurred_at timestamptz,
    appended_at timestamptz,
    payload_bytes integer,
    trace_context text,
    publication_sequence bigint,
    published_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The event's outbox records, oldest first (a republish adds one), each with what became of
-- its dead letter.
CREATE FUNCTION events.event_records(p_actor uuid, p_event_id uuid)
RETURNS TABLE (
    id uuid,
    state text,
    attempt_count integer,
    republish_of uuid,
    created_at timestamptz,
    available_at timestamptz,
    lease_owner text,
    lease_expires_at timestamptz,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text,
    resolution text,
    resolved_at timestamptz,
    resolved_by text,
    republished_as uuid
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The publication attempts of every record of the event, oldest first.
CREATE FUNCTION events.event_attempts(p_actor uuid, p_event_id uuid)
RETURNS TABLE (
    outbox_record_id uuid,
    attempt integer,
    counted boolean,
    outcome text,
    failure_class text,
    code text,
    target text,
    recorded_at timestamptz,
    retry_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Republish and release --------------------------------------------------------------------------

-- The idempotency gate of a repair (internal), as outbox.staff_request_replay: no row when the
-- request is new, else 'in_progress' (another transaction holds the key's lock), 'replayed'
-- with the first result (the same action on the same dead letter) or 'key_reused'.
CREATE FUNCTION events.operator_request_replay(
    p_actor uuid, p_key text, p_action text, p_dead_letter_id uuid
)
RETURNS TABLE (outcome text, new_record_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Resolve an unresolved dead letter (internal): check the request, lock the dead letter, and
-- answer the refusal, if any. Outcomes: no row (go on), or replayed, in_progress, key_reused,
-- not_found, already_released, already_republished.
CREATE FUNCTION events.open_repair(
    p_actor uuid, p_action text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text
)
RETURNS TABLE (outcome text, new_record_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Republish a dead letter (SPEC §16): a new outbox record of the same event (republish_of),
-- never a change of the dead one, which stays final. It keeps the event's append order, so
-- it goes before the aggregate's later events; the aggregate is reopened (its head is looked
-- for again by the next claim, events.reopen_aggregate of 0019) and the worker woken.
-- Audited; a replay of p_idempotency_key answers the first record and adds nothing.
-- Outcomes: republished, replayed, in_progress, key_reused, not_found, already_released,
-- already_republished.
CREATE FUNCTION events.republish_dead_letter(
    p_actor uuid,
    p_dead_letter_id uuid,
    p_new_record_id uuid,
    p_reason text,
    p_idempotency_key text
)
RETURNS TABLE (outcome text, new_record_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Release a parked aggregate (SPEC §16): its dead letter is resolved 'released' and stays
-- dead (never published); the aggregate's later events flow. Audited and idempotent as
-- republish. Outcomes: released, replayed, in_progress, key_reused, not_found,
-- already_released, already_republished.
CREATE FUNCTION events.release_dead_letter(
    p_actor uuid, p_dead_letter_id uuid, p_reason text, p_idempotency_key text
)
RETURNS TABLE (outcome text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- The staff versions: the staff member's own fresh elevation, checked here ---------------------
-- As 0009's outbox.staff_*: each takes the digest of the elevation token the staff member
-- presented and refuses (42501) unless it names an unexpired elevation of that very member,
-- then does what the function above does; a repair's audit row names the elevation.

CREATE FUNCTION events.staff_backlog(p_actor uuid, p_elevation text, p_limit integer)
RETURNS TABLE (
    organization_id uuid,
    pending bigint,
    leased bigint,
    oldest_due_age_seconds double precision,
    dead_letters bigint,
    parked_aggregates bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT b.* FROM events.backlog(p_actor, p_limit) AS b;
END
$$;

CREATE FUNCTION events.staff_list_dead_letters(
    p_actor uuid,
    p_elevation text,
    p_organization_id uuid,
    p_unresolved_only boolean,
    p_after uuid,
    p_before uuid,
    p_limit integer
)
RETURNS TABLE (
    dead_letter_id uuid,
    domain_event_id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    aggregate_type text,
    aggregate_id text,
    reason text,
    attempt_count integer,
    dead_lettered_at timestamptz,
    resolution text,
    resolved_at timestamptz,
    resolved_by text,
    republished_as uuid
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT d.* FROM events.list_dead_letters(
        p_actor, p_organization_id, p_unresolved_only, p_after, p_before, p_limit
    ) AS d;
END
$$;

CREATE FUNCTION events.staff_parked_aggregates(
    p_actor uuid,
    p_elevation text,
    p_organization_id uuid,
    p_after uuid,
    p_before uuid,
    p_limit integer
)
RETURNS TABLE (
    organization_id uuid,
    aggregate_type text,
    aggregate_id text,
    dead_letter_id uuid,
    domain_event_id uuid,
    event_type text,
    reason text,
    parked_since timestamptz,
    waiting bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY
    SELECT p.* FROM events.parked_aggregates(
        p_actor, p_organization_id, p_after, p_before, p_limit
    ) AS p;
END
$$;

CREATE FUNCTION events.staff_event_detail(p_actor uuid, p_elevation text, p_event_id uuid)
RETURNS TABLE (
    id uuid,
    organization_id uuid,
    event_type text,
    contract_version integer,
    producer_module text,
    aggregate_type text,
    aggregate_id text,
    append_sequence bigint,
    occurred_at timestamptz,
    appended_at timestamptz,
    payload_bytes integer,
    trace_context text,
    publication_sequence bigint,
    published_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT e.* FROM events.event_detail(p_actor, p_event_id) AS e;
END
$$;

CREATE FUNCTION events.staff_event_records(p_actor uuid, p_elevation text, p_event_id uuid)
RETURNS TABLE (
    id uuid,
    state text,
    attempt_count integer,
    republish_of uuid,
    created_at timestamptz,
    available_at timestamptz,
    lease_owner text,
    lease_expires_at timestamptz,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text,
    resolution text,
    resolved_at timestamptz,
    resolved_by text,
    republished_as uuid
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT r.* FROM events.event_records(p_actor, p_event_id) AS r;
END
$$;

CREATE FUNCTION events.staff_event_attempts(p_actor uuid, p_elevation text, p_event_id uuid)
RETURNS TABLE (
    outbox_record_id uuid,
    attempt integer,
    counted boolean,
    outcome text,
    failure_class text,
    code text,
    target text,
    recorded_at timestamptz,
    retry_at timestamptz
)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM outbox.require_elevation(p_actor, p_elevation);
    RETURN QUERY SELECT a.* FROM events.event_attempts(p_actor, p_event_id) AS a;
END
$$;

CREATE FUNCTION events.staff_republish_dead_letter(
    p_actor uuid,
    p_elevation text,
    p_dead_letter_id uuid,
    p_new_record_id uuid,
    p_reason text,
    p_idempotency_key text
)
RETURNS TABLE (outcome text, new_record_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

CREATE FUNCTION events.staff_release_dead_letter(
    p_actor uuid, p_elevation text, p_dead_letter_id uuid, p_reason text, p_idempotency_key text
)
RETURNS TABLE (outcome text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

-- Grants -----------------------------------------------------------------------------------------

REVOKE ALL ON FUNCTION
    events.purge_events(interval, interval, integer),
    events.count_backlog(),
    events.backlog(uuid, integer),
    events.backlog_metrics(),
    events.list_dead_letters(uuid, uuid, boolean, uuid, uuid, integer),
    events.parked_aggregates(uuid, uuid, uuid, uuid, integer),
    events.event_detail(uuid, uuid),
    events.event_records(uuid, uuid),
    events.event_attempts(uuid, uuid),
    events.operator_request_replay(uuid, text, text, uuid),
    events.open_repair(uuid, text, uuid, text, text),
    events.republish_dead_letter(uuid, uuid, uuid, text, text),
    events.release_dead_letter(uuid, uuid, text, text),
    events.staff_backlog(uuid, text, integer),
    events.staff_list_dead_letters(uuid, text, uuid, boolean, uuid, uuid, integer),
    events.staff_parked_aggregates(uuid, text, uuid, uuid, uuid, integer),
    events.staff_event_detail(uuid, text, uuid),
    events.staff_event_records(uuid, text, uuid),
    events.staff_event_attempts(uuid, text, uuid),
    events.staff_republish_dead_letter(uuid, text, uuid, uuid, text, text),
    events.staff_release_dead_letter(uuid, text, uuid, text, text)
FROM PUBLIC;

GRANT EXECUTE ON FUNCTION events.purge_events(interval, interval, integer) TO outbox_worker;

GRANT EXECUTE ON FUNCTION
    events.backlog_metrics(),
    events.staff_backlog(uuid, text, integer),
    events.staff_list_dead_letters(uuid, text, uuid, boolean, uuid, uuid, integer),
    events.staff_parked_aggregates(uuid, text, uuid, uuid, uuid, integer),
    events.staff_event_detail(uuid, text, uuid),
    events.staff_event_records(uuid, text, uuid),
    events.staff_event_attempts(uuid, text, uuid),
    events.staff_republish_dead_letter(uuid, text, uuid, uuid, text, text),
    events.staff_release_dead_letter(uuid, text, uuid, text, text)
TO identity_service;

RESET ROLE;

GRANT USAGE ON SCHEMA events TO identity_service;
