"""Run-time advertising data (the `advertising_data` op, `gattctl advertise data`, the Python
client's `set_advertising_data`) on the H4 transports, on both link layers: the primary set's
manufacturer data changes while it advertises and a Bumble scanner receives the new bytes
(the H4 host rebuilds the set: disable, parameters, data, scan response, enable);
absent fields stay, an empty list removes one; data that does not fit is refused naming the
field and the bytes, and the set stays as it was (`status` and the air)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Awaitable, Callable

import pytest
from bumble.core import AdvertisingData

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src"))

from gattd_client import GattdClient, ValueTooLongError  # noqa: E402
from advertising_commands import (  # noqa: E402
    LEGACY_ON,
    SET_0_ON,
    advertising_commands,
    assert_one_kind,
    wait_for_enable,
)
from control_client import ControlClient  # noqa: E402
from gatt_central import central_device  # noqa: E402
from harness import (  # noqa: E402
    OPCODE_LE_SET_ADVERTISING_DATA,
    OPCODE_LE_SET_ADVERTISING_ENABLE,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE,
    GATTCTL,
    both_link_layers,
    from_address,
    gattctl,
    require_built,
    run,
    scan_for,
)


CONFIG = json.dumps({
    "name": "Counter",
    "advertising": {"interval_ms": [20, 30], "manufacturer_data": [{"company_id": 65535, "data": {"hex": "00"}}]},
    "advertising_sets": [{"id": "beacon", "connectable": False, "scannable": False,
                          "service_data": [{"uuid": "FEAA", "data": {"hex": "10f6"}}]}],
}, indent=2) + "\n"


def manufacturer(advertisement) -> tuple[int, bytes] | None:
    return advertisement.data.get(AdvertisingData.MANUFACTURER_SPECIFIC_DATA)


def primary_set(address: str) -> Callable[[object], bool]:
    from_gattd = from_address(address)
    return lambda a: from_gattd(a) and a.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "Counter"


async def seen_after(device, address: str, change: Callable[[], Awaitable[None]],
                     matches: Callable[[object], bool], timeout: float = 10.0):
    """Scans (the listener registered and scanning started first), makes the change, and
    returns the first advertisement of the primary set ("Counter") from `address` that
    `matches` (the beacon set is on the air from the same address)."""
    loop = asyncio.get_running_loop()
    found: asyncio.Future = loop.create_future()
    from_gattd = primary_set(address)

    def on_advertisement(advertisement) -> None:
        if not found.done() and from_gattd(advertisement) and matches(advertisement):
            found.set_result(advertisement)

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=False, filter_duplicates=False)
    try:
        await change()
        return await asyncio.wait_for(found, timeout)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()


@both_link_layers
@pytest.mark.parametrize("legacy_only", [False, True], ids=["extended-controllers", "legacy-controllers"])
def test_the_primarys_manufacturer_data_changes_on_the_air(controllers, gattd, tmp_path, legacy_only):
    require_built(GATTCTL)
    gattd(CONFIG)
    socket = tmp_path / "control.sock"
    address = controllers[0].address

    async def body():
        await wait_for_enable(controllers[0])
        control = await ControlClient.open(socket)
        async with central_device(controllers[1]) as device:
            first = await scan_for(device, primary_set(address), active=False)
            assert manufacturer(first) == (0xFFFF, b"\x00")

            # The op: new manufacturer data while advertising; the scanner receives it.
            async def op() -> None:
                reply = await control.request({"op": "advertising_data",
                                               "manufacturer_data": [{"company_id": 65535, "data": {"hex": "2a01"}}]})
                assert reply == {"ok": True}
            changed_at = time.time()
            counted = await seen_after(device, address, op, lambda a: manufacturer(a) == (0xFFFF, b"\x2a\x01"))
            # What the H4 host sent for it (set 0 on a Bluetooth 5 controller, the legacy commands
            # on a legacy-only one): the set rebuilt with the new data and enabled again.
            commands = advertising_commands(controllers[0], after=changed_at)
            enable, data = ((OPCODE_LE_SET_ADVERTISING_ENABLE, LEGACY_ON), OPCODE_LE_SET_ADVERTISING_DATA) if legacy_only \
                else ((OPCODE_LE_SET_EXTENDED_ADVERTISING_ENABLE, SET_0_ON), OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA)
            assert commands[-1] == enable, commands
            assert any(o == data and bytes.fromhex("05ffffff2a01") in p for o, p in commands), commands
            assert_one_kind(controllers[0], legacy_only)
            assert counted.is_connectable
            assert counted.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) == "Counter", "the other fields stay"

            # gattctl: the next counter value.
            async def cli() -> None:
                code, out, err = await gattctl(socket, "advertise", "data", "--manufacturer-data", "0xFFFF:2a02")
                assert (code, err) == (0, ""), err
            await seen_after(device, address, cli, lambda a: manufacturer(a) == (0xFFFF, b"\x2a\x02"))

            # The Python client: service data added, manufacturer data kept.
            async def client() -> None:
                async with GattdClient.connect(socket, wait=10) as gattd_client:
                    await gattd_client.set_advertising_data(service_data={"FEAA": b"\x10\x20"})
            both = await seen_after(device, address, client,
                                    lambda a: a.data.get(AdvertisingData.SERVICE_DATA_16_BIT_UUID) is not None)
            assert manufacturer(both) == (0xFFFF, b"\x2a\x02")
            assert both.data_bytes.endswith(bytes.fromhex("05 16 aa fe 10 20".replace(" ", "")))

        # Too long for 31 bytes: refused with the field and the bytes; nothing changes.
        before = await control.request({"op": "status"})
        reply = await control.request({"op": "advertising_data",
                                       "manufacturer_data": [{"company_id": 1, "data": {"hex": "ab" * 30}}]})
        assert reply["ok"] is False and reply["error"] == "value_too_long"
        assert reply["message"].startswith(
            "the new data does not fit, the set is unchanged: advertising.manufacturer_data[0]: needs 34 bytes"), reply
        code, _, err = await gattctl(socket, "advertise", "data", "--manufacturer-data", "1:" + "ab" * 30)
        assert code == 1 and "advertising.manufacturer_data[0]: needs 34 bytes" in err, err
        async with GattdClient.connect(socket, wait=10) as gattd_client:
            try:
                await gattd_client.set_advertising_data(manufacturer_data={1: bytes(30)})
                raise AssertionError("set_advertising_data accepted 34 bytes")
            except ValueTooLongError as error:
                assert "advertising.manufacturer_data[0]" in error.message
        after = await control.request({"op": "status"})
        assert after["sets"] == before["sets"]
        # A bad element: the path in the request.
        reply = await control.request({"op": "advertising_data", "set": "beacon", "service_data": [{"uuid": "FEAA"}]})
        assert reply["ok"] is False and reply["error"] == "invalid_value" and reply["message"] == "service_data[0].data: required key is missing"
        # An unknown set: as the advertise op says it.
        reply = await control.request({"op": "advertising_data", "set": "nope", "service_data": []})
        assert reply["message"] == 'no advertising set "nope"; the sets are "primary", "beacon"'
        # Another set's data (not on the air over H4 yet): status shows it; [] removes a field.
        assert await control.request({"op": "advertising_data", "set": "beacon", "service_data": []}) == {"ok": True}
        beacon = next(s for s in (await control.request({"op": "status"}))["sets"] if s["id"] == "beacon")
        assert beacon["advertising_data"]["hex"] == "020106"
        await control.close()

    run(body(), timeout=90)
