"""The Python client (clients/python, gattd_client) against a real gattd on the virtual link,
with a Bumble central: notify, a burst with busy/ready, set/get/status, events, and the
decorator responder answering a central's read and write of a control characteristic."""

from __future__ import annotations

import asyncio
import logging
import struct
import sys
from pathlib import Path

import pytest

from bumble import att

# The client from this clone (not an installed copy).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))

from gattd_client import (  # noqa: E402
    AttError,
    Connected,
    Disconnected,
    GattdClient,
    NotNotifiableError,
    ReadRequest,
    Subscribed,
    UnknownCharacteristicError,
    ValueTooLongError,
    WriteRequest,
    Written,
)
from control_client import ControlClient, hex_value  # noqa: E402
from harness import att_round_trip, bumble_device, connect, find_characteristic, named, read, run, scan_for, subscribe, write  # noqa: E402


def uuid(n: int) -> str:
    return f"7a1d{n:04x}-0000-4000-8000-000000000000"


CONFIG = """{
  "name": "Py Client",
  "advertising": { "local_name": "PYC", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "%s", "characteristics": [
        { "id": "stream", "uuid": "%s", "properties": ["notify"], "max_length": 20 },
        { "id": "ctl", "uuid": "%s", "properties": ["read", "write"], "handler": "control", "max_length": 512 },
        { "id": "label", "uuid": "%s", "properties": ["read", "write"], "max_length": 16, "value": { "utf8": "default" } } ] }
  ]
}
""" % (uuid(0), uuid(1), uuid(2), uuid(3))

CENTRAL = "C0:00:00:00:00:01"


class Central:
    """A Bumble central connected to gattd (async context manager)."""

    def __init__(self, controllers, index: int = 1, address: str = CENTRAL) -> None:
        self.device_cm = bumble_device(controllers[index], f"central-{index}", address)

    async def __aenter__(self):
        device = await self.device_cm.__aenter__()
        advertisement = await scan_for(device, named("PYC"))
        self.peer = await connect(device, advertisement.address)
        return self.peer

    async def __aexit__(self, *exc) -> None:
        try:
            connection = self.peer.connection
            if connection in connection.device.connections.values():  # not already gone
                await asyncio.wait_for(connection.disconnect(), 5)
        except Exception:
            pass
        await self.device_cm.__aexit__(None, None, None)


def socket(tmp_path: Path) -> str:
    return str(tmp_path / "control.sock")


def test_notify_reaches_the_central(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        async with GattdClient.connect(socket(tmp_path), wait=10) as client:
            assert await client.notify("stream", b"\x01") == 0  # nobody subscribed yet
            async with Central(controllers) as peer:
                values = await subscribe(peer, uuid(1))
                assert await client.notify("stream", b"\x00\x48") == 1
                assert await client.notify("stream", "72 bpm", central=CENTRAL) == 1
                assert await asyncio.wait_for(values.get(), 5) == b"\x00\x48"
                assert await asyncio.wait_for(values.get(), 5) == b"72 bpm"

    run(body())


def test_burst_of_2000_notifications_arrives_complete_and_in_order(controllers, gattd, tmp_path):
    """2,000 notifies started at once (one task per value, in order) while another control
    client floods the same characteristic in pipelined bursts, so gattd's transmit queue fills:
    the client gets `busy`, waits for `ready` and resends; the central receives each of its
    values once, in order. (One request at a time never fills the queue on the virtual link,
    which acknowledges packets at once.)"""
    gattd(CONFIG)
    total = 2_000

    async def body():
        busy = BusyCounter()
        async with GattdClient.connect(socket(tmp_path), wait=10) as client:
            flooder = await ControlClient.open(socket(tmp_path))
            async with Central(controllers) as peer:
                received: list[int] = []
                flood_received = 0
                done = asyncio.Event()

                def on_value(value):
                    nonlocal flood_received
                    kind, n = struct.unpack("<BI", bytes(value))
                    if kind == 1:
                        received.append(n)
                        if len(received) == total:
                            done.set()
                    else:
                        flood_received += 1

                await find_characteristic(peer, uuid(1)).subscribe(on_value)

                finished = asyncio.Event()

                async def flood():  # bursts until the client is done (at most 200)
                    for burst in range(200):
                        if finished.is_set():
                            return
                        for n in range(100):
                            flooder.send({"op": "notify", "characteristic": "stream",
                                          "value": hex_value(struct.pack("<BI", 2, n))})
                        await flooder.writer.drain()
                        for _ in range(100):
                            await flooder.reply(20)

                flooding = asyncio.ensure_future(flood())
                tasks = [asyncio.ensure_future(client.notify("stream", struct.pack("<BI", 1, n))) for n in range(total)]
                sent = await asyncio.wait_for(asyncio.gather(*tasks), 120)
                finished.set()
                await asyncio.wait_for(flooding, 60)
                assert sent == [1] * total
                assert busy.count > 0, "the queue never filled: busy/ready untested"
                await asyncio.wait_for(done.wait(), 60)
                await att_round_trip(peer)  # nothing more behind them (no duplicates)
                assert received == list(range(total))
                print(f"{total} notifications, {busy.count} busy replies waited out, {flood_received} flood values")
            await flooder.close()
        busy.remove()

    run(body(), timeout=240)


class BusyCounter(logging.Handler):
    """Counts the client's "busy, waiting for ready" debug lines."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0
        self.logger = logging.getLogger("gattd_client")
        self.previous_level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if "busy, waiting for ready" in record.getMessage():
            self.count += 1

    def remove(self) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.previous_level)


def test_set_get_status_and_errors(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        async with GattdClient.connect(socket(tmp_path), wait=10) as client:
            assert await client.get("label") == b"default"
            await client.set("label", "kitchen")
            assert await client.get("label") == b"kitchen"
            await client.set("label", b"\x00\xff")
            async with Central(controllers) as peer:
                assert await read(peer, uuid(3)) == b"\x00\xff"
                await subscribe(peer, uuid(1))
                status = await client.status()
                assert status.advertising in (True, False)
                assert status.address == controllers[0].address
                [connection] = status.connections
                assert connection.central == CENTRAL
                assert connection.address_type == "random"
                assert connection.security == "low"
                assert [(s.characteristic, s.notify, s.indicate) for s in connection.subscriptions] == [("stream", True, False)]
                assert connection.queue == 0
            with pytest.raises(UnknownCharacteristicError) as error:
                await client.get("nope")
            assert error.value.code == "unknown_characteristic" and "nope" in error.value.message
            with pytest.raises(ValueTooLongError):
                await client.set("label", b"x" * 17)
            with pytest.raises(NotNotifiableError):
                await client.notify("label", b"x")
            assert await client.get("label") == b"\x00\xff"  # still usable, nothing changed

    run(body())


def test_events_see_connect_subscribe_write_disconnect(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        async with GattdClient.connect(socket(tmp_path), wait=10) as client:
            async with client.events() as events:
                async with Central(controllers) as peer:
                    assert await events.wait_for(Connected, 10) == Connected(CENTRAL)
                    await subscribe(peer, uuid(1))
                    assert await events.wait_for(Subscribed, 10) == Subscribed(CENTRAL, "stream", True, False)
                    await write(peer, uuid(3), b"hall")
                    assert await events.wait_for(Written, 10) == Written(CENTRAL, "label", b"hall")
                    await client.disconnect(CENTRAL)
                    event = await events.wait_for(Disconnected, 10)
                    # gattd disconnected: Connection Terminated By Local Host (0x16).
                    assert event.central == CENTRAL and event.reason == "connection_terminated_by_local_host"

    run(body())


def test_responder_answers_reads_and_writes(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        async with GattdClient.connect(socket(tmp_path), wait=10) as client:
            written: list[bytes] = []
            reads: list[ReadRequest] = []

            @client.on_read("ctl")
            def read_ctl(request: ReadRequest) -> bytes:
                reads.append(request)
                return b"from python " + bytes(range(48))  # long: the central reads it in blobs

            @client.on_write("ctl")
            async def write_ctl(request: WriteRequest) -> None:
                if request.value == b"\xff":
                    raise AttError("value_not_allowed")
                written.append(request.value)

            await asyncio.wait_for(client.start_serving(), 10)  # returns once gattd forwards requests to it
            serving = asyncio.ensure_future(client.serve())  # the same, then runs until closed
            try:
                async with Central(controllers) as peer:
                    assert await read(peer, uuid(2)) == b"from python " + bytes(range(48))
                    assert reads[0].central == CENTRAL and reads[0].offset == 0
                    assert any(r.offset > 0 for r in reads), "expected Read Blob requests"
                    await write(peer, uuid(2), b"\x01\x02")
                    assert written == [b"\x01\x02"]
                    with pytest.raises(att.ATT_Error) as error:
                        await write(peer, uuid(2), b"\xff")
                    assert error.value.error_code == 0x13  # Value Not Allowed
                    assert written == [b"\x01\x02"]
            finally:
                await client.close()
                await asyncio.wait_for(serving, 5)

    run(body(), timeout=60)
