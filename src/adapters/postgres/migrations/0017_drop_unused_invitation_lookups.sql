-- identity.enqueue_invitation_message (0011) checks pending invitations and their limits
-- itself, under the organization's row lock; the two lookups the application used to call
-- before it have no caller left, and a function nobody calls is only a surface to grant.

SET LOCAL ROLE outbox_owner;

DROP FUNCTION identity.find_pending_invitation(uuid, text);
DROP FUNCTION identity.count_pending_invitations(uuid, timestamptz);

RESET ROLE;
