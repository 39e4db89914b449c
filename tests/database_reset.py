"""Put a shared test database back to the migrated state, instead of copying a new one per test.

``CREATE DATABASE … TEMPLATE`` costs a few hundred milliseconds a test; most tests only add,
change or remove rows. After such a test, the tables it left rows in (and the tables that
reference them) are emptied (deleted from, or truncated when it left thousands), the rows the
migrations seeded are copied back, and every sequence is set back to where it was. Whatever
else a test changed (a function, a grant, a trigger, a setting of the database) shows in a
fingerprint of the catalog; the database is then dropped and copied again from the template,
as it is when a row or a table stays locked by a connection the test left behind. Every test
therefore starts from the migrated state.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import psycopg
from psycopg import sql

# Every object a test could change outside its tables' rows, as text: schemas, relations and
# their columns, functions (body, owner, settings), triggers (enabled or not), constraints,
# policies, types, default privileges, extensions and the database's own settings and
# privileges. Not the files behind a relation (a TRUNCATE changes those), nor the privileges
# on schemas, relations and functions, which PRIVILEGES reads apart: a grant a test added is
# revoked again.
CATALOG_FINGERPRINT = """
WITH ours AS (
    SELECT oid, nspname FROM pg_catalog.pg_namespace
    WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
)
SELECT md5(string_agg(item, E'\\n' ORDER BY item)) FROM (
    SELECT format('n %s %s', n.nspname, s.nspowner::regrole) AS item
    FROM ours n JOIN pg_catalog.pg_namespace s ON s.oid = n.oid
    UNION ALL
    SELECT format('c %s.%s %s %s %s %s %s', n.nspname, c.relname, c.relkind, c.relowner,
                  c.reloptions, c.relrowsecurity, c.relforcerowsecurity)
    FROM pg_catalog.pg_class c JOIN ours n ON n.oid = c.relnamespace
    UNION ALL
    SELECT format('a %s.%s %s %s %s %s %s %s', n.nspname, c.relname, a.attname, a.atttypid,
                  a.attnotnull, a.attisdropped, a.attacl, a.attidentity)
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    JOIN ours n ON n.oid = c.relnamespace
    WHERE a.attnum > 0
    UNION ALL
    SELECT format('d %s.%s %s', n.nspname, c.relname, pg_catalog.pg_get_expr(d.adbin, d.adrelid))
    FROM pg_catalog.pg_attrdef d
    JOIN pg_catalog.pg_class c ON c.oid = d.adrelid
    JOIN ours n ON n.oid = c.relnamespace
    UNION ALL
    SELECT format('p %s %s %s %s %s %s', p.oid::regprocedure, md5(p.prosrc), p.proowner,
                  p.proconfig, p.prosecdef, p.provolatile)
    FROM pg_catalog.pg_proc p JOIN ours n ON n.oid = p.pronamespace
    UNION ALL
    SELECT format('t %s %s %s %s', t.tgrelid::regclass, t.tgname, t.tgenabled,
                  t.tgfoid::regprocedure)
    FROM pg_catalog.pg_trigger t
    JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
    JOIN ours n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal
    UNION ALL
    SELECT format('k %s %s %s %s', k.conrelid::regclass, k.conname,
                  pg_catalog.pg_get_constraintdef(k.oid), k.convalidated)
    FROM pg_catalog.pg_constraint k JOIN ours n ON n.oid = k.connamespace
    UNION ALL
    SELECT format('i %s', pg_catalog.pg_get_indexdef(i.indexrelid))
    FROM pg_catalog.pg_index i
    JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
    JOIN ours n ON n.oid = c.relnamespace
    UNION ALL
    SELECT format('r %s %s %s %s %s', y.polrelid::regclass, y.polname, y.polcmd, y.polroles,
                  pg_catalog.pg_get_expr(y.polqual, y.polrelid))
    FROM pg_catalog.pg_policy y
    UNION ALL
    SELECT format('y %s.%s %s %s', n.nspname, t.typname, t.typowner, t.typacl)
    FROM pg_catalog.pg_type t JOIN ours n ON n.oid = t.typnamespace
    UNION ALL
    SELECT format('e %s %s', e.enumtypid, e.enumlabel) FROM pg_catalog.pg_enum e
    UNION ALL
    SELECT format('x %s %s', x.extname, x.extversion) FROM pg_catalog.pg_extension x
    UNION ALL
    SELECT format('g %s %s %s', g.defaclrole, g.defaclnamespace, g.defaclacl)
    FROM pg_catalog.pg_default_acl g
    UNION ALL
    SELECT format('s %s %s', s.setrole, s.setconfig)
    FROM pg_catalog.pg_db_role_setting s, pg_catalog.pg_database d
    WHERE d.datname = pg_catalog.current_database() AND s.setdatabase = d.oid
    UNION ALL
    SELECT format('b %s %s', d.datacl, d.datconnlimit)
    FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()
    UNION ALL
    SELECT format('l %s', l.oid) FROM pg_catalog.pg_largeobject_metadata l
    UNION ALL
    SELECT format('w %s', w.gid) FROM pg_catalog.pg_prepared_xacts w
    WHERE w.database = pg_catalog.current_database()
) AS catalog
"""

# Who may do what on each schema, relation and function: (object, grantee, privilege) rows,
# the object named as GRANT and REVOKE name it, an implicit default spelt out.
PRIVILEGES = """
WITH ours AS (
    SELECT oid, nspname FROM pg_catalog.pg_namespace
    WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
), objects AS (
    SELECT format('SCHEMA %I', s.nspname) AS object,
           coalesce(s.nspacl, pg_catalog.acldefault('n', s.nspowner)) AS acl
    FROM ours n JOIN pg_catalog.pg_namespace s ON s.oid = n.oid
    UNION ALL
    SELECT format('%s %I.%I', CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                  n.nspname, c.relname),
           coalesce(c.relacl, pg_catalog.acldefault(
               CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))
    FROM pg_catalog.pg_class c JOIN ours n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
    UNION ALL
    SELECT format('%s %s', CASE p.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                  p.oid::regprocedure),
           coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))
    FROM pg_catalog.pg_proc p JOIN ours n ON n.oid = p.pronamespace
)
SELECT o.object,
       CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(a.grantee::regrole::text) END,
       a.privilege_type
FROM objects o, pg_catalog.aclexplode(o.acl) a
"""

TABLES = """
SELECT n.nspname, c.relname
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
ORDER BY 1, 2
"""

# Which tables reference which (foreign keys): a truncated table takes its referrers along.
REFERENCES = """
SELECT DISTINCT k.confrelid::regclass::text, k.conrelid::regclass::text
FROM pg_catalog.pg_constraint k
WHERE k.contype = 'f'
"""

SEQUENCES = """
SELECT format('%I.%I', schemaname, sequencename) FROM pg_catalog.pg_sequences
WHERE schemaname NOT LIKE 'pg\\_%' AND schemaname <> 'information_schema'
ORDER BY 1
"""


# Up to this many rows in every changed table, a reset deletes them instead of truncating.
FEW_ROWS = 1000


class NeedsNewCopy(Exception):
    """The database cannot be put back by emptying tables: copy it again from the template."""


@attrs.frozen
class Baseline:
    """What a migrated database holds: its catalog, the seeded rows and every sequence."""

    fingerprint: str
    privileges: frozenset[tuple[str, str, str]]  # (object, grantee, privilege)
    tables: tuple[str, ...]  # every table, quoted and schema-qualified
    seeds: dict[str, tuple[str, bytes]]  # table -> (content digest, its rows as binary COPY)
    sequences: tuple[tuple[str, int, bool], ...]  # (sequence, last_value, is_called)
    referrers: dict[str, tuple[str, ...]]  # table -> the tables whose foreign keys point at it

    @classmethod
    def take(cls, conn: psycopg.Connection) -> Baseline:
        """Read the baseline from a freshly migrated database."""
        tables = tuple(
            sql.Identifier(schema, name).as_string(conn)
            for schema, name in conn.execute(TABLES).fetchall()
        )
        counts = _read_one_row(conn, [_row_count(table) for table in tables])
        seeded = [table for table, count in zip(tables, counts, strict=True) if count]
        digests = _read_one_row(conn, [_digest(table) for table in seeded])
        referrers: dict[str, list[str]] = {}
        for referenced, referrer in conn.execute(REFERENCES).fetchall():
            referrers.setdefault(_quoted(conn, referenced), []).append(_quoted(conn, referrer))
        sequences = [name for (name,) in conn.execute(SEQUENCES).fetchall()]
        states = _read_one_row(conn, [_sequence_state(name) for name in sequences])
        return cls(
            fingerprint=_fingerprint(conn),
            privileges=_privileges(conn),
            tables=tables,
            seeds={
                table: (str(digest), _copy_out(conn, table))
                for table, digest in zip(seeded, digests, strict=True)
            },
            sequences=tuple(
                (name, *_parse_state(state)) for name, state in zip(sequences, states, strict=True)
            ),
            referrers={table: tuple(found) for table, found in referrers.items()},
        )

    def restore(self, conn: psycopg.Connection) -> None:
        """Put ``conn``'s database back to this baseline; raises NeedsNewCopy when it cannot."""
        if _fingerprint(conn) != self.fingerprint:
            raise NeedsNewCopy("the catalog changed")
        self._revoke_added_privileges(conn)
        checks = [
            _digest(table) if table in self.seeds else _row_count(table) for table in self.tables
        ]
        checks += [_sequence_state(name) for name, _, _ in self.sequences]
        found = _read_one_row(conn, checks)
        counts = dict(zip(self.tables, found[: len(self.tables)], strict=True))
        changed = {
            table
            for table, value in counts.items()
            if (value != self.seeds[table][0] if table in self.seeds else value)
        }
        moved = [
            (name, value, called)
            for (name, value, called), state in zip(
                self.sequences, found[len(self.tables) :], strict=True
            )
            if _parse_state(state) != (value, called)
        ]
        if not changed and not moved:
            return
        doomed = self._with_referrers(changed)
        # A few rows go faster with DELETE (no new files, no lock on others' catalog caches);
        # a bulk test's thousands with TRUNCATE.
        bulk = any(
            table not in self.seeds and int(str(counts[table])) > FEW_ROWS for table in changed
        )
        try:
            with conn.transaction():
                conn.execute("SET LOCAL lock_timeout = '1s'")
                # Triggers (append-only guards, notifications) stay out of a reset.
                conn.execute("SET LOCAL session_replication_role = replica")
                if doomed and bulk:
                    conn.execute(f"TRUNCATE {', '.join(sorted(doomed))}")
                elif doomed:
                    for table in sorted(doomed):
                        conn.execute(f"DELETE FROM {table}")
                for table in sorted(doomed & self.seeds.keys()):
                    _copy_in(conn, table, self.seeds[table][1])
                for name, value, called in moved:
                    conn.execute(
                        "SELECT pg_catalog.setval(%s::regclass, %s, %s)", (name, value, called)
                    )
        except psycopg.errors.LockNotAvailable as error:
            raise NeedsNewCopy("a table is still locked") from error

    def _revoke_added_privileges(self, conn: psycopg.Connection) -> None:
        now = _privileges(conn)
        if now == self.privileges:
            return
        if self.privileges - now:
            raise NeedsNewCopy("a privilege was revoked")
        for target, grantee in sorted(
            {(target, grantee) for target, grantee, _ in now - self.privileges}
        ):
            conn.execute(f"REVOKE ALL ON {target} FROM {grantee}")
        if _privileges(conn) != self.privileges:
            raise NeedsNewCopy("a privilege could not be revoked")

    def _with_referrers(self, tables: Iterable[str]) -> set[str]:
        found: set[str] = set()
        pending = list(tables)
        while pending:
            table = pending.pop()
            if table not in found:
                found.add(table)
                pending.extend(self.referrers.get(table, ()))
        return found


def _fingerprint(conn: psycopg.Connection) -> str:
    row = conn.execute(CATALOG_FINGERPRINT).fetchone()
    assert row is not None
    return str(row[0])


def _privileges(conn: psycopg.Connection) -> frozenset[tuple[str, str, str]]:
    return frozenset((str(o), str(g), str(p)) for o, g, p in conn.execute(PRIVILEGES).fetchall())


def _quoted(conn: psycopg.Connection, regclass: str) -> str:
    """A ``regclass`` text as the fully qualified, quoted name the baseline uses."""
    row = conn.execute(
        "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c"
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.oid = %s::regclass",
        (regclass,),
    ).fetchone()
    assert row is not None
    return sql.Identifier(row[0], row[1]).as_string(conn)


def _digest(table: str) -> str:
    return f"(SELECT md5(string_agg(r::text, E'\\n' ORDER BY r::text)) FROM {table} AS r)"


def _row_count(table: str) -> str:
    """How many rows ``table`` holds, counted up to one more than FEW_ROWS."""
    return f"(SELECT count(*) FROM (SELECT FROM {table} LIMIT {FEW_ROWS + 1}) AS r)"


def _sequence_state(name: str) -> str:
    return f"(SELECT format('%s %s', last_value, is_called) FROM {name})"


def _parse_state(state: object) -> tuple[int, bool]:
    value, called = str(state).split()
    return int(value), called == "t"


def _read_one_row(conn: psycopg.Connection, expressions: list[str]) -> tuple[object, ...]:
    """Evaluate every expression in one round trip."""
    if not expressions:
        return ()
    row = conn.execute(f"SELECT {', '.join(expressions)}").fetchone()
    assert row is not None
    return tuple(row)


def _copy_out(conn: psycopg.Connection, table: str) -> bytes:
    data = bytearray()
    with conn.cursor() as cursor, cursor.copy(f"COPY {table} TO STDOUT (FORMAT binary)") as copy:
        for chunk in copy:
            data += chunk
    return bytes(data)


def _copy_in(conn: psycopg.Connection, table: str, rows: bytes) -> None:
    with conn.cursor() as cursor, cursor.copy(f"COPY {table} FROM STDIN (FORMAT binary)") as copy:
        copy.write(rows)


async def vacuum_what_resets_left(conn: psycopg.AsyncConnection, *tables: str) -> None:
    """VACUUM ``tables`` on ``conn`` (superuser, autocommit).

    A reset deletes a few rows with DELETE, and their index entries stay until a vacuum. A
    test that counts the index entries a statement reads under a held horizon would count
    those of the tests before it as well: it calls this before it takes the hold.
    """
    for table in tables:
        await conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(*table.split("."))))
