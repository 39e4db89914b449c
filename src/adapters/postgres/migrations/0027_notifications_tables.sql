-- The notifications catalogue (SPEC §19, the seed's OX-E3): schema notifications, its
-- categories, intents, frozen snapshots and consent opt-outs. An intent (a domain event
-- through a consumer, or a staff request) asks for one notification of a category to one
-- recipient; its snapshot decides, once per channel, the destination (kept masked here), the
-- template, the locale and the consent policy, and a snapshot that sends is delivered by an
-- outbox message of purpose `notification` whose id is the snapshot's (0028), so the delivery
-- inherits the queue's lease, fencing and sequence-checked attempts. Snapshots and intents
-- never change once written (a trigger refuses every UPDATE).
--
-- notifications_producer is the role that records intents and changes consent; the API role
-- (identity_service), which runs the identity module's consumers, is a member of it.
--
-- The identity module keeps each account's preferred locale, which its recipient directory
-- answers with the verified identifiers.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'notifications_producer') THEN
        BEGIN
            CREATE ROLE notifications_producer NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a migration of another database in the cluster created it meanwhile
        END;
    END IF;
END
$$;

GRANT notifications_producer TO identity_service;

CREATE SCHEMA notifications AUTHORIZATION outbox_owner;

SET LOCAL ROLE outbox_owner;

-- The catalogue's categories and the channels each may use; the templates and locales are the
-- code's (domain/notifications/catalogue.py), which a test keeps equal to these rows.
CREATE TABLE notifications.categories (
    code text PRIMARY KEY CONSTRAINT categories_code_shape CHECK (
        code ~ '^[a-z][a-z0-9_]{0,39}\.[a-z][a-z0-9_]{0,79}$'
    ),
    channels text[] NOT NULL CONSTRAINT categories_channels_known CHECK (
        pg_catalog.cardinality(channels) > 0
        AND channels <@ ARRAY['email', 'sms', 'whatsapp']::text[]
    ),
    description text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);

INSERT INTO notifications.categories (code, channels, description) VALUES
    ('account.welcome', ARRAY['email', 'sms'], 'A welcome to a newly verified account.');

-- One intent per (key, recipient): the key names what caused it, so asking again is a no-op.
CREATE TABLE notifications.intents (
    id uuid PRIMARY KEY,
    intent_key text NOT NULL CONSTRAINT intents_key_shape CHECK (
        intent_key ~ '^[A-Za-z0-9._:-]{1,200}$'
    ),
    category_code text NOT NULL REFERENCES notifications.categories (code),
    recipient_id uuid NOT NULL,
    source text NOT NULL CONSTRAINT intents_source_known CHECK (source IN ('event', 'staff')),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    CONSTRAINT intents_once_per_recipient UNIQUE (intent_key, recipient_id)
);
CREATE INDEX intents_by_recipient ON notifications.intents (recipient_id, created_at);

-- One snapshot per (intent, channel). `decision` is the consent policy applied when it was
-- taken; a snapshot that sends is delivered by outbox.messages row `id`. The destination is
-- kept masked: the full one is on the outbox message only, which the queue's retention purges.
CREATE TABLE notifications.snapshots (
    id uuid PRIMARY KEY,
    intent_id uuid NOT NULL REFERENCES notifications.intents (id),
    channel text NOT NULL CONSTRAINT snapshots_channel_known CHECK (
        channel IN ('email', 'sms', 'whatsapp')
    ),
    masked_destination text NOT NULL CONSTRAINT snapshots_destination_masked CHECK (
        masked_destination LIKE '%***%' AND pg_catalog.length(masked_destination) <= 260
    ),
    template text NOT NULL CONSTRAINT snapshots_template_shape CHECK (
        template ~ '^[a-z0-9_]{1,64}$'
    ),
    locale text NOT NULL CONSTRAINT snapshots_locale_shape CHECK (
        locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$'
    ),
    variables jsonb NOT NULL DEFAULT '{}' CONSTRAINT snapshots_variables_no_secret CHECK (
        pg_catalog.jsonb_typeof(variables) = 'object'
        AND NOT variables ?| ARRAY['code', 'link', 'token', 'password', 'secret']
    ),
    decision text NOT NULL CONSTRAINT snapshots_decision_known CHECK (
        decision IN ('send', 'suppressed_by_consent')
    ),
    created_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    CONSTRAINT snapshots_once_per_channel UNIQUE (intent_id, channel)
);

CREATE FUNCTION notifications.refuse_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'notifications.% rows are frozen once written', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
REVOKE ALL ON FUNCTION notifications.refuse_change() FROM PUBLIC;

CREATE TRIGGER snapshots_are_frozen
    BEFORE UPDATE ON notifications.snapshots
    FOR EACH ROW EXECUTE FUNCTION notifications.refuse_change();
CREATE TRIGGER intents_are_frozen
    BEFORE UPDATE ON notifications.intents
    FOR EACH ROW EXECUTE FUNCTION notifications.refuse_change();

-- Consent: a recipient who opted out of a category on a channel gets nothing there.
CREATE TABLE notifications.consent_opt_outs (
    recipient_id uuid NOT NULL,
    category_code text NOT NULL REFERENCES notifications.categories (code),
    channel text NOT NULL CONSTRAINT consent_opt_outs_channel_known CHECK (
        channel IN ('email', 'sms', 'whatsapp')
    ),
    opted_out_at timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
    PRIMARY KEY (recipient_id, category_code, channel)
);

-- The identity module: an account's preferred locale (NULL: none said), a BCP 47-ish tag.
ALTER TABLE identity.identities ADD COLUMN preferred_locale text
    CONSTRAINT identities_preferred_locale_shape CHECK (
        preferred_locale ~ '^[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$'
    );
