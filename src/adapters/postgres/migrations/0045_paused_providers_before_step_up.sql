-- The console's step-up page says when no code can arrive.
--
-- Staff step-up codes are outbox messages: with the provider that sends them paused, the
-- page still said "a code is on its way". The admin listener may now read the paused
-- providers' names (never a secret, nothing else) before the step-up, to say so and name the
-- break glass (outboxctl staff step-up).

SET LOCAL ROLE outbox_owner;

GRANT EXECUTE ON FUNCTION outbox.paused_providers() TO staff_service;

RESET ROLE;
