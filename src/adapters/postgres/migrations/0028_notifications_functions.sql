-- The notifications catalogue's functions (SPEC §19; tables in 0027): take a snapshot (and
-- enqueue its delivery in the same transaction), change consent, read an intent's snapshots.
-- Every one is for notifications_producer only; the identity module's two locale functions
-- for identity_service only. The consumer identity.account_notifications turns each
-- identity.account_verified event into an `account.welcome` intent.

SET LOCAL ROLE outbox_owner;

-- Record the intent (once per key and recipient) and its snapshot on one channel (once per
-- intent and channel). Consent is applied here, against the committed opt-outs: an opt-out
-- of the category on the channel records `suppressed_by_consent` and enqueues nothing;
-- otherwise the outbox message `p_snapshot_id` of purpose `notification` is enqueued through
-- outbox.enqueue_message, in the caller's transaction. A snapshot taken before is answered
-- unchanged (created = false) and nothing is enqueued again.
CREATE FUNCTION notifications.take_snapshot(
    p_intent_id uuid,
    p_intent_key text,
    p_category text,
    p_recipient_id uuid,
    p_source text,
    p_snapshot_id uuid,
    p_channel text,
    p_destination text,
    p_masked_destination text,
    p_template text,
    p_locale text,
    p_variables jsonb
) RETURNS TABLE (snapshot_id uuid, intent_id uuid, decision text, created boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_channels text[];
    v_intent_id uuid;
    v_intent_category text;
    v_decision text;
    v_inserted uuid;
BEGIN
    SELECT c.channels INTO v_channels FROM notifications.categories AS c WHERE c.code = p_category;
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
        COALESCE(p_variables, '{}'), v_decision
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
            p_params => COALESCE(p_variables, '{}'),
            p_locale => p_locale
        );
    END IF;
    RETURN QUERY SELECT p_snapshot_id, v_intent_id, v_decision, true;
END
$$;

-- Consent. A NULL or empty channel list means every channel of the category.
CREATE FUNCTION notifications.opt_out(p_recipient_id uuid, p_category text, p_channels text[])
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

CREATE FUNCTION notifications.opt_in(p_recipient_id uuid, p_category text, p_channels text[])
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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

CREATE FUNCTION notifications.opt_outs(p_recipient_id uuid)
RETURNS TABLE (category_code text, channel text, opted_out_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT o.category_code, o.channel, o.opted_out_at
    FROM notifications.consent_opt_outs AS o
    WHERE o.recipient_id = p_recipient_id
    ORDER BY o.category_code, o.channel
$$;

-- An intent's snapshots, found by the intent's id, a snapshot's or its outbox message's (the
-- same), each with its message's state (NULL when suppressed, or once the queue purged it).
CREATE FUNCTION notifications.intent_snapshots(p_id uuid)
RETURNS TABLE (
    snapshot_id uuid,
    intent_id uuid,
    intent_key text,
    category_code text,
    recipient_id uuid,
    source text,
    channel text,
    masked_destination text,
    template text,
    locale text,
    variables jsonb,
    decision text,
    created_at timestamptz,
    message_state text
)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
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

REVOKE ALL ON FUNCTION
    notifications.take_snapshot(uuid, text, text, uuid, text, uuid, text, text, text, text,
                                text, jsonb),
    notifications.opt_out(uuid, text, text[]),
    notifications.opt_in(uuid, text, text[]),
    notifications.opt_outs(uuid),
    notifications.intent_snapshots(uuid)
FROM PUBLIC;
GRANT USAGE ON SCHEMA notifications TO notifications_producer;
GRANT EXECUTE ON FUNCTION
    notifications.take_snapshot(uuid, text, text, uuid, text, uuid, text, text, text, text,
                                text, jsonb),
    notifications.opt_out(uuid, text, text[]),
    notifications.opt_in(uuid, text, text[]),
    notifications.opt_outs(uuid),
    notifications.intent_snapshots(uuid)
TO notifications_producer;

-- The identity module's recipient directory: an account's preferred locale (NULL when none
-- is set or there is no such account), and setting it (false when there is no such account).
CREATE FUNCTION identity.preferred_locale(p_identity_id uuid) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT i.preferred_locale FROM identity.identities AS i WHERE i.id = p_identity_id
$$;

CREATE FUNCTION identity.set_preferred_locale(p_identity_id uuid, p_locale text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_locale !~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$' THEN
        RAISE EXCEPTION 'p_locale: expected a language tag such as es or pt-BR'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE identity.identities AS i SET preferred_locale = p_locale WHERE i.id = p_identity_id;
    RETURN FOUND;
END
$$;

REVOKE ALL ON FUNCTION
    identity.preferred_locale(uuid),
    identity.set_preferred_locale(uuid, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    identity.preferred_locale(uuid),
    identity.set_preferred_locale(uuid, text)
TO identity_service;

-- The identity module's notifications consumer (ordered, like its security notices).
SELECT events.register_consumer('identity.account_notifications', 'identity');
SELECT events.subscribe('identity.account_notifications', 'identity.account_verified', 1, 1);

RESET ROLE;
