"""Looks for secrets where they must never be: every table of the database, every log line.

A needle is a plaintext code or token, a key, or a full destination. Six-digit codes are
matched as whole numbers only, never inside a longer run of digits, a decimal fraction or a
UUID (log timestamps carry microseconds, which would otherwise match by chance). Columns
that hold a destination by design — the message's own snapshot and the Identity module's
login identifiers, which it needs to sign people in — are the only places a destination may
appear.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import attrs
import psycopg
from psycopg import sql

SCHEMAS = ("outbox", "identity", "outbox_meta")
# Columns that hold a full destination because the product needs it there.
DESTINATION_COLUMNS = frozenset(
    {
        "outbox.messages.destination",  # where the worker sends
        "identity.login_identifiers.value",  # how a person signs in
        "identity.challenges.identifier",  # the identifier a code was sent to
        "identity.invitations.email",  # who was invited
        "identity.magic_links.email",  # where the link went
    }
)
TABLES = """
SELECT n.nspname, c.relname
FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = ANY(%s) AND c.relkind IN ('r', 'p')
ORDER BY 1, 2
"""


_CODES = re.compile(r"(?<![0-9A-Za-z.:_-])[0-9]{4,10}(?![0-9A-Za-z])")
_WORDS = re.compile(r"[A-Za-z0-9_-]{16,}")
_EMAILS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9.-]+[A-Za-z0-9]")
_PHONES = re.compile(r"\+?[0-9]{7,15}")


@attrs.frozen(kw_only=True)
class Needles:
    """What must not be found: secrets anywhere, destinations outside their own columns.

    ``secrets`` are whole codes (digits) and tokens (long words); ``keys`` are looked for
    as plain substrings (API keys, encoded key material).
    """

    secrets: frozenset[str]
    destinations: frozenset[str]
    keys: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, secrets: Iterable[str], destinations: Iterable[str], keys: Iterable[str] = ()
    ) -> Needles:
        """Needles for these values (destinations compared case-insensitively)."""
        return cls(
            secrets=frozenset(secrets),
            destinations=frozenset(d.lower() for d in destinations),
            keys=tuple(k for k in keys if k),
        )

    def secret_in(self, text: str) -> bool:
        """Whether ``text`` holds a secret or a key."""
        candidates = set(_CODES.findall(text)) | set(_WORDS.findall(text))
        return bool(candidates & self.secrets) or any(key in text for key in self.keys)

    def destination_in(self, text: str) -> bool:
        """Whether ``text`` holds a full destination."""
        lowered = text.lower()
        candidates = set(_EMAILS.findall(lowered)) | set(_PHONES.findall(lowered))
        return bool(candidates & self.destinations)


def scan_lines(lines: Iterable[str], needles: Needles) -> list[str]:
    """The findings in log lines: each a short description that does not repeat the secret."""
    findings = []
    for number, line in enumerate(lines, start=1):
        if needles.secret_in(line):
            findings.append(f"log line {number}: a secret")
        if needles.destination_in(line):
            findings.append(f"log line {number}: an unmasked destination")
        if "Traceback (most recent call last)" in line:
            findings.append(f"log line {number}: a traceback")
        if line.strip() and not _is_json_object(line):
            findings.append(f"log line {number}: not a JSON event")
    return findings


def scan_database(url: str, needles: Needles) -> list[str]:
    """The findings in every table of the outbox's schemas, column by column."""
    findings = []
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(TABLES, (list(SCHEMAS),)).fetchall()
        for schema, table in tables:
            query = sql.SQL("SELECT to_jsonb(t) FROM {}.{} AS t").format(
                sql.Identifier(schema), sql.Identifier(table)
            )
            for (row,) in conn.execute(query):
                for column, value in row.items():
                    text = value if isinstance(value, str) else json.dumps(value)
                    where = f"{schema}.{table}.{column}"
                    if needles.secret_in(text):
                        findings.append(f"{where}: a secret")
                    if where not in DESTINATION_COLUMNS and needles.destination_in(text):
                        findings.append(f"{where}: a destination")
    return sorted(set(findings))


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False
