"""Rows as the application's views, column by name: what every operator store shares.

A query names its columns as the view's fields (``attempt_count AS attempts``); a field
typed with an enum takes the column's text as that enum, and an empty text as None. The
database operator's functions and the staff ones answer the same columns, so one query text
serves both through ``gated``.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, LiteralString, TypeVar

from psycopg import AsyncConnection, AsyncCursor
from psycopg.rows import AsyncRowFactory
from psycopg_pool import AsyncConnectionPool

from outbox.application.staff import StaffActor

_View = TypeVar("_View")
# The backlog functions answer an age in seconds; the views hold it as a timedelta, never
# negative (the database's clock may trail a due time), None when nothing is due.
OLDEST_DUE_AGE = (
    "CASE WHEN oldest_due_age_seconds IS NOT NULL"
    " THEN greatest(oldest_due_age_seconds, 0) * interval '1 second' END AS oldest_due_age"
)


def _enum_of(hint: object) -> type[enum.Enum] | None:
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return next((e for e in map(_enum_of, typing.get_args(hint)) if e is not None), None)
    return None


_ENUMS: dict[type[Any], dict[str, type[enum.Enum]]] = {}


def _enums(cls: type[Any]) -> dict[str, type[enum.Enum]]:
    """The fields of ``cls`` typed with an enum (or an optional one), read once per class."""
    if cls not in _ENUMS:
        hints = typing.get_type_hints(cls)
        _ENUMS[cls] = {name: found for name, hint in hints.items() if (found := _enum_of(hint))}
    return _ENUMS[cls]


def view_row(cls: type[_View]) -> AsyncRowFactory[_View]:
    """A row factory that builds ``cls`` from the columns of the same names."""
    enums = _enums(cls)

    def factory(cursor: AsyncCursor[Any]) -> Callable[[Sequence[Any]], _View]:
        names = [column.name for column in cursor.description or ()]

        def make(values: Sequence[Any]) -> _View:
            fields = dict(zip(names, values, strict=True))
            for name, kind in enums.items():
                if name in fields:
                    fields[name] = kind(fields[name]) if fields[name] else None
            return cls(**fields)

        return make

    return factory


def gated(
    actor: StaffActor | None,
    staff_query: LiteralString,
    operator_query: LiteralString,
    params: tuple[Any, ...],
) -> tuple[LiteralString, tuple[Any, ...]]:
    """The query and parameters for ``actor``: the elevation-checked staff function when the
    actor presents an elevation, else the database operator's (the actor on trust, or none)."""
    if actor is not None and actor.elevation_digest is not None:
        return staff_query, (actor.identity_id, actor.elevation_digest, *params)
    return operator_query, (None if actor is None else actor.identity_id, *params)


async def fetch_views(
    conn: AsyncConnection[Any], cls: type[_View], query: LiteralString, params: Sequence[Any] = ()
) -> list[_View]:
    """Every row of ``query`` as ``cls``."""
    async with conn.cursor(row_factory=view_row(cls)) as cursor:
        await cursor.execute(query, params)
        return await cursor.fetchall()


async def read_views(
    pool: AsyncConnectionPool[AsyncConnection[Any]],
    cls: type[_View],
    query: LiteralString,
    params: Sequence[Any] = (),
) -> list[_View]:
    """``fetch_views`` on a connection of ``pool``."""
    async with pool.connection() as conn:
        return await fetch_views(conn, cls, query, params)
