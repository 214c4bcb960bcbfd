"""Self-tests of eatt_client.py, the Enhanced ATT client the EATT tests use: a Bumble
peripheral with Bumble's own EATT server plays gattd's part. Each test fails without the fix
it is named after, and shows the stock client's gap where that is cheap.

The fixes are in Bumble's host (ATT and L2CAP signalling), not in the link: these run on the
default link layer only (test_eatt.py runs the client on both against gattd), on one set of
controllers for the module (each test connects its own devices; a new host connection
replaces the old one).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import AsyncIterator, Iterator

import pytest

from bumble import att, gatt_client, l2cap
from bumble.core import PhysicalTransport
from bumble.device import Connection, Device
from bumble.gatt import Characteristic, CharacteristicValue, Service

from eatt_client import (
    EATT_PSM,
    FIXED,
    MULTIPLE_HANDLE_VALUE_NTF,
    Result,
    Update,
    Updates,
    fixed_bearer_client,
    install,
    open_bearers,
    reconfigure,
)
from harness import VirtualControllers, bumble_device, default_link_layer, run

PERIPHERAL_ADDRESS = "D0:00:00:00:00:AA"
CENTRAL_ADDRESS = "C0:00:00:00:00:01"
SERVICE_UUID = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
SINK_UUID = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"
SOURCE_UUID = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"


@pytest.fixture(scope="module")
def controllers(tmp_path_factory) -> Iterator[VirtualControllers]:
    link = VirtualControllers(2, tmp_path_factory.mktemp("eatt-client"), link_layer=default_link_layer()).start()
    yield link
    link.stop()


@dataclass
class Pair:
    """A Bumble peripheral serving EATT and a Bumble central connected to it."""

    peripheral: Device
    central: Device
    connection: Connection  # the central's
    sink: int  # value handle of a writable characteristic
    source: int  # value handle of a readable one (b"source")
    received: list[tuple[str | int, int, bytes]]  # every ATT PDU the peripheral's server got: (bearer, opcode, parameters)

    def server_channels(self) -> list[l2cap.LeCreditBasedChannel]:
        """The peripheral's ends of the EATT bearers, oldest first."""
        channels = self.peripheral.l2cap_channel_manager.channels
        return [channel for connection_channels in channels.values() for channel in connection_channels.values()
                if isinstance(channel, l2cap.LeCreditBasedChannel) and channel.psm == EATT_PSM]

    def send_from_server(self, pdu: bytes, bearer: l2cap.LeCreditBasedChannel | None = None) -> None:
        """Sends `pdu` as is from the peripheral on `bearer` (None: the fixed bearer)."""
        if bearer is None:
            handle = next(iter(self.peripheral.connections.values())).handle
            self.peripheral.send_l2cap_pdu(handle, att.ATT_CID, pdu)
        else:
            bearer.write(pdu)

    def writes(self) -> list[tuple[int, bytes]]:
        """(opcode, value) of every write the server received for `sink`."""
        return [(opcode, parameters[2:]) for _, opcode, parameters in self.received
                if opcode in (att.Opcode.ATT_WRITE_REQUEST, att.Opcode.ATT_WRITE_COMMAND,
                              att.Opcode.ATT_PREPARE_WRITE_REQUEST)
                and int.from_bytes(parameters[:2], "little") == self.sink]


@contextlib.asynccontextmanager
async def eatt_pair(controllers, server_mtu: int = 2048, server_mps: int = 2048,
                    server_credits: int = 256) -> AsyncIterator[Pair]:
    async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
            bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
        sink = Characteristic(SINK_UUID, Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
                              Characteristic.WRITEABLE, CharacteristicValue(write=lambda _connection, _value: None))
        source = Characteristic(SOURCE_UUID, Characteristic.Properties.READ, Characteristic.READABLE, b"source")
        peripheral.add_service(Service(SERVICE_UUID, [sink, source]))
        peripheral.gatt_server.register_eatt(l2cap.LeCreditBasedChannelSpec(
            psm=EATT_PSM, mtu=server_mtu, mps=server_mps, max_credits=server_credits))
        received: list[tuple[str | int, int, bytes]] = []
        stock_on_gatt_pdu = peripheral.gatt_server.on_gatt_pdu

        def recording(bearer, pdu):
            label = bearer.source_cid if att.is_enhanced_bearer(bearer) else FIXED
            received.append((label, int(pdu.op_code), bytes(pdu.payload)))
            stock_on_gatt_pdu(bearer, pdu)

        peripheral.gatt_server.on_gatt_pdu = recording
        await peripheral.start_advertising(auto_restart=False)
        connection = await central.connect(PERIPHERAL_ADDRESS, transport=PhysicalTransport.LE, timeout=10)
        yield Pair(peripheral, central, connection, sink.handle, source.handle, received)


def test_bearer_mtu_is_the_smaller_l2cap_mtu(controllers):
    """Fix 1: ATT_MTU on an EATT bearer is min(our MTU, the server's), so a 90-octet write
    is one Write Request (at Bumble's 23 it is Prepare Writes and an Execute Write)."""

    async def body():
        async with eatt_pair(controllers, server_mtu=100) as pair:
            stock = await gatt_client.Client.connect_eatt(pair.connection)
            assert stock.mtu == att.ATT_DEFAULT_MTU, "the gap: Bumble sets 23 whatever the MTUs"

            [client] = await open_bearers(pair.connection, 1, mtu=517)
            assert client.mtu == 100
            value = bytes(range(90))
            await client.write_value(pair.sink, value, with_response=True)
            assert pair.writes() == [(att.Opcode.ATT_WRITE_REQUEST, value)]

    run(body(), 30)


def test_multiple_handle_value_notification_reaches_subscribers(controllers):
    """Fix 2: ATT_MULTIPLE_HANDLE_VALUE_NTF (0x23) on an EATT bearer and on the fixed
    bearer: each value goes to its handle's subscribers and into the update log."""

    async def body():
        async with eatt_pair(controllers) as pair:
            updates = Updates()
            [client] = await open_bearers(pair.connection, 1, updates=updates)
            fixed = fixed_bearer_client(pair.connection, updates)
            heard: list[tuple[str, bytes]] = []
            for bearer_client, name in ((client, "eatt"), (fixed, "fixed")):
                for handle in (0x0101, 0x0202):
                    bearer_client.notification_subscribers[handle] = {
                        lambda value, handle=handle, name=name: heard.append((f"{name} 0x{handle:04X}", bytes(value)))}
            # handle 0x0101 "ab", handle 0x0202 "" (a zero-length value is allowed), then "xyz" for 0x0101.
            pdu = bytes([MULTIPLE_HANDLE_VALUE_NTF]) + bytes.fromhex("0101 0200 6162 0202 0000 0101 0300 78797a".replace(" ", ""))
            [server_bearer] = pair.server_channels()
            pair.send_from_server(pdu, server_bearer)
            pair.send_from_server(pdu)
            # A read on each bearer: its response comes after the notification.
            assert await client.read_value(pair.source) == b"source"
            assert await fixed.read_value(pair.source) == b"source"
            values = [(0x0101, b"ab"), (0x0202, b""), (0x0101, b"xyz")]
            assert updates.pdus == [Update(client.label, MULTIPLE_HANDLE_VALUE_NTF, values),
                                    Update(FIXED, MULTIPLE_HANDLE_VALUE_NTF, values)]
            assert heard == [("eatt 0x0101", b"ab"), ("eatt 0x0202", b""), ("eatt 0x0101", b"xyz"),
                             ("fixed 0x0101", b"ab"), ("fixed 0x0202", b""), ("fixed 0x0101", b"xyz")]

    run(body(), 30)


def test_credit_based_reconfigure_request_is_answered(controllers):
    """Fix 3: the peripheral raises its MTU with L2CAP_CREDIT_BASED_RECONFIGURE_REQ; the
    central answers success (stock: Command Reject), and its bearers' ATT_MTU follows; a
    smaller MTU is refused with 0x0001 and changes nothing."""

    async def body():
        async with eatt_pair(controllers, server_mtu=64, server_mps=64) as pair:
            stock = await gatt_client.Client.connect_eatt(pair.connection)
            with pytest.raises(l2cap.L2capError) as rejected:
                install(pair.peripheral)  # (the sender's side: our reconfigure())
                await reconfigure(pair.server_channels(), mtu=200, mps=64)
            assert "COMMAND_REJECT" in str(rejected.value), "the gap: Bumble rejects the request"

            [client] = await open_bearers(pair.connection, 1, mtu=517)  # installs the fix on the central
            assert (stock.bearer.att_mtu, client.mtu) == (23, 64)
            assert await reconfigure(pair.server_channels(), mtu=200, mps=64) == Result.RECONFIGURATION_SUCCESSFUL
            assert (stock.mtu, client.mtu) == (200, 200)
            assert [channel.peer_mtu for channel in (stock.bearer, client.bearer)] == [200, 200]
            value = bytes(150)
            await client.write_value(pair.sink, value, with_response=True)
            assert pair.writes() == [(att.Opcode.ATT_WRITE_REQUEST, value)]

            assert await reconfigure(pair.server_channels(), mtu=100, mps=64) == \
                Result.RECONFIGURATION_FAILED_REDUCTION_IN_SIZE_OF_MTU_NOT_ALLOWED
            assert client.mtu == 200
            answered = pair.connection.device.l2cap_channel_manager.reconfigure_requests_answered
            assert [result for *_, result in answered] == [Result.RECONFIGURATION_SUCCESSFUL,
                                                          Result.RECONFIGURATION_FAILED_REDUCTION_IN_SIZE_OF_MTU_NOT_ALLOWED]

    run(body(), 30)


def test_each_pdu_is_its_own_sdu(controllers):
    """Fix 4: three Write Commands queued while the bearer has no credits reach the server
    as three PDUs (stock: the second and third merge into one SDU, one longer write)."""

    async def body():
        async with eatt_pair(controllers, server_credits=1) as pair:
            values = [b"one", b"two", b"three"]
            commands = [bytes(att.ATT_Write_Command(attribute_handle=pair.sink, attribute_value=v)) for v in values]

            stock = await gatt_client.Client.connect_eatt(pair.connection)
            for command in commands:  # the first takes the only credit; the rest wait for more
                stock.send_gatt_pdu(command)
            await stock.bearer.drain()
            assert await stock.read_value(pair.source) == b"source"
            assert pair.writes() == [(att.Opcode.ATT_WRITE_COMMAND, b"one"),
                                     (att.Opcode.ATT_WRITE_COMMAND, b"two" + commands[2])], "the gap"

            pair.received.clear()
            [client] = await open_bearers(pair.connection, 1)
            for command in commands:
                client.send_gatt_pdu(command)
            # Queued behind them (merged into their SDU without the fix: never answered).
            assert await asyncio.wait_for(client.read_value(pair.source), 5) == b"source"
            assert pair.writes() == [(att.Opcode.ATT_WRITE_COMMAND, v) for v in values]

    run(body(), 30)
