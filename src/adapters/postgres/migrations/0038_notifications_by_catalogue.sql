-- A notification goes only where the catalogue and the recipient directory say.
--
-- notifications.take_snapshot trusted the destination, its mask, the template, the variables
-- and the recipient id it was given: a login holding only notifications_producer (the API
-- role is a member) sent "Your account is locked… https://evil.example/verify" to any address
-- with the `notification` template, skipped an opt-out with a made-up recipient id, recorded
-- another masked address, and stored variables named `api_token`. From here:
--
-- - each category names its template and the variable names it may carry (an allow-list,
--   kept equal to the code's catalogue by a test); values are short text without a link;
-- - the recipient must exist, and the destination must be one of its verified identifiers
--   on the channel (the reference identity module is the recipient directory); the mask is
--   computed from it, so the snapshot records what is sent;
-- - consent is then checked against that recipient, as before.

SET LOCAL ROLE outbox_owner;

ALTER TABLE notifications.categories
    ADD COLUMN template text CONSTRAINT categories_template_shape CHECK (
        template ~ '^[a-z0-9_]{1,64}$'
    ),
    ADD COLUMN variables text[] NOT NULL DEFAULT '{}' CONSTRAINT categories_variables_named CHECK (
        pg_catalog.array_to_string(variables, ',') ~ '^([a-z][a-z0-9_]{0,63}(,|$))*$'
    );
UPDATE notifications.categories
SET template = 'account_welcome', variables = ARRAY['first_name']
WHERE code = 'account.welcome';

CREATE OR REPLACE FUNCTION notifications.take_snapshot(
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
