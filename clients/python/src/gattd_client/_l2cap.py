"""App L2CAP channels: listening for a channel id and talking SDUs over each channel a central opens."""

from __future__ import annotations

import asyncio
import json
import os
import select
import socket
from typing import Any, Deque, Dict, List, Optional
from collections import deque

from ._errors import GattdConnectionError, error_from_reply


class L2CAPChannel:
    """One LE credit-based channel a central opened: `recv()` returns one SDU (b"" for an empty
    SDU, and once the channel closed: then `closed` is true), `send(data)` sends `data` in SDUs
    of at most the central's MTU, waiting while the central gives no credits. Iterating yields
    SDUs (empty ones included) until the channel closes."""

    def __init__(self, sock: socket.socket, event: Dict[str, Any]) -> None:
        self.socket = sock
        self.channel: str = event["channel"]
        self.central: str = event["central"]
        self.psm: int = int(event["psm"])
        self.mtu: int = int(event["mtu"])
        """The largest SDU gattd takes from the central."""
        self.peer_mtu: int = int(event["peer_mtu"])
        """The largest SDU the central takes."""
        self.closed = False
        """The channel closed (the central, the link or gattd ended it)."""
        sock.setblocking(False)

    async def recv(self) -> bytes:
        sdu = await asyncio.get_running_loop().sock_recv(self.socket, max(self.mtu, 65536))
        if not sdu and self._hung_up():
            self.closed = True
        return sdu

    def _hung_up(self) -> bool:
        """A zero-length read is the end when the other side hung up or shut its sending side
        down and nothing more is queued; otherwise it was an empty SDU. (An empty SDU that is
        the very last thing before the close cannot be told from the close.)"""
        hang_up = select.POLLHUP | select.POLLERR | getattr(select, "POLLRDHUP", 0x2000)
        poller = select.poll()
        poller.register(self.socket, select.POLLIN | hang_up)
        if not any(ev & hang_up for _, ev in poller.poll(0)):
            return False
        try:
            return len(self.socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)) == 0
        except BlockingIOError:
            return False
        except OSError:
            return True

    async def send(self, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        view = memoryview(data)
        for start in range(0, max(len(view), 1), max(self.peer_mtu, 1)):
            await loop.sock_sendall(self.socket, view[start:start + self.peer_mtu])

    def close(self) -> None:
        self.socket.close()

    def __aiter__(self) -> "L2CAPChannel":
        return self

    async def __anext__(self) -> bytes:
        sdu = await self.recv()
        if self.closed:
            raise StopAsyncIteration
        return sdu

    async def __aenter__(self) -> "L2CAPChannel":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class L2CAPListener:
    """Listens for one channel id on a connection of its own; an async iterator of
    `L2CAPChannel`s, one per channel a central opens (`async with` closes it)."""

    def __init__(self, path: str, channel_id: str) -> None:
        self.path = path
        self.channel_id = channel_id
        self.psm: Optional[int] = None
        self._sock: Optional[socket.socket] = None
        self._buffer = b""
        self._fds: Deque[int] = deque()
        self._channels: "asyncio.Queue[Optional[L2CAPChannel]]" = asyncio.Queue()
        self._reply: Optional["asyncio.Future[Dict[str, Any]]"] = None

    async def start(self) -> "L2CAPListener":
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, self.path)
        except OSError as error:
            sock.close()
            raise GattdConnectionError(f"cannot connect to {self.path}: {error}") from error
        self._sock = sock
        self._reply = loop.create_future()
        loop.add_reader(sock.fileno(), self._readable)
        await loop.sock_sendall(sock, (json.dumps({"op": "l2cap_listen", "channel": self.channel_id}) + "\n").encode())
        reply = await self._reply
        if reply.get("ok") is not True:
            self.close()
            raise error_from_reply(reply)
        self.psm = int(reply["channel"]["psm"])
        return self

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            data, fds, _, _ = socket.recv_fds(self._sock, 65536, 16)
        except BlockingIOError:
            return
        except OSError:
            data, fds = b"", []
        for fd in fds:
            os.set_inheritable(fd, False)  # recv_fds has no MSG_CMSG_CLOEXEC: keep them out of children
        self._fds.extend(fds)
        if not data:
            self._finish()
            return
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "ok" in message and self._reply is not None and not self._reply.done():
                self._reply.set_result(message)
            elif message.get("event") == "l2cap_channel" and self._fds:
                fd = self._fds.popleft()
                self._channels.put_nowait(L2CAPChannel(socket.socket(fileno=fd), message))

    def _finish(self) -> None:
        if self._sock is not None:
            asyncio.get_running_loop().remove_reader(self._sock.fileno())
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(GattdConnectionError("gattd closed the connection"))
        self._channels.put_nowait(None)

    def close(self) -> None:
        if self._sock is not None:
            try:
                asyncio.get_running_loop().remove_reader(self._sock.fileno())
            except (RuntimeError, ValueError):
                pass
            self._sock.close()
            self._sock = None
        while self._fds:
            socket.socket(fileno=self._fds.popleft()).close()

    async def accept(self) -> Optional[L2CAPChannel]:
        """The next channel a central opens; None once gattd closed the connection."""
        return await self._channels.get()

    def __aiter__(self) -> "L2CAPListener":
        return self

    async def __anext__(self) -> L2CAPChannel:
        channel = await self.accept()
        if channel is None:
            raise StopAsyncIteration
        return channel

    async def __aenter__(self) -> "L2CAPListener":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __await__(self):  # type: ignore[no-untyped-def]
        return self.start().__await__()


__all__: List[str] = ["L2CAPChannel", "L2CAPListener"]
