-- The inbox of a service that consumes the broker relay's stream (SPEC §18).
--
-- A service reading tenant events from NATS JetStream applies this schema to its own
-- database. Its handler runs in the service's transaction together with record_receipt, an
-- insert of the event id into inbox.received (unique per consumer): a second delivery of the
-- same event (a redelivery after a consumer crash, or a republish that came after the
-- stream's duplicate window) finds the receipt and has no second effect. An event that fails
-- its handler up to the attempt cap is kept in inbox.dead_letters, payload and headers in the
-- service's own database, the error as a class name only; request_replay marks one for the
-- running inbox, which handles it again (and records its receipt) in one transaction.
--
-- Roles. inbox_consumer (NOLOGIN) is the one role that may call these functions; a service
-- grants it to the login its inbox runs as. The tables are reached only through them.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'inbox_consumer') THEN
        BEGIN
            CREATE ROLE inbox_consumer NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a migration of another database in the cluster created it meanwhile
        END;
    END IF;
END
$$;

CREATE SCHEMA inbox AUTHORIZATION outbox_owner;

SET LOCAL ROLE outbox_owner;

GRANT USAGE ON SCHEMA inbox TO inbox_consumer;

CREATE TABLE inbox.received (
    consumer text NOT NULL CONSTRAINT received_consumer_shape CHECK (
        consumer ~ '^[A-Za-z0-9_-]{1,100}$'
    ),
    event_id uuid NOT NULL,
    stream_sequence bigint NOT NULL,
    received_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    PRIMARY KEY (consumer, event_id)
);

CREATE TABLE inbox.dead_letters (
    consumer text NOT NULL,
    event_id uuid NOT NULL,
    subject text NOT NULL CONSTRAINT dead_letters_subject_short CHECK (
        pg_catalog.length(subject) <= 1000
    ),
    headers jsonb NOT NULL,
    payload bytea NOT NULL,
    attempts integer NOT NULL CONSTRAINT dead_letters_attempts_positive CHECK (attempts > 0),
    error_class text NOT NULL CONSTRAINT dead_letters_error_class_shape CHECK (
        error_class ~ '^[A-Za-z_][A-Za-z0-9_.]{0,199}$'
    ),
    dead_lettered_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    replay_requested_at timestamptz,
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX dead_letters_replays ON inbox.dead_letters (consumer, replay_requested_at)
    WHERE replay_requested_at IS NOT NULL;

-- Inside the handler's transaction: true when this is the event's first receipt (run the
-- handler), false when it was received before (do nothing; the caller rolls back and acks).
CREATE FUNCTION inbox.record_receipt(
    p_consumer text, p_event_id uuid, p_stream_sequence bigint
) RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH inserted AS (
        INSERT INTO inbox.received (consumer, event_id, stream_sequence)
        VALUES (p_consumer, p_event_id, p_stream_sequence)
        ON CONFLICT (consumer, event_id) DO NOTHING
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM inserted)
$$;

-- An event past its attempt cap (or one that failed its replay): kept, or updated.
CREATE FUNCTION inbox.record_dead_letter(
    p_consumer text,
    p_event_id uuid,
    p_subject text,
    p_headers jsonb,
    p_payload bytea,
    p_attempts integer,
    p_error_class text
) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

CREATE FUNCTION inbox.list_received(p_consumer text, p_limit integer)
RETURNS TABLE (event_id uuid, stream_sequence bigint, received_at timestamptz)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.event_id, r.stream_sequence, r.received_at
    FROM inbox.received AS r
    WHERE r.consumer = p_consumer
    ORDER BY r.received_at DESC, r.event_id
    LIMIT LEAST(GREATEST(p_limit, 1), 1000)
$$;

CREATE FUNCTION inbox.list_dead_letters(p_consumer text, p_limit integer)
RETURNS TABLE (
    event_id uuid,
    subject text,
    headers jsonb,
    payload bytea,
    attempts integer,
    error_class text,
    dead_lettered_at timestamptz,
    replay_requested_at timestamptz
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT d.event_id, d.subject, d.headers, d.payload, d.attempts, d.error_class,
           d.dead_lettered_at, d.replay_requested_at
    FROM inbox.dead_letters AS d
    WHERE d.consumer = p_consumer
    ORDER BY d.dead_lettered_at, d.event_id
    LIMIT LEAST(GREATEST(p_limit, 1), 1000)
$$;

-- Mark a dead letter for the running inbox to handle again; false when there is none.
CREATE FUNCTION inbox.request_replay(p_consumer text, p_event_id uuid) RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH marked AS (
        UPDATE inbox.dead_letters AS d
        SET replay_requested_at = pg_catalog.statement_timestamp()
        WHERE d.consumer = p_consumer AND d.event_id = p_event_id
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM marked)
$$;

-- Inside the replay's transaction: take one requested dead letter (locked, skipped by other
-- inbox processes) and remove it; a failing handler rolls the removal back.
CREATE FUNCTION inbox.take_replay(p_consumer text)
RETURNS TABLE (
    event_id uuid,
    subject text,
    headers jsonb,
    payload bytea,
    attempts integer,
    error_class text,
    dead_lettered_at timestamptz
)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

REVOKE ALL ON FUNCTION inbox.record_receipt(text, uuid, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.record_dead_letter(text, uuid, text, jsonb, bytea, integer, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.list_received(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.list_dead_letters(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.request_replay(text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.take_replay(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inbox.record_receipt(text, uuid, bigint) TO inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.record_dead_letter(text, uuid, text, jsonb, bytea, integer, text)
    TO inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.list_received(text, integer) TO inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.list_dead_letters(text, integer) TO inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.request_replay(text, uuid) TO inbox_consumer;
GRANT EXECUTE ON FUNCTION inbox.take_replay(text) TO inbox_consumer;
