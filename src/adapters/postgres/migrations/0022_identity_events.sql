-- The reference identity module as an events producer and consumer (SPEC §17, docs/identity.md
-- "Domain events"): module `identity`, its four account event types at contract version 1,
-- and the API role identity_service mapped to it, so identity's own transactions append with
-- events.append_domain_event (map_producer_role grants USAGE on events and EXECUTE on that
-- function, nothing else). Its consumer `identity.security_notices` takes the four types,
-- versions 1..1, and sends the account's security notices; identity_service, the module's
-- role, runs it as a member of events_consumer (0021).
--
-- An account is not a tenant: these events belong to the platform organization, the nil UUID.

SET LOCAL ROLE outbox_owner;

SELECT events.register_module('identity');

SELECT events.register_event_type(
    'identity.account_verified', 'identity',
    'A sign-up was confirmed: the account''s first identifier is verified, its password set.'
);
SELECT events.register_event_type(
    'identity.sign_in_method_added', 'identity',
    'A verified identifier was added to an account (its masked value in the payload).'
);
SELECT events.register_event_type(
    'identity.password_reset', 'identity',
    'A password recovery was confirmed: a new password, every session ended.'
);
SELECT events.register_event_type(
    'identity.sessions_revoked', 'identity',
    'Every session of an account was ended by its owner.'
);

SELECT events.publish_contract_version(t.code, 1)
FROM (VALUES
    ('identity.account_verified'),
    ('identity.sign_in_method_added'),
    ('identity.password_reset'),
    ('identity.sessions_revoked')
) AS t (code);

SELECT events.map_producer_role('identity_service', 'identity');

-- Ordered: one account's notices go out in the order of its changes.
SELECT events.register_consumer('identity.security_notices', 'identity');
SELECT events.subscribe('identity.security_notices', t.code, 1, 1)
FROM (VALUES
    ('identity.account_verified'),
    ('identity.sign_in_method_added'),
    ('identity.password_reset'),
    ('identity.sessions_revoked')
) AS t (code);

RESET ROLE;

GRANT events_consumer TO identity_service;
