-- Identifiers and limits an outsider cannot turn against an address's owner (SPEC §14).
--
-- 1. One spelling per mailbox. Email addresses are now compared case-insensitively as a whole
--    (the application lower-cases them; the accepted alphabet is ASCII, so NFC leaves them as
--    they are). Rows written before this migration kept the local part as typed, so one mailbox
--    could hold several accounts. This migration:
--    - gives every email login identifier its lower-case spelling when no other row of the
--      same mailbox exists;
--    - when several rows spell one mailbox, keeps one under the lower-case spelling (a verified
--      row before an unverified one, then the earliest verified, then the oldest) and moves the
--      others, unchanged, to identity.case_duplicate_identifiers. Nothing is deleted: their
--      identities, passwords and sessions stay; they only stop answering to that address, which
--      now belongs to the kept account. An operator can read the table and merge by hand;
--    - closes open email challenges spelled otherwise (they last minutes; a new request works);
--    - lower-cases invitation addresses; where two pending invitations of one organization then
--      name the same mailbox, the newest stays and the others are revoked (invitation_revoked),
--      as inviting again would have done;
--    - adds CHECK constraints so that no other spelling can be stored again.
-- 2. Destination pacing: a backoff per mailbox or phone instead of a hard block
--    (identity.destination_paces, identity.pace_destination).
-- 3. Invitations: identity.enqueue_invitation_message checks the permission and every
--    invitation limit in SQL under the organization's row lock, then writes the invitation and
--    its message together.

SET LOCAL ROLE outbox_owner;

-- 1. One spelling per mailbox ---------------------------------------------------------------

CREATE TABLE identity.case_duplicate_identifiers (
    value text PRIMARY KEY,
    channel text NOT NULL,
    identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    verified_at timestamptz,
    kept_identity_id uuid NOT NULL REFERENCES identity.identities (id) ON DELETE CASCADE,
    moved_at timestamptz NOT NULL
);
COMMENT ON TABLE identity.case_duplicate_identifiers IS
    'Login identifiers that spelled an already-held mailbox in another letter case, moved aside'
    ' by 0011; kept_identity_id now holds the address in lower case.';

CREATE TEMPORARY TABLE identifier_ranks ON COMMIT DROP AS
SELECT
    l.value,
    pg_catalog.lower(l.value) AS canonical,
    l.identity_id,
    pg_catalog.row_number() OVER (
        PARTITION BY pg_catalog.lower(l.value)
        ORDER BY l.verified_at IS NULL, l.verified_at, l.created_at, l.value
    ) AS rank
FROM identity.login_identifiers AS l
WHERE l.channel = 'email';

INSERT INTO identity.case_duplicate_identifiers (
    value, channel, identity_id, created_at, verified_at, kept_identity_id, moved_at
)
SELECT l.value, l.channel, l.identity_id, l.created_at, l.verified_at, kept.identity_id,
       pg_catalog.now()
FROM identity.login_identifiers AS l
JOIN identifier_ranks AS r ON r.value = l.value AND r.rank > 1
JOIN identifier_ranks AS kept ON kept.canonical = r.canonical AND kept.rank = 1;

DELETE FROM identity.login_identifiers AS l
USING identifier_ranks AS r
WHERE r.value = l.value AND r.rank > 1;

UPDATE identity.login_identifiers AS l
SET value = pg_catalog.lower(l.value)
WHERE l.channel = 'email' AND l.value <> pg_catalog.lower(l.value);

ALTER TABLE identity.login_identifiers
    ADD CONSTRAINT login_identifiers_email_lower_case CHECK (
        channel <> 'email' OR value = pg_catalog.lower(value)
    );

UPDATE identity.challenges AS c
SET state = 'closed', ended_at = pg_catalog.now()
WHERE c.state = 'open' AND c.channel = 'email' AND c.identifier <> pg_catalog.lower(c.identifier);

CREATE TEMPORARY TABLE invitation_ranks ON COMMIT DROP AS
SELECT
    i.id,
    pg_catalog.row_number() OVER (
        PARTITION BY i.organization_id, pg_catalog.lower(i.email)
        ORDER BY i.created_at DESC, i.id DESC
    ) AS rank
FROM identity.invitations AS i
WHERE i.state = 'pending';

UPDATE identity.invitations AS i
SET state = 'revoked', ended_at = pg_catalog.now()
FROM invitation_ranks AS r
WHERE r.id = i.id AND r.rank > 1;

SELECT outbox.cancel_by_subject(r.id, 'invitation_revoked')
FROM invitation_ranks AS r
WHERE r.rank > 1;

UPDATE identity.invitations AS i
SET email = pg_catalog.lower(i.email)
WHERE i.email <> pg_catalog.lower(i.email);

ALTER TABLE identity.invitations
    ADD CONSTRAINT invitations_email_lower_case CHECK (email = pg_catalog.lower(email));

-- 2. Destination pacing ----------------------------------------------------------------------
-- One row per mailbox or phone (the key is a SHA-256 digest, never the address). A send is
-- allowed once next_send_at has passed; after the n-th send of a streak the next one waits
-- min(max_wait, first_wait * 2^(n-1)); a streak ends after a quiet period with no send.
-- Python holds the same rule (domain.identity.rate_limits.Backoff) and passes its values in.

CREATE TABLE identity.destination_paces (
    key text PRIMARY KEY CONSTRAINT destination_paces_digest_shape CHECK (
        key ~ '^[0-9a-f]{64}$'
    ),
    sends integer NOT NULL CONSTRAINT destination_paces_sends_positive CHECK (sends > 0),
    last_sent_at timestamptz NOT NULL,
    next_send_at timestamptz NOT NULL,
    CONSTRAINT destination_paces_order CHECK (next_send_at >= last_sent_at)
);
CREATE INDEX destination_paces_by_last_send ON identity.destination_paces (last_sent_at);

-- Count one send on the key if its pace allows it now: NULL when counted, else how long until
-- the next send is allowed. Each call also deletes a few paces whose streak has ended.
CREATE FUNCTION identity.pace_destination(
    p_key text, p_now timestamptz, p_first_wait interval, p_max_wait interval, p_quiet interval
) RETURNS interval
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_next timestamptz;
BEGIN
    DELETE FROM identity.destination_paces AS p
    WHERE p.key IN (
        SELECT old.key FROM identity.destination_paces AS old
        WHERE old.last_sent_at <= p_now - p_quiet AND old.key <> p_key
        ORDER BY old.last_sent_at
        LIMIT 10
        FOR UPDATE SKIP LOCKED
    );
    INSERT INTO identity.destination_paces AS p (key, sends, last_sent_at, next_send_at)
    VALUES (p_key, 1, p_now, p_now + LEAST(p_first_wait, p_max_wait))
    ON CONFLICT (key) DO UPDATE
    SET sends = CASE WHEN p_now >= p.last_sent_at + p_quiet THEN 1 ELSE p.sends + 1 END,
        last_sent_at = p_now,
        next_send_at = p_now + LEAST(
            p_max_wait,
            p_first_wait * pg_catalog.power(
                2, CASE WHEN p_now >= p.last_sent_at + p_quiet THEN 0 ELSE LEAST(p.sends, 30) END
            )
        )
    WHERE p.next_send_at <= p_now;
    IF FOUND THEN
        RETURN NULL;
    END IF;
    SELECT p.next_send_at INTO v_next FROM identity.destination_paces AS p WHERE p.key = p_key;
    RETURN v_next - p_now;
END
$$;

-- 3. Invitations -----------------------------------------------------------------------------
-- Issue an invitation and enqueue its message, or refuse and write nothing. The organization's
-- row is locked first, so concurrent invitations of one organization are counted one after
-- the other and none can pass a limit. Refusals (the first column): 'permission' (not a member
-- with organization.account.manage, or no such organization), 'organization_rate' and
-- 'address_rate' (sends in the sliding window, with the wait until one falls out of it),
-- 'pending_limit'. A pending invitation of the same address is revoked first (a reissue) and
-- its unsent message withdrawn; its id is the third column. Invitations of revoked and
-- accepted invitations count as sends too: each row was one message.
CREATE FUNCTION identity.enqueue_invitation_message(
    p_identity_id uuid, p_organization_id uuid,
    p_invitation_id uuid, p_email text, p_token_digest text, p_created_at timestamptz,
    p_expires_at timestamptz,
    p_pending_max integer, p_organization_limit integer, p_organization_window interval,
    p_address_limit integer, p_address_window interval,
    p_message_id uuid, p_template text, p_params jsonb, p_locale text, p_sealed_secret text
) RETURNS TABLE (refusal text, retry_after interval, withdrawn_id uuid)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_boundary timestamptz;
BEGIN
    PERFORM 1 FROM identity.organizations AS o WHERE o.id = p_organization_id FOR UPDATE;
    IF NOT FOUND OR NOT EXISTS (
        SELECT 1 FROM identity.memberships AS m
        WHERE m.organization_id = p_organization_id AND m.identity_id = p_identity_id
          AND 'organization.account.manage' = ANY (m.permissions)
    ) THEN
        refusal := 'permission';
        RETURN NEXT;
        RETURN;
    END IF;
    -- The limit-th newest send of the window: once it leaves the window, one more is allowed.
    SELECT i.created_at INTO v_boundary
    FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id
      AND i.created_at > p_created_at - p_organization_window
    ORDER BY i.created_at DESC
    OFFSET p_organization_limit - 1 LIMIT 1;
    IF FOUND THEN
        refusal := 'organization_rate';
        retry_after := v_boundary + p_organization_window - p_created_at;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT i.created_at INTO v_boundary
    FROM identity.invitations AS i
    WHERE i.organization_id = p_organization_id AND i.email = p_email
      AND i.created_at > p_created_at - p_address_window
    ORDER BY i.created_at DESC
    OFFSET p_address_limit - 1 LIMIT 1;
    IF FOUND THEN
        refusal := 'address_rate';
        retry_after := v_boundary + p_address_window - p_created_at;
        RETURN NEXT;
        RETURN;
    END IF;
    IF (
        SELECT pg_catalog.count(*) FROM identity.invitations AS i
        WHERE i.organization_id = p_organization_id AND i.state = 'pending'
          AND i.expires_at > p_created_at AND i.email <> p_email
    ) >= p_pending_max THEN
        refusal := 'pending_limit';
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE identity.invitations AS i
    SET state = 'revoked', ended_at = p_created_at
    WHERE i.organization_id = p_organization_id AND i.email = p_email AND i.state = 'pending'
    RETURNING i.id INTO withdrawn_id;
    IF withdrawn_id IS NOT NULL THEN
        PERFORM outbox.cancel_by_subject(withdrawn_id, 'invitation_revoked');
    END IF;
    INSERT INTO identity.invitations (
        id, organization_id, email, token_digest, invited_by, created_at, expires_at
    ) VALUES (
        p_invitation_id, p_organization_id, p_email, p_token_digest, p_identity_id,
        p_created_at, p_expires_at
    );
    PERFORM outbox.enqueue_message(
        p_id => p_message_id,
        p_purpose => 'invitation',
        p_channel => 'email',
        p_destination => p_email,
        p_subject_id => p_invitation_id,
        p_template => p_template,
        p_params => p_params,
        p_locale => p_locale,
        p_sealed_secret => p_sealed_secret,
        p_expires_at => p_expires_at
    );
    RETURN NEXT;
END
$$;

-- Grants: the identity API role calls the two new functions; nobody reaches the new tables
-- directly.
REVOKE ALL ON FUNCTION identity.pace_destination(text, timestamptz, interval, interval, interval)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION identity.enqueue_invitation_message(
    uuid, uuid, uuid, text, text, timestamptz, timestamptz, integer, integer, interval, integer,
    interval, uuid, text, jsonb, text, text
) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity.pace_destination(
    text, timestamptz, interval, interval, interval
) TO identity_service;
GRANT EXECUTE ON FUNCTION identity.enqueue_invitation_message(
    uuid, uuid, uuid, text, text, timestamptz, timestamptz, integer, integer, interval, integer,
    interval, uuid, text, jsonb, text, text
) TO identity_service;
