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
    both_link_layers,
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
@both_link_layers
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


@both_link_layers
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
@both_link_layers
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


@both_link_layers
def test_hci_reset_drops_connections_and_advertising(controllers, link_layer):
    # The old host's link ends with a supervision timeout on the Bumble link (HCI Reset drops
    # it silently); rootcanal removes a controller whose host went away and models that as
    # the peer powering off (LL_TERMINATE_IND, Remote Device Terminated due to Power Off).
    expected_reason = {"bumble": 0x08, "rootcanal": 0x15}[link_layer]

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
                assert await asyncio.wait_for(disconnected, 5) == expected_reason
                assert len(controllers[0].commands(OPCODE_RESET)) >= 2
                with pytest.raises(asyncio.TimeoutError):
                    await scan_for(central, from_address(PERIPHERAL_ADDRESS), timeout=1.0)

    run(body())


@both_link_layers
def test_command_log_records_exact_bytes(controllers):
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS):
            reset = controllers[0].commands(OPCODE_RESET)[0]
            assert reset.packet == bytes([0x01, 0x03, 0x0C, 0x00])

    run(body())



@both_link_layers
def test_disconnect_reasons_local_and_remote(controllers):
    """Disconnect (Vol 4 Part E §7.1.6) with Remote User Terminated Connection (0x13): the
    peer's Disconnection Complete carries 0x13, the disconnecting host's own carries
    Connection Terminated By Local Host (0x16), as controllers report it."""
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            add_test_service(peripheral)
            loop = asyncio.get_running_loop()
            remote = loop.create_future()
            peripheral.on("connection", lambda connection: connection.on(
                "disconnection", lambda reason: remote.done() or remote.set_result(reason)))
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA)
            peer = await connect(central, PERIPHERAL_ADDRESS)
            local = loop.create_future()
            peer.connection.on("disconnection", lambda reason: local.done() or local.set_result(reason))
            await peer.connection.disconnect(hci.HCI_ErrorCode.REMOTE_USER_TERMINATED_CONNECTION_ERROR)
            assert await asyncio.wait_for(local, 5) == hci.HCI_ErrorCode.CONNECTION_TERMINATED_BY_LOCAL_HOST_ERROR
            assert await asyncio.wait_for(remote, 5) == hci.HCI_ErrorCode.REMOTE_USER_TERMINATED_CONNECTION_ERROR

    run(body())


@both_link_layers
def test_rejected_encryption_is_pin_or_key_missing(controllers):
    """A central encrypts with a key the peripheral's host does not have: the peripheral's
    host answers LE Long Term Key Request Negative Reply, its Link Layer rejects with PIN or
    Key Missing (0x06), and the central's Encryption Change carries that status (Vol 6 Part B
    §5.1.3.1). Stock rootcanal 1.10.0 says Authentication Failure (0x05); corrected in
    rootcanal_controllers.py."""
    async def body():
        async with bumble_device(controllers[0], "peripheral", PERIPHERAL_ADDRESS) as peripheral, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            add_test_service(peripheral)  # no keys: it rejects every LTK request
            await peripheral.start_advertising(advertising_data=ADVERTISING_DATA)
            peer = await connect(central, PERIPHERAL_ADDRESS)
            failure = asyncio.get_running_loop().create_future()
            peer.connection.on("connection_encryption_failure",
                               lambda error: failure.done() or failure.set_result(error))
            await central.host.send_command(hci.HCI_LE_Enable_Encryption_Command(
                connection_handle=peer.connection.handle, random_number=bytes(8), encrypted_diversifier=0,
                long_term_key=bytes(range(16))), check_result=True)
            assert await asyncio.wait_for(failure, 5) == hci.HCI_ErrorCode.PIN_OR_KEY_MISSING_ERROR
            assert not peer.connection.is_encrypted
            assert await read(peer, READ_UUID) == b"hello"  # the link stays up

    run(body())


def cancels_after(controller: VirtualController, start: float) -> list:
    return [c for c in controller.commands(OPCODE_LE_CREATE_CONNECTION_CANCEL) if c.time >= start]


@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
@both_link_layers
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


@both_link_layers
def test_create_connection_cancel_without_attempt_is_disallowed(controllers):
    async def body():
        async with bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            with pytest.raises(hci.HCI_Error) as raised:
                await central.host.send_sync_command(hci.HCI_LE_Create_Connection_Cancel_Command())
            assert raised.value.error_code == hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR

    run(body())


# ----- Core Spec Vol 4 Part E §3.1.1: legacy and extended advertising commands never mix ------
LEGACY_ADVERTISING_PARAMETERS = hci.HCI_LE_Set_Advertising_Parameters_Command(
    advertising_interval_min=0x00A0, advertising_interval_max=0x00F0, advertising_type=0x00,  # ADV_IND
    own_address_type=0x00, peer_address_type=0x00, peer_address=hci.Address.ANY,
    advertising_channel_map=0x07, advertising_filter_policy=0x00)
EXTENDED_ADVERTISING_PARAMETERS = hci.HCI_LE_Set_Extended_Advertising_Parameters_Command(
    advertising_handle=0, advertising_event_properties=0x13,  # connectable, scannable, legacy PDUs
    primary_advertising_interval_min=0x00A0, primary_advertising_interval_max=0x00F0,
    primary_advertising_channel_map=0x07, own_address_type=0x00, peer_address_type=0x00,
    peer_address=hci.Address.ANY, advertising_filter_policy=0x00, advertising_tx_power=0x7F,
    primary_advertising_phy=hci.Phy.LE_1M, secondary_advertising_max_skip=0,
    secondary_advertising_phy=hci.Phy.LE_1M, advertising_sid=0, scan_request_notification_enable=0)
LEGACY_SCAN_PARAMETERS = hci.HCI_LE_Set_Scan_Parameters_Command(
    le_scan_type=1, le_scan_interval=0x0010, le_scan_window=0x0010, own_address_type=0x00,
    scanning_filter_policy=0x00)
EXTENDED_SCAN_PARAMETERS = hci.HCI_LE_Set_Extended_Scan_Parameters_Command(
    own_address_type=0x00, scanning_filter_policy=0x00, scanning_phys=0x01,
    scan_types=[1], scan_intervals=[0x0010], scan_windows=[0x0010])


async def command_status(device: Device, command: hci.HCI_Command) -> int:
    """Sends `command` as it is and returns the status of its Command Complete."""
    response = await device.host.send_command(command, check_result=False)
    parameters = response.return_parameters
    if isinstance(parameters, (bytes, bytearray)):
        return parameters[0]
    return int(parameters) if isinstance(parameters, int) else int(parameters.status)


@both_link_layers
def test_legacy_and_extended_advertising_commands_never_mix(controllers, link_layer):
    """Vol 4 Part E §3.1.1: once the host used an extended advertising command since the last
    reset, a legacy advertising (or scanning) command gets Command Disallowed (0x0C), and the
    other way round; HCI Reset clears the choice. rootcanal enforces it as it comes; the Bumble
    link enforces it too (virtual_controllers.py: stock Bumble accepts both). The host here is
    raw HCI, so nothing but the commands below chooses."""
    SUCCESS = hci.HCI_ErrorCode.SUCCESS
    DISALLOWED = hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR

    async def body():
        async with bumble_device(controllers[0], "raw-host", PERIPHERAL_ADDRESS) as device:
            # Extended first: legacy advertising and scanning are refused from then on.
            assert await command_status(device, EXTENDED_ADVERTISING_PARAMETERS) == SUCCESS
            assert await command_status(device, LEGACY_ADVERTISING_PARAMETERS) == DISALLOWED
            assert await command_status(device, hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=1)) \
                == DISALLOWED
            assert await command_status(device, LEGACY_SCAN_PARAMETERS) == DISALLOWED
            assert await command_status(device, EXTENDED_SCAN_PARAMETERS) == SUCCESS

            # After HCI Reset the host may choose again: legacy, then extended is refused.
            assert await command_status(device, hci.HCI_Reset_Command()) == SUCCESS
            assert await command_status(device, LEGACY_ADVERTISING_PARAMETERS) == SUCCESS
            assert await command_status(device, hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=1)) \
                == SUCCESS
            assert await command_status(device, EXTENDED_ADVERTISING_PARAMETERS) == DISALLOWED
            assert await command_status(device, EXTENDED_SCAN_PARAMETERS) == DISALLOWED
            assert await command_status(device, LEGACY_SCAN_PARAMETERS) == SUCCESS
            assert await command_status(device, hci.HCI_LE_Set_Advertising_Enable_Command(advertising_enable=0)) \
                == SUCCESS


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


@pytest.mark.parametrize("link_layer", ["bumble"])
@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_the_connection_parameters_request_procedure_is_not_listed(controllers, legacy_only, link_layer):
    """Stock Bumble lists the Connection Parameters Request procedure (LE feature bit 1) but, as
    peripheral, carries out LE Connection Update with an LL_CONNECTION_UPDATE_IND of its own,
    which only a central may send; the harness unlists it, so a peripheral host asks with the
    L2CAP request, which the central can refuse. LE Encryption (bit 0) stays."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host:
            assert await host.command(OPCODE_RESET) == bytes([SUCCESS])
            features = (await host.command(OPCODE_LE_READ_LOCAL_SUPPORTED_FEATURES))[1:]
            assert (features[0] & 0x01, features[0] & 0x02) == (0x01, 0)

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


OPCODE_SET_EVENT_MASK = 0x0C01
# Set 1: legacy ADV_NONCONN_IND (properties 0x0010), otherwise as set 0, SID 1.
SET_1_PARAMETERS = bytes([0x01, 0x10, 0x00]) + SET_0_PARAMETERS[3:-2] + bytes([0x01, 0x00])
SET_1_DATA = bytes([0x01]) + SET_0_DATA[1:]


@both_link_layers
def test_a_connection_ends_the_connectable_set_and_leaves_the_others(controllers):
    """Of several sets advertising with one address, a connection comes from the connectable
    one: LE Advertising Set Terminated names set 0 after LE Enhanced Connection Complete,
    and the non-connectable set 1, enabled first, still advertises (its parameters are
    refused while it is enabled, §7.8.53). Stock Bumble ends the first enabled set."""
    async def body():
        async with await RawHost.open(controllers[0].port) as host, \
                bumble_device(controllers[1], "central", CENTRAL_ADDRESS) as central:
            await host.command(OPCODE_RESET)
            # The LE Meta event (bit 61) is masked after Reset (Vol 4 Part E §7.3.1); rootcanal obeys.
            await host.command(OPCODE_SET_EVENT_MASK, (0x1FFFFFFFFFFF | 1 << 61).to_bytes(8, "little"))
            await host.command(OPCODE_LE_SET_EVENT_MASK, (0x1F | 1 << 9 | 1 << 17).to_bytes(8, "little"))
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_1_PARAMETERS))[0] == SUCCESS
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA, SET_1_DATA))[0] == SUCCESS
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, bytes([0x01, 0x01, 0x01, 0, 0, 0])))[0] == SUCCESS
            await advertise_set_0(host)
            start = len(host.events)
            await central.connect(hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS),
                                  transport=PhysicalTransport.LE, timeout=5.0)
            await host.wait_for(lambda e: e[0] == 0x3E and e[2] == 0x12, start)
            subevents = [e for e in host.le_subevents(start) if e[0] in (0x0A, 0x12)]
            assert [e[0] for e in subevents] == [0x0A, 0x12]
            assert subevents[1][:3] == bytes([0x12, SUCCESS, 0x00]), "set 0 terminated"
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_1_PARAMETERS))[0] == COMMAND_DISALLOWED
            assert (await host.command(OPCODE_LE_SET_EXTENDED_ADVERTISING_PARAMETERS, SET_0_PARAMETERS))[0] == SUCCESS

    run(body())
