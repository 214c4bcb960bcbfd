"""What a scanner sees of gattd, and the exact advertising commands the controller received:
advertising set 0 with legacy PDUs on a Bluetooth 5 (extended advertising) controller, the
legacy commands on a legacy-only one, never both (advertising_commands.py).

The expected payloads are written out by hand from AdvertisingPayloadBuilder's documented
rules (flags first, then the name, service UUIDs, manufacturer data...; a name that does not
fit is shortened in the advertising data and complete in the scan response; an iBeacon alone
is ADV_NONCONN_IND with flags + iBeacon and no scan response).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from bumble import core, hci
from bumble.core import UUID, AdvertisingData

from advertising_commands import ADV_IND, ADV_NONCONN_IND, assert_advertised, assert_one_kind, wait_for_enable
from gatt_central import CONFIG_DIR, FULL_CONFIG, central_device, connect_peer
from harness import (
    OPCODE_LE_CREATE_CONNECTION_CANCEL,
    REPO_ROOT,
    ad_structures,
    both_link_layers,
    from_address,
    run,
    scan_for,
    with_scan_response,
)

IBEACON_CONFIG = REPO_ROOT / "config" / "ibeacon.json"
LONG_NAME_CONFIG = CONFIG_DIR / "long-name.json"

# config/test/gatt-full.json: name, 16-bit UUID list, manufacturer data; no scan response.
FULL_ADVERTISING = bytes.fromhex("020106" "0b09" + b"gattd-test".hex() + "0303 0f18" "05ff ffff 0102".replace(" ", ""))
# config/test/long-name.json: the 28-byte name does not fit next to the flags (28 bytes
# left, it needs 30), so it is cut to what leaves room for the UUIDs and the manufacturer
# data (13 bytes: 31 bytes used) and the complete name is the scan response (30 bytes).
LONG_NAME_ADVERTISING = bytes.fromhex("020106" "0e08" + b"Kitchen Windo".hex() + "03031a18" "08ffffff0102030405")
LONG_NAME_SCAN_RESPONSE = bytes.fromhex("1d09" + b"Kitchen Window Thermometer 7".hex())
# config/ibeacon.json: Apple's layout, 30 bytes.
IBEACON_UUID = bytes.fromhex("e2c56db5dffb48d2b060d0f5a71096e0")
IBEACON_ADVERTISING = bytes.fromhex("020106" "1aff4c000215") + IBEACON_UUID + bytes.fromhex("0001" "0002" "c5")

BOTH_KINDS = pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])


async def wait_until_advertising(controller) -> None:
    await wait_for_enable(controller)


@both_link_layers
@BOTH_KINDS
def test_scan_sees_name_services_manufacturer_data_and_flags(controllers, gattd, legacy_only):
    gattd(FULL_CONFIG)

    async def body():
        await wait_until_advertising(controllers[0])
        async with central_device(controllers[1]) as device:
            advertisement = await scan_for(device, from_address(controllers[0].address), active=False)
            assert advertisement.is_connectable
            assert str(advertisement.address) == "F0:F0:F0:F0:F0:00/P"
            assert advertisement.data_bytes == FULL_ADVERTISING
            assert ad_structures(advertisement.data_bytes)[0] == (0x01, b"\x06")
            assert advertisement.data.get(AdvertisingData.FLAGS) == 0x06
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "gattd-test"
            assert advertisement.data.get(AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS) == \
                [UUID("180F")]
            assert advertisement.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA) == (0xFFFF, b"\x01\x02")
            # Active scanning: an empty scan response.
            response = await scan_for(device, with_scan_response(from_address(controllers[0].address)))
            assert response.data_bytes == b""

        # interval_ms [20, 30] = 32 and 48 units of 0.625 ms; ADV_IND, an empty scan response.
        assert_advertised(controllers[0], legacy_only, (0x0020, 0x0030), ADV_IND, FULL_ADVERTISING, b"")

    run(body())


@both_link_layers
@BOTH_KINDS
def test_a_central_finds_connects_reads_and_advertising_resumes(controllers, gattd, legacy_only):
    """Set 0 (or legacy advertising) ends with the connection; gattd turns it on again for
    the next central; one kind of advertising commands over the whole session."""
    gattd(FULL_CONFIG)

    async def body():
        await wait_until_advertising(controllers[0])
        async with central_device(controllers[1]) as device:
            advertisement = await scan_for(device, from_address(controllers[0].address))
            assert advertisement.is_connectable
            connecting_at = time.time()
            peer = await connect_peer(device, advertisement.address)
            assert await peer.gatt_client.read_value(0x002C) == b"\x64"  # Battery Level
            await wait_for_enable(controllers[0], after=connecting_at)
            again = await scan_for(device, from_address(controllers[0].address), active=False)
            assert again.data_bytes == FULL_ADVERTISING
            await peer.connection.disconnect()
        assert_one_kind(controllers[0], legacy_only)

    run(body())


@both_link_layers
@BOTH_KINDS
def test_long_name_is_shortened_with_complete_name_in_scan_response(controllers, gattd, legacy_only):
    gattd_process = gattd(LONG_NAME_CONFIG)

    async def body():
        await wait_until_advertising(controllers[0])
        # The log line names what is on the air, not the configured name.
        await gattd_process.wait_for_log(
            r'advertising as "Kitchen Windo" \(shortened local name of "Kitchen Window Thermometer 7", '
            r"complete name in the scan response; 16-bit service UUIDs complete\)")
        async with central_device(controllers[1]) as device:
            # Passive: the advertising data alone, with the Shortened Local Name (0x08).
            advertisement = await scan_for(device, from_address(controllers[0].address), active=False)
            assert advertisement.data_bytes == LONG_NAME_ADVERTISING
            assert advertisement.data.get(AdvertisingData.SHORTENED_LOCAL_NAME) == "Kitchen Windo"
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) is None
            # Active: the scan response carries the Complete Local Name (0x09).
            response = await scan_for(device, with_scan_response(from_address(controllers[0].address)))
            assert response.data_bytes == LONG_NAME_SCAN_RESPONSE
            assert response.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "Kitchen Window Thermometer 7"
            assert response.data.get(AdvertisingData.SHORTENED_LOCAL_NAME) == "Kitchen Windo"

        # interval_ms [20, 30].
        assert_advertised(controllers[0], legacy_only, (0x0020, 0x0030), ADV_IND, LONG_NAME_ADVERTISING,
                          LONG_NAME_SCAN_RESPONSE)

    run(body())


@both_link_layers
@BOTH_KINDS
def test_ibeacon_is_seen_non_connectable(controllers, gattd, legacy_only):
    gattd_process = gattd(IBEACON_CONFIG)

    async def body():
        await wait_until_advertising(controllers[0])
        await gattd_process.wait_for_log(r"advertising an iBeacon \(non-connectable, no local name\)")
        assert "advertising as" not in gattd_process.log()
        async with central_device(controllers[1]) as device:
            advertisement = await scan_for(device, from_address(controllers[0].address))
            assert not advertisement.is_connectable
            assert not advertisement.is_scannable
            assert advertisement.data_bytes == IBEACON_ADVERTISING
            company, beacon = advertisement.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA)
            assert company == 0x004C
            assert beacon[0:2] == b"\x02\x15"
            assert beacon[2:18] == IBEACON_UUID  # e2c56db5-dffb-48d2-b060-d0f5a71096e0
            assert int.from_bytes(beacon[18:20], "big") == 1  # major
            assert int.from_bytes(beacon[20:22], "big") == 2  # minor
            assert beacon[22] - 256 == -59  # measured power
            assert advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) is None
            # Not connectable: like a real initiator, the central's controller never sends a
            # CONNECT_IND to ADV_NONCONN_IND, so the attempt does not complete; after 1 s
            # Bumble gives up with LE Create Connection Cancel and the attempt fails.
            attempt_started = time.time()
            with pytest.raises(core.TimeoutError):
                await asyncio.wait_for(
                    connect_peer(device, hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS),
                                 timeout=1.0),
                    5)
            cancels = [c for c in controllers[1].commands(OPCODE_LE_CREATE_CONNECTION_CANCEL)
                       if c.time >= attempt_started]
            assert len(cancels) == 1
            # Asserts that nothing happens (no late connection on either side), so this waits
            # a bounded time: 0.3 s, where the virtual link delivers a connection in ms.
            await asyncio.sleep(0.3)
            assert len(device.connections) == 0
            # Still advertising: gattd's controller saw no connection either.
            again = await scan_for(device, from_address(controllers[0].address), active=False)
            assert again.data_bytes == IBEACON_ADVERTISING

        assert "connected:" not in gattd_process.log()
        # Default interval [100, 150] ms = 160 and 240 units; ADV_NONCONN_IND: no scan response.
        assert_advertised(controllers[0], legacy_only, (0x00A0, 0x00F0), ADV_NONCONN_IND, IBEACON_ADVERTISING, None)

    run(body())
