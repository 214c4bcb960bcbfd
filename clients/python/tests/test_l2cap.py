"""Unit tests of gattd_client's L2CAP channels against a fake gattd that passes sockets
(SCM_RIGHTS on the `l2cap_channel` event's first byte, as gattd does).

Run: python -m unittest discover -s clients/python/tests -v
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import tempfile
import threading
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from gattd_client import L2CAPListener, UnknownChannelError  # noqa: E402


class FakeGattd:
    """Accepts one listener connection: answers `l2cap_listen`, then passes `channels`
    socket-pair ends (one per event) and keeps the other ends for the test."""

    def __init__(self, path: str, channels: int, known: bool = True) -> None:
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.channels = channels
        self.known = known
        self.ends: list[socket.socket] = []
        self.passed = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        connection, _ = self.server.accept()
        request = json.loads(connection.makefile().readline())
        assert request == {"op": "l2cap_listen", "channel": "stream"}, request
        if not self.known:
            connection.sendall(b'{"ok":false,"error":"unknown_channel","message":"no L2CAP channel \\"stream\\""}\n')
            return
        connection.sendall(b'{"ok":true,"channel":{"id":"stream","psm":129,"security":"none","mtu":2048}}\n')
        for n in range(self.channels):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.ends.append(ours)
            line = json.dumps({"event": "l2cap_channel", "channel": "stream", "psm": 129,
                               "central": f"11:22:33:44:55:6{n}", "mtu": 2048, "peer_mtu": 100}).encode() + b"\n"
            socket.send_fds(connection, [line[:1]], [theirs.fileno()])
            connection.sendall(line[1:])
            theirs.close()
        self.passed.set()
        self.connection = connection


class L2CAPTests(unittest.TestCase):
    def setUp(self) -> None:
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "control.sock")

    def tearDown(self) -> None:
        self.directory.cleanup()

    def test_each_channel_arrives_with_its_socket(self) -> None:
        fake = FakeGattd(self.path, channels=2)

        async def body() -> None:
            async with L2CAPListener(self.path, "stream") as channels:
                self.assertEqual(channels.psm, 129)
                for n in range(2):
                    channel = await asyncio.wait_for(channels.accept(), 5)
                    assert channel is not None
                    self.assertEqual((channel.central, channel.peer_mtu, channel.mtu), (f"11:22:33:44:55:6{n}", 100, 2048))
                    # One SDU each way; a long send is split at the central's MTU.
                    await channel.send(b"x" * 250)
                    end = fake.ends[n]
                    self.assertEqual([len(end.recv(4096)) for _ in range(3)], [100, 100, 50])
                    end.send(b"pong")
                    self.assertEqual(await asyncio.wait_for(channel.recv(), 5), b"pong")
                    # An empty SDU is an SDU, not the end; the end comes when the channel closes.
                    end.send(b"")
                    end.send(b"last")
                    end.close()
                    self.assertEqual([sdu async for sdu in channel], [b"", b"last"])
                    self.assertTrue(channel.closed)
                    channel.close()

        asyncio.run(body())

    def test_an_unknown_channel_is_refused(self) -> None:
        FakeGattd(self.path, channels=0, known=False)

        async def body() -> None:
            with self.assertRaises(UnknownChannelError):
                await L2CAPListener(self.path, "stream").start()

        asyncio.run(body())


if __name__ == "__main__":
    unittest.main()
