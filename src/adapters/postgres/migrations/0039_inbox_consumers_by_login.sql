-- An inbox consumer's name belongs to the login that first used it.
--
-- The inbox took the consumer name on trust: one service holding inbox_consumer could mark
-- another's events received (which then skipped them) and read its dead-lettered payloads.
-- Now the first login to call an inbox function with a name owns it (inbox.consumers); any
-- other login is refused with 42501 naming the consumer, on every inbox function. The
-- database operator (a member of outbox_owner) may read and repair any consumer without
-- owning it, and may hand a name to another login by updating its row.
--
-- The owner is the login (session_user), not the role it acts as: every service's pool
-- does SET ROLE inbox_consumer, so the role would not tell them apart.

SET LOCAL ROLE outbox_owner;

CREATE TABLE inbox.consumers (
    name text PRIMARY KEY CONSTRAINT consumers_name_shape CHECK (name ~ '^[A-Za-z0-9_-]{1,100}$'),
    owner_login name NOT NULL,
    claimed_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

-- Granted to nobody: the inbox functions below call it first.
CREATE FUNCTION inbox.own_consumer(p_consumer text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
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
$$;

ALTER FUNCTION inbox.record_receipt(text, uuid, bigint) RENAME TO record_receipt_unchecked;
ALTER FUNCTION inbox.record_dead_letter(text, uuid, text, jsonb, bytea, integer, text)
    RENAME TO record_dead_letter_unchecked;
ALTER FUNCTION inbox.list_received(text, integer) RENAME TO list_received_unchecked;
ALTER FUNCTION inbox.list_dead_letters(text, integer) RENAME TO list_dead_letters_unchecked;
ALTER FUNCTION inbox.request_replay(text, uuid) RENAME TO request_replay_unchecked;
ALTER FUNCTION inbox.take_replay(text) RENAME TO take_replay_unchecked;
REVOKE ALL ON FUNCTION
    inbox.record_receipt_unchecked(text, uuid, bigint),
    inbox.record_dead_letter_unchecked(text, uuid, text, jsonb, bytea, integer, text),
    inbox.list_received_unchecked(text, integer),
    inbox.list_dead_letters_unchecked(text, integer),
    inbox.request_replay_unchecked(text, uuid),
    inbox.take_replay_unchecked(text)
FROM inbox_consumer;

CREATE OR REPLACE FUNCTION inbox.record_receipt(p_consumer text, p_event_id uuid, p_stream_sequence bigint)
RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN inbox.record_receipt_unchecked(p_consumer, p_event_id, p_stream_sequence);
END
$$;

CREATE OR REPLACE FUNCTION inbox.record_dead_letter(
    p_consumer text, p_event_id uuid, p_subject text, p_headers jsonb, p_payload bytea,
    p_attempts integer, p_error_class text
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    PERFORM inbox.record_dead_letter_unchecked(
        p_consumer, p_event_id, p_subject, p_headers, p_payload, p_attempts, p_error_class
    );
END
$$;

CREATE OR REPLACE FUNCTION inbox.list_received(p_consumer text, p_limit integer)
RETURNS TABLE (event_id uuid, stream_sequence bigint, received_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.list_received_unchecked(p_consumer, p_limit);
END
$$;

CREATE OR REPLACE FUNCTION inbox.list_dead_letters(p_consumer text, p_limit integer)
RETURNS TABLE (
    event_id uuid, subject text, headers jsonb, payload bytea, attempts integer,
    error_class text, dead_lettered_at timestamptz, replay_requested_at timestamptz
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.list_dead_letters_unchecked(p_consumer, p_limit);
END
$$;

CREATE OR REPLACE FUNCTION inbox.request_replay(p_consumer text, p_event_id uuid) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN inbox.request_replay_unchecked(p_consumer, p_event_id);
END
$$;

CREATE OR REPLACE FUNCTION inbox.take_replay(p_consumer text)
RETURNS TABLE (
    event_id uuid, subject text, headers jsonb, payload bytea, attempts integer,
    error_class text, dead_lettered_at timestamptz
)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM inbox.own_consumer(p_consumer);
    RETURN QUERY SELECT * FROM inbox.take_replay_unchecked(p_consumer);
END
$$;

REVOKE ALL ON FUNCTION
    inbox.own_consumer(text),
    inbox.record_receipt(text, uuid, bigint),
    inbox.record_dead_letter(text, uuid, text, jsonb, bytea, integer, text),
    inbox.list_received(text, integer),
    inbox.list_dead_letters(text, integer),
    inbox.request_replay(text, uuid),
    inbox.take_replay(text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    inbox.record_receipt(text, uuid, bigint),
    inbox.record_dead_letter(text, uuid, text, jsonb, bytea, integer, text),
    inbox.list_received(text, integer),
    inbox.list_dead_letters(text, integer),
    inbox.request_replay(text, uuid),
    inbox.take_replay(text)
TO inbox_consumer;
