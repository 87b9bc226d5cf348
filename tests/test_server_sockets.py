"""The listening socket `memvec serve --workers` shares among its workers."""

from __future__ import annotations

import asyncio
import socket

from memvec.service.server import _shared_socket


def test_a_workers_connections_do_not_wait_for_the_clients_ack() -> None:
    """asyncio turns Nagle's algorithm off only on connections of a socket made as TCP by name; without
    it, a response written in two parts waited ~40 ms for the client's delayed ACK, and two workers
    answered one client four times slower than one worker did."""

    async def nodelay_of_a_connection() -> int:
        listener = _shared_socket("127.0.0.1", 0)
        seen: list[int] = []

        def connected(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(connected, sock=listener)
        reader, writer = await asyncio.open_connection(*listener.getsockname())
        await reader.read()  # until the server closes it
        writer.close()
        server.close()
        await server.wait_closed()
        return seen[0]

    assert asyncio.run(nodelay_of_a_connection()) == 1
