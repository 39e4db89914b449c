"""outbox: a PostgreSQL-backed transactional outbox.

A service imports only the public surface, documented in docs/producer.md and
docs/consumers.md: ``outbox.producer`` (enqueue and append in the caller's own
transaction), ``outbox.inbox`` (run an inbox over JetStream) and ``outbox.testing``
(in-memory doubles for the service's own unit tests). Everything else
(``outbox.domain``, ``outbox.application``, ``outbox.adapters``, ``outbox.entrypoints``)
is internal and may change between releases.
"""
