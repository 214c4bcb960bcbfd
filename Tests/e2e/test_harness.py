"""Harness self-tests: a Bumble peripheral and a Bumble central on the virtual link.

These prove the virtual controllers behave like real ones where gattd depends on it: scan
responses carry the LE Set Scan Response Data, HCI Reset drops links, a peripheral takes
several centrals, and the recorded HCI commands are exact.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bumble import core, hci
from bumble.core import AdvertisingData, PhysicalTransport, UUID
from bumble.device import AdvertisingType, Device
from bumble.gatt import Characteristic, CharacteristicValue, Service

from harness import (
    OPCODE_LE_CREATE_CONNECTION_CANCEL,
    OPCODE_LE_SET_ADVERTISING_ENABLE,
    OPCODE_LE_SET_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS,
    OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA,
    OPCODE_LE_SET_SCAN_RESPONSE_DATA,
    OPCODE_RESET,
    VirtualController,
    bumble_device,
    connect,
    from_address,
    read,
    run,
    scan_for,
    subscribe,
    with_scan_response,
    write,
)
from raw_hci_host import RawHost

SERVICE_UUID = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
READ_UUID = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"
NOTIFY_UUID = "6E400003-B5A3-F393-E0A9-E50E24DCCA9E"
PERIPHERAL_ADDRESS = "D0:00:00:00:00:AA"
CENTRAL_ADDRESS = "C0:00:00:00:00:01"

ADVERTISING_DATA = bytes(AdvertisingData([
    (AdvertisingData.FLAGS, bytes([0x06])),
    (AdvertisingData.COMPLETE_LOCAL_NAME, b"harness"),
]))
# Only in the scan response: 128-bit service UUID and manufacturer data.
SCAN_RESPONSE_DATA = bytes(AdvertisingData([
    (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, UUID(SERVICE_UUID).to_bytes()),
    (AdvertisingData.MANUFACTURER_SPECIFIC_DATA, bytes([0xFF, 0xFF, 0x42])),
]))


def add_test_service(device: Device) -> tuple[dict[str, bytes], Characteristic]:
    """A service with a readable/writable characteristic and a notifying one; returns what
    was written and the notifying characteristic."""
    written: dict[str, bytes] = {}

    def on_write(_connection, value: bytes) -> None:
        written["value"] = bytes(value)

    readable = Characteristic(
        READ_UUID,
        Characteristic.Properties.READ | Characteristic.Properties.WRITE,
        Characteristic.READABLE | Characteristic.WRITEABLE,
        CharacteristicValue(read=lambda _connection: b"hello", write=on_write),
    )
    notifying = Characteristic(
        NOTIFY_UUID, Characteristic.Properties.NOTIFY, Characteristic.READABLE, b"\x00"
    )
    device.add_service(Service(SERVICE_UUID, [readable, notifying]))
    return written, notifying


@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_scan_response_connect_discover_read_write_notify(controllers, legacy_only):
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            written, notifying = add_test_service(peripheral)
            await peripheral.start_advertising(
                advertising_data=ADVERTISING_DATA, scan_response_data=SCAN_RESPONSE_DATA, auto_restart=False
            )

            # The central sees the scan response data, not a copy of the advertising data.
            advertisement = await scan_for(central, with_scan_response(from_address(PERIPHERAL_ADDRESS)))
            assert advertisement.is_connectable
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "harness"
            assert advertisement.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA) == (0xFFFF, b"\x42")
            assert [UUID(SERVICE_UUID)] == advertisement.data.get(
                AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS)

            # The exact scan response bytes the peripheral's host gave its controller.
            if legacy_only:
                command = controllers[0].last_command(OPCODE_LE_SET_SCAN_RESPONSE_DATA)
                assert command is not None
                assert command.parameters == bytes([len(SCAN_RESPONSE_DATA)]) + SCAN_RESPONSE_DATA.ljust(31, b"\x00")
            else:
                command = controllers[0].last_command(OPCODE_LE_SET_EXTENDED_SCAN_RESPONSE_DATA)
                assert command is not None
                # handle, operation (3 = complete), fragment preference, length, data
                assert command.parameters[1:] == bytes([0x03, 0x01, len(SCAN_RESPONSE_DATA)]) + SCAN_RESPONSE_DATA
                assert controllers[0].last_command(OPCODE_LE_SET_SCAN_RESPONSE_DATA) is None

            peer = await connect(central, PERIPHERAL_ADDRESS)
            # ATT MTU is negotiated by the hosts; the link carries PDUs of any size.
            assert await peer.request_mtu(247) == 247
            assert await read(peer, READ_UUID) == b"hello"
            await write(peer, READ_UUID, b"\x01\x02\x03")
            assert written["value"] == b"\x01\x02\x03"
            long_value = bytes(range(200))
            await write(peer, READ_UUID, long_value)  # one 203-byte ATT PDU in one ACL packet
            assert written["value"] == long_value

            notifications = await subscribe(peer, NOTIFY_UUID)
            await peripheral.notify_subscribers(notifying, b"\x07\x08")
            assert await asyncio.wait_for(notifications.get(), 5) == b"\x07\x08"

    run(body())


def test_passive_scan_gets_no_scan_response(controllers):
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA, scan_response_data=SCAN_RESPONSE_DATA)
            advertisement = await scan_for(central, from_address(PERIPHERAL_ADDRESS), active=False)
            assert not advertisement.is_scan_response
            assert advertisement.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA) is None

    run(body())


@pytest.mark.parametrize("controller_count", [3])
def test_peripheral_accepts_two_centrals(controllers):
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central-1", "C0:00:00:00:00:01") as central1, \
                bumble_device(controllers[2], "central-2", "C0:00:00:00:00:02") as central2:
            add_test_service(peripheral)
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA,
                                               scan_response_data=SCAN_RESPONSE_DATA)
            peer1 = await connect(central1, PERIPHERAL_ADDRESS)
            # Advertising stops on connection (as on a real controller); advertise again.
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA,
                                               scan_response_data=SCAN_RESPONSE_DATA)
            peer2 = await connect(central2, PERIPHERAL_ADDRESS)
            assert await read(peer1, READ_UUID) == b"hello"
            assert await read(peer2, READ_UUID) == b"hello"
            assert len(peripheral.connections) == 2

    run(body())


def test_hci_reset_drops_connections_and_advertising(controllers):
    async def body():
        async with bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral:
                add_test_service(peripheral)
                await peripheral.start_advertising(advertising_data=ADVERTISING_DATA,
                                                   scan_response_data=SCAN_RESPONSE_DATA)
                peer = await connect(central, PERIPHERAL_ADDRESS)
                disconnected = asyncio.get_running_loop().create_future()
                peer.connection.on("disconnection", lambda reason: disconnected.done() or disconnected.set_result(reason))
                await peripheral.start_advertising(advertising_data=ADVERTISING_DATA)

            # A new host on controller 0 (like gattd restarting) resets the controller.
            async with bumble_device(controllers[0], "restarted", PERIPHERAL_ADDRESS):
                assert await asyncio.wait_for(disconnected, 5) == 0x08  # connection timeout
                assert len(controllers[0].commands(OPCODE_RESET)) >= 2
                with pytest.raises(asyncio.TimeoutError):
                    await scan_for(central, from_address(PERIPHERAL_ADDRESS), timeout=1.0)

    run(body())


def test_command_log_records_exact_bytes(controllers):
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS):
            reset = controllers[0].commands(OPCODE_RESET)[0]
            assert reset.packet == bytes([0x01, 0x03, 0x0C, 0x00])

    run(body())



def cancels_after(controller: VirtualController, start: float) -> list:
    return [c for c in controller.commands(OPCODE_LE_CREATE_CONNECTION_CANCEL) if c.time >= start]


@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_central_cannot_connect_to_non_connectable_advertising(controllers):
    """A CONNECT_IND never answers ADV_NONCONN_IND or ADV_SCAN_IND: the central's attempt
    does not complete (neither side hears of a connection), and when the central gives up,
    LE Create Connection Cancel ends it with Unknown Connection Identifier (Vol 4 Part E
    §7.8.13). Afterwards the same central connects to connectable advertising."""
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            add_test_service(peripheral)
            failures: list[int] = []
            central.on("connection_failure", lambda error: failures.append(error.error_code))
            for advertising_type in (AdvertisingType.UNDIRECTED, AdvertisingType.UNDIRECTED_SCANNABLE):
                await peripheral.start_advertising(advertising_type=advertising_type,
                                                   advertising_data=ADVERTISING_DATA,
                                                   scan_response_data=SCAN_RESPONSE_DATA)
                started = time.time()
                failures.clear()
                with pytest.raises(core.TimeoutError):
                    await asyncio.wait_for(
                        central.connect(PERIPHERAL_ADDRESS, transport=PhysicalTransport.LE, timeout=1.0), 5)
                assert len(cancels_after(controllers[1], started)) == 1
                assert failures == [hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR]
                # Asserts that nothing happens (no late connection on either side), so this
                # waits a bounded time: 0.2 s, where the virtual link delivers one in ms.
                await asyncio.sleep(0.2)
                assert len(central.connections) == 0
                assert len(peripheral.connections) == 0
                await peripheral.stop_advertising()

            # Connectable advertising: the same central gets in (no attempt left pending).
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA,
                                               scan_response_data=SCAN_RESPONSE_DATA)
            peer = await connect(central, PERIPHERAL_ADDRESS)
            assert await read(peer, READ_UUID) == b"hello"

    run(body())


def test_create_connection_cancel_without_attempt_is_disallowed(controllers):
    async def body():
        async with bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            with pytest.raises(hci.HCI_Error) as raised:
                await central.host.send_sync_command(hci.HCI_LE_Create_Connection_Cancel_Command())
            assert raised.value.error_code == hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR

    run(body())


# ----- Extended advertising as a Bluetooth 5 controller does it (virtual_extended_advertising.py) -----
OPCODE_READ_LOCAL_SUPPORTED_COMMANDS = 0x1002
OPCODE_READ_BD_ADDR = 0x1009
OPCODE_LE_SET_EVENT_MASK = 0x2001
OPCODE_LE_READ_LOCAL_SUPPORTED_FEATURES = 0x2003
OPCODE_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS = 0x2035
# Set 0, legacy ADV_IND (properties 0x0013), 20 ms, channels 37–39, public address, no TX power
# preference, LE 1M, SID 0 (Core Spec Vol 4 Part E §7.8.53).
SET_0_PARAMETERS = bytes([0x00, 0x13, 0x00, 0x20, 0x00, 0x00, 0x20, 0x00, 0x00, 0x07, 0x00, 0x00]) + bytes(6) \
    + bytes([0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00])
SET_0_DATA = bytes([0x00, 0x03, 0x01, len(ADVERTISING_DATA)]) + ADVERTISING_DATA  # complete, minimize fragmentation
ENABLE_SET_0 = bytes([0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
DISABLE_SET_0 = bytes([0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
LEGACY_PARAMETERS = bytes([0x20, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00]) + bytes(6) + bytes([0x07, 0x00])  # ADV_IND, 20 ms
SUCCESS, COMMAND_DISALLOWED = 0x00, 0x0C


async def advertise_set_0(host: RawHost) -> None:
    assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == SUCCESS
    assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA, SET_0_DATA))[0] == SUCCESS
    assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, ENABLE_SET_0))[0] == SUCCESS


@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_extended_advertising_commands_are_listed_with_the_feature(controllers, legacy_only):
    """Read Local Supported Commands lists LE Set Advertising Set Random Address … LE Clear
    Advertising Sets (octet 36 bits 1–7, octet 37 bits 0–1) exactly when LE Extended
    Advertising (LE feature bit 12) is there (stock Bumble lists none of them)."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host:
            assert await host.command(OPCODE_RESET) == bytes([SUCCESS])
            octets = (await host.command(OPCODE_READ_LOCAL_SUPPORTED_COMMANDS))[1:]
            assert (octets[36] & 0xFE, octets[37] & 0x03) == ((0, 0) if legacy_only else (0xFE, 0x03))
            features = (await host.command(OPCODE_LE_READ_LOCAL_SUPPORTED_FEATURES))[1:]
            assert bool(features[1] & 0x10) == (not legacy_only)

    run(body())


def test_legacy_and_extended_advertising_commands_do_not_mix(controllers):
    """Vol 4 Part E §3.1.1: after an extended advertising command, legacy ones get Command
    Disallowed until a Reset, and the other way round."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host:
            await host.command(OPCODE_RESET)
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == SUCCESS
            assert await host.command(OPCODE_LE_SET_ADVERTISING_PARAMETERS, LEGACY_PARAMETERS) == bytes([COMMAND_DISALLOWED])
            assert await host.command(OPCODE_LE_SET_ADVERTISING_ENABLE, b"\x01") == bytes([COMMAND_DISALLOWED])
            await host.command(OPCODE_RESET)
            assert await host.command(OPCODE_LE_SET_ADVERTISING_PARAMETERS, LEGACY_PARAMETERS) == bytes([SUCCESS])
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == COMMAND_DISALLOWED
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, ENABLE_SET_0))[0] == COMMAND_DISALLOWED

    run(body())


def test_a_set_is_not_reconfigured_while_it_advertises(controllers):
    """LE Set Extended Advertising Parameters (§7.8.53) and, for a connectable set, LE Set
    Advertising Set Random Address (§7.8.52) get Command Disallowed while the set is enabled."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host:
            await host.command(OPCODE_RESET)
            await advertise_set_0(host)
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == COMMAND_DISALLOWED
            random_address = bytes([0x00]) + bytes.fromhex("0100000000C5")
            assert await host.command(OPCODE_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS, random_address) == bytes([COMMAND_DISALLOWED])
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, DISABLE_SET_0))[0] == SUCCESS
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == SUCCESS
            assert await host.command(OPCODE_LE_SET_ADVERTISING_SET_RANDOM_ADDRESS, random_address) == bytes([SUCCESS])

    run(body())


@pytest.mark.parametrize("le_event_mask, connection_subevent, terminated", [
    (0x1F, 0x01, False),  # the default after Reset: LE Connection Complete, no Terminated
    (0x1F | 1 << 9 | 1 << 17, 0x0A, True),  # LE Enhanced Connection Complete [v1], LE Advertising Set Terminated
    (0x1F | 1 << 9 | 1 << 40 | 1 << 17, 0x29, True),  # [v2]: names the set
], ids=["default-mask", "enhanced-v1", "enhanced-v2"])
def test_a_connection_to_a_set_is_reported_as_the_le_event_mask_asks(controllers, le_event_mask, connection_subevent,
                                                                     terminated):
    """§7.7.65.10: LE Enhanced Connection Complete replaces LE Connection Complete when unmasked;
    §7.7.65.18: LE Advertising Set Terminated follows it, naming set 0 and the connection, when
    unmasked (stock Bumble: always the legacy event, always Terminated)."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            await host.command(OPCODE_RESET)
            if le_event_mask != 0x1F:
                await host.command(OPCODE_LE_SET_EVENT_MASK, le_event_mask.to_bytes(8, "little"))
            await advertise_set_0(host)
            start = len(host.events)
            await central.connect(hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS),
                                  transport=PhysicalTransport.LE, timeout=5.0)
            await host.wait_for(lambda e: e[0] == 0x3E and e[2] in (0x01, 0x0A, 0x29), start)
            # Whatever the connection made the controller send comes before this command's answer.
            await host.command(OPCODE_READ_BD_ADDR)
            subevents = [e for e in host.le_subevents(start) if e[0] in (0x01, 0x0A, 0x29, 0x12)]
            assert [e[0] for e in subevents] == [connection_subevent] + ([0x12] if terminated else [])
            complete = subevents[0]
            assert complete[1] == SUCCESS and complete[4] == 0x01  # peripheral
            handle = complete[2:4]
            if connection_subevent == 0x29:
                assert complete[31] == 0x00, "the advertising handle"
            if terminated:
                assert subevents[1] == bytes([0x12, SUCCESS, 0x00]) + handle + bytes([0x00])

    run(body())
