-- The tenant business-event outbox (SPEC §16, the seed's OX-E1): schema events, its tables and
-- the rules a table can hold by itself. The functions that drive it come in the next files:
-- producers reach it only through events.append_domain_event, the worker only through
-- events.claim_outbox_batch and events.record_publication_attempt.
--
-- Unlike the security outbox (outbox.*, which never carries an organization: OB2), every row
-- here belongs to one organization. Nothing here references outbox.* or identity.*.

CREATE SCHEMA events AUTHORIZATION outbox_owner;

SET LOCAL ROLE outbox_owner;

-- Modules: who may produce events and own event types. A code is a lowercase word.
CREATE TABLE events.modules (
    code text PRIMARY KEY CONSTRAINT modules_code_shape CHECK (code ~ '^[a-z][a-z0-9_]{0,39}$'),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

-- A producer's database role names its module: append_domain_event takes the module from the
-- calling role, never from a parameter. One role, one module.
CREATE TABLE events.producer_roles (
    role_name name PRIMARY KEY,
    module_code text NOT NULL REFERENCES events.modules (code),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

-- Event types (`sales.order_placed`): the owner module is the only one that may append them.
-- A retired type takes no new events; what was appended is still published and delivered.
CREATE TABLE events.event_types (
    code text PRIMARY KEY CONSTRAINT event_types_code_shape CHECK (
        code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'
    ),
    owner_module_code text NOT NULL REFERENCES events.modules (code),
    description text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    retired_at timestamptz,
    -- The type's code starts with its owner's module: `identity.account_verified` is identity's.
    CONSTRAINT event_types_code_owned CHECK (
        pg_catalog.split_part(code, '.', 1) = owner_module_code
    )
);

-- The contract versions of a type that producers may append (a version is published once and
-- stays published; a consumer subscribes to a range of them).
CREATE TABLE events.event_type_versions (
    event_type_code text NOT NULL REFERENCES events.event_types (code),
    contract_version integer NOT NULL CONSTRAINT event_type_versions_positive CHECK (
        contract_version >= 1
    ),
    published_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    PRIMARY KEY (event_type_code, contract_version)
);

-- A business fact, appended in its producer's own transaction. `append_sequence` is the
-- append order; the events of one (organization, aggregate) are published in that order.
CREATE TABLE events.domain_events (
    id uuid PRIMARY KEY,
    append_sequence bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    organization_id uuid NOT NULL,
    event_type_code text NOT NULL,
    contract_version integer NOT NULL,
    producer_module_code text NOT NULL REFERENCES events.modules (code),
    aggregate_type text NOT NULL CONSTRAINT domain_events_aggregate_type_shape CHECK (
        aggregate_type ~ '^[a-z][a-z0-9_]{0,63}$'
    ),
    aggregate_id text NOT NULL CONSTRAINT domain_events_aggregate_id_shape CHECK (
        pg_catalog.length(aggregate_id) BETWEEN 1 AND 200
    ),
    idempotency_key text NOT NULL CONSTRAINT domain_events_idempotency_key_shape CHECK (
        pg_catalog.length(idempotency_key) BETWEEN 1 AND 200
    ),
    payload jsonb NOT NULL CONSTRAINT domain_events_payload_object CHECK (
        pg_catalog.jsonb_typeof(payload) = 'object'
    ),
    occurred_at timestamptz NOT NULL,
    appended_at timestamptz NOT NULL,
    -- The producer's W3C traceparent, when it was traced; never a secret.
    trace_context text CONSTRAINT domain_events_trace_context_shape CHECK (
        trace_context ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
    ),
    FOREIGN KEY (event_type_code, contract_version)
        REFERENCES events.event_type_versions (event_type_code, contract_version),
    CONSTRAINT domain_events_idempotent
        UNIQUE (organization_id, producer_module_code, idempotency_key)
);
CREATE INDEX domain_events_by_aggregate
    ON events.domain_events (organization_id, aggregate_type, aggregate_id, append_sequence);

-- The outbox record of an event: its publication's lease, attempts and outcome, the same
-- lifecycle as outbox.messages (SPEC §3): pending -> leased -> published | dead_lettered,
-- final states immutable. An event has exactly one record when it commits (a deferred
-- trigger checks it); an operator's republish of a dead letter adds a new record for the same
-- event (`republish_of`), never a second live one.
CREATE TABLE events.outbox_records (
    id uuid PRIMARY KEY,
    domain_event_id uuid NOT NULL REFERENCES events.domain_events (id) ON DELETE CASCADE,
    -- Copied from the event, so the claim reads one table: tenant, aggregate, append order.
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    append_sequence bigint NOT NULL,
    republish_of uuid REFERENCES events.outbox_records (id) ON DELETE SET NULL,
    state text NOT NULL DEFAULT 'pending' CONSTRAINT outbox_records_state_known CHECK (
        state IN ('pending', 'leased', 'published', 'dead_lettered')
    ),
    attempt_count integer NOT NULL DEFAULT 0 CONSTRAINT outbox_records_attempts_counted CHECK (
        attempt_count >= 0
    ),
    available_at timestamptz NOT NULL,
    lease_owner text,
    lease_token uuid,
    lease_expires_at timestamptz,
    claimable_at timestamptz GENERATED ALWAYS AS (
        CASE state WHEN 'pending' THEN available_at WHEN 'leased' THEN lease_expires_at END
    ) STORED,
    created_at timestamptz NOT NULL,
    published_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text CONSTRAINT outbox_records_reason_known CHECK (dead_letter_reason IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'unexpected_worker_error'
    )),
    CONSTRAINT outbox_records_lease_shape CHECK (
        (state = 'leased'
            AND lease_owner IS NOT NULL AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)
        OR (state <> 'leased'
            AND lease_owner IS NULL AND lease_token IS NULL AND lease_expires_at IS NULL)
    ),
    CONSTRAINT outbox_records_published_shape CHECK (
        (state = 'published') = (published_at IS NOT NULL)
    ),
    CONSTRAINT outbox_records_dead_letter_shape CHECK (
        (state = 'dead_lettered') = (dead_lettered_at IS NOT NULL)
        AND (state = 'dead_lettered') = (dead_letter_reason IS NOT NULL)
    )
);
-- At most one record of an event is not dead-lettered: a republish cannot run beside a live one.
CREATE UNIQUE INDEX outbox_records_one_live_per_event
    ON events.outbox_records (domain_event_id) WHERE state <> 'dead_lettered';
-- The claim: live records by when they may be taken.
CREATE INDEX outbox_records_claim_order ON events.outbox_records (claimable_at, append_sequence)
    WHERE state IN ('pending', 'leased');
-- Per-aggregate order: the oldest live record of an aggregate, found by the claim.
CREATE INDEX outbox_records_live_by_aggregate
    ON events.outbox_records (organization_id, aggregate_type, aggregate_id, append_sequence)
    WHERE state IN ('pending', 'leased');
-- Per-organization fairness and the backlog: live records of one organization in order.
CREATE INDEX outbox_records_live_by_organization
    ON events.outbox_records (organization_id, claimable_at, append_sequence)
    WHERE state IN ('pending', 'leased');
-- Retention and the operator's views read final records by age.
CREATE INDEX outbox_records_published_age ON events.outbox_records (published_at)
    WHERE state = 'published';
CREATE INDEX outbox_records_dead_letter_age ON events.outbox_records (dead_lettered_at, id)
    WHERE state = 'dead_lettered';
CREATE INDEX outbox_records_by_event ON events.outbox_records (domain_event_id);

CREATE FUNCTION events.refuse_final_update() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'outbox record % is % and final; it cannot change', OLD.id, OLD.state
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
REVOKE ALL ON FUNCTION events.refuse_final_update() FROM PUBLIC;

CREATE TRIGGER outbox_records_final_is_immutable
    BEFORE UPDATE ON events.outbox_records
    FOR EACH ROW
    WHEN (OLD.state IN ('published', 'dead_lettered'))
    EXECUTE FUNCTION events.refuse_final_update();

-- One row per recorded publication outcome (the seed's publication attempts), naming the
-- lease it was recorded under. A counted attempt must be the record's next one, under its
-- live lease: the trigger of the functions file checks it (the seed's
-- validate_publication_attempt_insert). `target` names the publication target that refused.
CREATE TABLE events.publication_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    outbox_record_id uuid NOT NULL REFERENCES events.outbox_records (id) ON DELETE CASCADE,
    attempt integer NOT NULL CONSTRAINT publication_attempts_numbered CHECK (attempt >= 1),
    counted boolean NOT NULL,
    outcome text NOT NULL CONSTRAINT publication_attempts_outcome_known CHECK (
        outcome IN ('published', 'retry', 'release', 'dead_letter')
    ),
    failure_class text CONSTRAINT publication_attempts_class_known CHECK (failure_class IN (
        'REJECTED', 'THROTTLED', 'UNAVAILABLE', 'INDETERMINATE', 'PROVIDER_SUSPENDED',
        'unexpected_worker_error'
    )),
    code text NOT NULL DEFAULT '' CONSTRAINT publication_attempts_code_short CHECK (
        pg_catalog.length(code) <= 100
    ),
    target text NOT NULL DEFAULT '' CONSTRAINT publication_attempts_target_short CHECK (
        pg_catalog.length(target) <= 100
    ),
    recorded_at timestamptz NOT NULL,
    retry_at timestamptz,
    lease_token uuid NOT NULL,
    CONSTRAINT publication_attempts_class_shape CHECK (
        (outcome = 'published') = (failure_class IS NULL)
    ),
    CONSTRAINT publication_attempts_retry_shape CHECK (
        (outcome IN ('retry', 'release')) = (retry_at IS NOT NULL)
    )
);
CREATE INDEX publication_attempts_by_record ON events.publication_attempts (outbox_record_id, id);

-- A dead-lettered record parks the later events of its aggregate until an operator resolves
-- it: `released` (the later events flow; this one stays dead) or `republished` (a new record
-- of the same event goes first). The dead letter's own record stays final and unchanged.
CREATE TABLE events.dead_letters (
    outbox_record_id uuid PRIMARY KEY REFERENCES events.outbox_records (id) ON DELETE CASCADE,
    domain_event_id uuid NOT NULL REFERENCES events.domain_events (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    aggregate_type text NOT NULL,
    aggregate_id text NOT NULL,
    append_sequence bigint NOT NULL,
    reason text NOT NULL,
    dead_lettered_at timestamptz NOT NULL,
    resolution text CONSTRAINT dead_letters_resolution_known CHECK (
        resolution IN ('released', 'republished')
    ),
    resolved_at timestamptz,
    resolved_by text CONSTRAINT dead_letters_resolver_short CHECK (
        pg_catalog.length(resolved_by) BETWEEN 1 AND 200
    ),
    republished_as uuid REFERENCES events.outbox_records (id) ON DELETE SET NULL,
    CONSTRAINT dead_letters_resolution_shape CHECK (
        (resolution IS NULL) = (resolved_at IS NULL)
        AND (resolution IS NULL) = (resolved_by IS NULL)
        AND (resolution = 'republished') = (republished_as IS NOT NULL)
    )
);
-- Parked aggregates: unresolved dead letters, looked up by the claim for each candidate.
CREATE INDEX dead_letters_parking
    ON events.dead_letters (organization_id, aggregate_type, aggregate_id, append_sequence)
    WHERE resolution IS NULL;
CREATE INDEX dead_letters_by_age ON events.dead_letters (dead_lettered_at, outbox_record_id);

-- The tenant-wide publication order: one row per published event, numbered when the
-- publication is recorded. A reader reads only rows whose transaction is older than every
-- running one (`publication_xid < pg_snapshot_xmin(pg_current_snapshot())`), so it never
-- skips a number that a slower transaction commits later (as Watermill's PostgreSQL adapter
-- reads its offsets).
CREATE TABLE events.domain_event_publications (
    publication_sequence bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    domain_event_id uuid NOT NULL UNIQUE REFERENCES events.domain_events (id) ON DELETE CASCADE,
    outbox_record_id uuid NOT NULL REFERENCES events.outbox_records (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    event_type_code text NOT NULL,
    contract_version integer NOT NULL,
    published_at timestamptz NOT NULL,
    publication_xid xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()
);
CREATE INDEX domain_event_publications_by_organization
    ON events.domain_event_publications (organization_id, publication_sequence);
CREATE INDEX domain_event_publications_by_time
    ON events.domain_event_publications (published_at);

RESET ROLE;

-- Nobody but the owner reads or writes these tables; the roles of each job get functions.
REVOKE ALL ON SCHEMA events FROM PUBLIC;
GRANT USAGE ON SCHEMA events TO outbox_worker;
