-- The reference Identity module's tables (SPEC §10). No role gets any privilege on them: the
-- API (outbox_runtime) reaches them only through the functions of 0005_identity_functions.sql,
-- and the worker (outbox_worker) not at all. Secrets are never stored: passwords and
-- codes as Argon2id PHC strings, bearer, elevation, invitation and magic-link tokens as the hex
-- SHA-256 of a 256-bit random token, rate-limit keys as digests.

SET LOCAL ROLE outbox_owner;

CREATE TABLE identity.identities (
    id uuid PRIMARY KEY,
    created_at timestamptz NOT NULL
);

CREATE TABLE identity.login_identifiers (
    value text PRIMARY KEY CONSTRAINT login_identifiers_value_named CHECK (value <> ''),
    channel text NOT NULL CONSTRAINT login_identifiers_channel_known CHECK (
        channel IN ('email', 'sms')
    ),
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    verified_at timestamptz
);
CREATE INDEX login_identifiers_by_identity ON identity.login_identifiers (identity_id);

CREATE TABLE identity.password_credentials (
    identity_id uuid PRIMARY KEY REFERENCES identity.identities (id) ON DELETE CASCADE,
    password_hash text NOT NULL CONSTRAINT password_credentials_argon2id CHECK (
        password_hash LIKE '$argon2id$%'
    ),
    updated_at timestamptz NOT NULL
);

CREATE TABLE identity.challenges (
    id uuid PRIMARY KEY,
    purpose text NOT NULL CONSTRAINT challenges_purpose_known CHECK (purpose IN (
        'sign_up', 'add_sign_in_method', 'password_recovery', 'step_up'
    )),
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    identifier text NOT NULL,
    channel text NOT NULL CONSTRAINT challenges_channel_known CHECK (channel IN ('email', 'sms')),
    code_hash text NOT NULL CONSTRAINT challenges_code_argon2id CHECK (
        code_hash LIKE '$argon2id$%'
    ),
    failed_attempts integer NOT NULL DEFAULT 0 CONSTRAINT challenges_attempts_counted CHECK (
        failed_attempts >= 0
    ),
    state text NOT NULL DEFAULT 'open' CONSTRAINT challenges_state_known CHECK (
        state IN ('open', 'consumed', 'locked', 'closed')
    ),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    CONSTRAINT challenges_lifetime_positive CHECK (expires_at > created_at),
    CONSTRAINT challenges_end_shape CHECK ((state = 'open') = (ended_at IS NULL))
);
-- At most one open challenge per purpose, identity and destination; a resend reuses it.
CREATE UNIQUE INDEX challenges_one_open
    ON identity.challenges (purpose, identity_id, identifier) WHERE state = 'open';
CREATE INDEX challenges_open_by_identifier
    ON identity.challenges (purpose, identifier, created_at) WHERE state = 'open';

CREATE TABLE identity.sessions (
    id uuid PRIMARY KEY,
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    token_digest text NOT NULL UNIQUE CONSTRAINT sessions_digest_shape CHECK (
        token_digest ~ '^[0-9a-f]{64}$'
    ),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX sessions_active_by_identity
    ON identity.sessions (identity_id) WHERE revoked_at IS NULL;

CREATE TABLE identity.elevations (
    id uuid PRIMARY KEY,
    session_id uuid NOT NULL REFERENCES identity.sessions (id) ON DELETE CASCADE,
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    token_digest text NOT NULL UNIQUE CONSTRAINT elevations_digest_shape CHECK (
        token_digest ~ '^[0-9a-f]{64}$'
    ),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE TABLE identity.organizations (
    id uuid PRIMARY KEY,
    name text NOT NULL CONSTRAINT organizations_name_length CHECK (
        pg_catalog.length(name) BETWEEN 1 AND 200
    ),
    created_by uuid NOT NULL REFERENCES identity.identities (id),
    created_at timestamptz NOT NULL
);

CREATE TABLE identity.memberships (
    organization_id uuid NOT NULL REFERENCES identity.organizations (id) ON DELETE CASCADE,
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    permissions text[] NOT NULL DEFAULT '{}' CONSTRAINT memberships_permissions_known CHECK (
        permissions <@ ARRAY['organization.account.manage']::text[]
    ),
    created_at timestamptz NOT NULL,
    PRIMARY KEY (organization_id, identity_id)
);

CREATE TABLE identity.invitations (
    id uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES identity.organizations (id) ON DELETE CASCADE,
    email text NOT NULL,
    token_digest text NOT NULL UNIQUE CONSTRAINT invitations_digest_shape CHECK (
        token_digest ~ '^[0-9a-f]{64}$'
    ),
    invited_by uuid NOT NULL REFERENCES identity.identities (id),
    state text NOT NULL DEFAULT 'pending' CONSTRAINT invitations_state_known CHECK (
        state IN ('pending', 'accepted', 'revoked')
    ),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    accepted_by uuid REFERENCES identity.identities (id),
    CONSTRAINT invitations_lifetime_positive CHECK (expires_at > created_at),
    CONSTRAINT invitations_end_shape CHECK ((state = 'pending') = (ended_at IS NULL)),
    CONSTRAINT invitations_acceptance_shape CHECK (
        (state = 'accepted') = (accepted_by IS NOT NULL)
    )
);
-- One pending invitation per organization and address: inviting again reissues it.
CREATE UNIQUE INDEX invitations_one_pending
    ON identity.invitations (organization_id, email) WHERE state = 'pending';

CREATE TABLE identity.magic_links (
    id uuid PRIMARY KEY,
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    email text NOT NULL,
    token_digest text NOT NULL UNIQUE CONSTRAINT magic_links_digest_shape CHECK (
        token_digest ~ '^[0-9a-f]{64}$'
    ),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    redeemed_at timestamptz,
    CONSTRAINT magic_links_lifetime_positive CHECK (expires_at > created_at)
);
CREATE INDEX magic_links_open_by_identity
    ON identity.magic_links (identity_id, email, created_at) WHERE redeemed_at IS NULL;
-- The magic-link lookup probes this index by email whether or not the account exists, so an
-- unknown address costs the same as a known one (anti-enumeration).
CREATE INDEX magic_links_open_by_email
    ON identity.magic_links (email, created_at) WHERE redeemed_at IS NULL;

-- Staff (SPEC §10): a row here, created by `outboxctl staff grant EMAIL` (the operator issue).
CREATE TABLE identity.staff_members (
    identity_id uuid PRIMARY KEY REFERENCES identity.identities (id) ON DELETE CASCADE,
    granted_at timestamptz NOT NULL
);

-- Fixed-window counters; the key is a SHA-256 digest, never an address.
CREATE TABLE identity.rate_limit_counters (
    key text NOT NULL CONSTRAINT rate_limit_counters_digest_shape CHECK (
        key ~ '^[0-9a-f]{64}$'
    ),
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    hits integer NOT NULL CONSTRAINT rate_limit_counters_hits_positive CHECK (hits > 0),
    PRIMARY KEY (key, window_start),
    CONSTRAINT rate_limit_counters_window_positive CHECK (window_end > window_start)
);
CREATE INDEX rate_limit_counters_by_end ON identity.rate_limit_counters (window_end);
