"""A TCP proxy between workers and PostgreSQL that can stall, drop or reset their connections.

It runs its own asyncio loop in a thread, so the test can block (subprocesses, psycopg in
sync mode) without stopping the traffic. The upstream is a TCP address or a Unix socket
(the embedded server listens on a socket only).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Awaitable
from typing import TypeVar

from psycopg import conninfo

_T = TypeVar("_T")
_CHUNK = 65536


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream
        self.dropped = False  # bytes are being thrown away: the stream is broken for good

    def reset(self) -> None:
        for writer in (self.client, self.upstream):
            sock = writer.get_extra_info("socket")
            if sock is not None and sock.family != socket.AF_UNIX:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()


class FaultProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``; ``stall``, ``drop`` and ``reset`` break it."""

    def __init__(self, upstream: tuple[str, int] | str) -> None:
        self._upstream = upstream
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._links: set[_Link] = set()
        self._flowing: asyncio.Event | None = None
        self._dropping = False
        self._server: asyncio.Server | None = None
        self.port = 0
        self.connections = 0  # accepted so far
        self.resets = 0  # links cut by reset() or at the end of a drop

    @classmethod
    def for_url(cls, url: str) -> FaultProxy:
        """A proxy in front of the server that ``url`` names (TCP host or socket directory)."""
        params = conninfo.conninfo_to_dict(url)
        host = str(params.get("host") or "127.0.0.1")
        port = int(params.get("port") or 5432)
        if host.startswith("/"):
            return cls(f"{host}/.s.PGSQL.{port}")
        return cls((host, port))

    def url(self, url: str) -> str:
        """``url`` rewritten to go through the proxy."""
        return conninfo.make_conninfo(url, host="127.0.0.1", port=str(self.port))

    def start(self) -> None:
        """Start listening on a free loopback port."""
        self._thread.start()
        self._call(self._start())

    def stop(self) -> None:
        """Close every link and stop the loop."""
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def stall(self) -> None:
        """Stop forwarding in both directions; connections stay open (a frozen network)."""
        self._call(self._set_flowing(flowing=False))

    def resume(self) -> None:
        """Forward again after ``stall`` or ``drop``; a drop's links are reset then."""
        self._call(self._resume())

    def drop(self) -> None:
        """Throw away every byte, and accept new connections into the void, until ``resume``."""
        self._call(self._drop())

    def reset(self) -> int:
        """Reset (RST) every open link now; return how many."""
        return self._call(self._reset_all())

    def _call(self, coroutine: Awaitable[_T]) -> _T:
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(coroutine), self._loop)
        return future.result(timeout=10)

    async def _start(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        await self._reset_all()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _set_flowing(self, *, flowing: bool) -> None:
        assert self._flowing is not None
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _drop(self) -> None:
        self._dropping = True
        for link in self._links:
            link.dropped = True

    async def _resume(self) -> None:
        if self._dropping:
            self._dropping = False
            for link in [link for link in self._links if link.dropped]:
                self._cut(link)
        await self._set_flowing(flowing=True)

    async def _reset_all(self) -> int:
        links = list(self._links)
        for link in links:
            self._cut(link)
        return len(links)

    def _cut(self, link: _Link) -> None:
        self._links.discard(link)
        self.resets += 1
        link.reset()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if isinstance(self._upstream, str):
                up_reader, up_writer = await asyncio.open_unix_connection(self._upstream)
            else:
                up_reader, up_writer = await asyncio.open_connection(*self._upstream)
        except OSError:
            writer.transport.abort()
            return
        link = _Link(writer, up_writer)
        link.dropped = self._dropping
        self._links.add(link)
        await asyncio.gather(
            self._pipe(reader, up_writer, link),
            self._pipe(up_reader, writer, link),
            return_exceptions=True,
        )
        if link in self._links:
            self._links.discard(link)
            for end in (writer, up_writer):
                end.transport.abort()

    async def _pipe(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, link: _Link
    ) -> None:
        assert self._flowing is not None
        while True:
            data = await reader.read(_CHUNK)
            if not data:
                break
            await self._flowing.wait()
            if link.dropped:
                continue
            writer.write(data)
            await writer.drain()
        if link in self._links and not link.dropped:
            with contextlib.suppress(OSError):
                writer.write_eof()


async def _as_coroutine(awaitable: Awaitable[_T]) -> _T:
    return await awaitable
