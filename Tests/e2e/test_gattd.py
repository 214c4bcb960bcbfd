"""gattd against the virtual controllers, driven by a Bumble central: reset and advertise,
serve reads, take two centrals, restart after a kill."""

from __future__ import annotations

import time

import pytest

from bumble.core import UUID, AdvertisingData

from advertising_commands import wait_for_enable
from harness import (
    OPCODE_LE_SET_ADVERTISING_DATA,
    OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA,
    OPCODE_RESET,
    ad_structures,
    both_link_layers,
    bumble_device,
    connect,
    named,
    read,
    run,
    scan_for,
)

CONFIG = """{
  "name": "E2E Demo",
  "advertising": { "local_name": "E2E-HR", "service_uuids": ["180D"], "interval_ms": [20, 30] },
  "services": [
    { "id": "hr", "uuid": "180D", "characteristics": [
        { "id": "hr_measurement", "uuid": "2A37", "properties": ["notify"], "value": { "hex": "0048" } } ] },
    { "id": "battery", "uuid": "180F", "characteristics": [
        { "id": "level", "uuid": "2A19", "properties": ["read", "notify"], "value": { "hex": "64" } } ] }
  ]
}
"""


def advertising_data_sent(controller) -> bytes | None:
    """The advertising data gattd last gave the controller (legacy or extended command)."""
    legacy = controller.last_command(OPCODE_LE_SET_ADVERTISING_DATA)
    extended = controller.last_command(OPCODE_LE_SET_EXTENDED_ADVERTISING_DATA)
    if extended and (not legacy or extended.time > legacy.time):
        # handle, operation, fragment preference, length, data
        return extended.parameters[4:4 + extended.parameters[3]]
    if legacy:
        return legacy.parameters[1:1 + legacy.parameters[0]]
    return None


@both_link_layers
def test_gattd_resets_controller_and_advertises(controllers, gattd):
    gattd(CONFIG, controller=0)

    async def body():
        await controllers[0].wait_for_command(OPCODE_RESET)
        async with bumble_device(controllers[1]) as central:
            advertisement = await scan_for(central, named("E2E-HR"))
            assert advertisement.is_connectable
            uuids = advertisement.data.get(AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS) or \
                advertisement.data.get(AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS)
            assert UUID("180D") in uuids
        data = advertising_data_sent(controllers[0])
        assert data is not None
        assert (0x09, b"E2E-HR") in ad_structures(data) or (0x08, b"E2E-HR") in ad_structures(data)

    run(body())


@both_link_layers
def test_gattd_serves_reads(controllers, gattd):
    gattd(CONFIG, controller=0)

    async def body():
        async with bumble_device(controllers[1]) as central:
            advertisement = await scan_for(central, named("E2E-HR"))
            peer = await connect(central, advertisement.address)
            service_uuids = {service.uuid for service in peer.services}
            assert {UUID("1800"), UUID("1801"), UUID("180D"), UUID("180F")} <= service_uuids
            assert await read(peer, "2A19") == b"\x64"

    run(body())


@both_link_layers
@pytest.mark.parametrize("controller_count", [3])
def test_gattd_takes_two_centrals(controllers, gattd):
    gattd(CONFIG, controller=0)

    async def body():
        async with bumble_device(controllers[1], "central-1", "C0:00:00:00:00:01") as central1, \
                bumble_device(controllers[2], "central-2", "C0:00:00:00:00:02") as central2:
            advertisement = await scan_for(central1, named("E2E-HR"))
            peer1 = await connect(central1, advertisement.address)
            # gattd advertises again after the first connection.
            advertisement = await scan_for(central2, named("E2E-HR"))
            peer2 = await connect(central2, advertisement.address)
            assert await read(peer1, "2A19") == b"\x64"
            assert await read(peer2, "2A19") == b"\x64"

    run(body())


@both_link_layers
def test_gattd_restart_resets_and_advertises_again(controllers, gattd):
    first = gattd(CONFIG, controller=0)

    async def body():
        async with bumble_device(controllers[1]) as central:
            await scan_for(central, named("E2E-HR"))
            first.kill()
            restarted_at = time.time()
            gattd(CONFIG, controller=0)
            await controllers[0].wait_for_command(OPCODE_RESET, after=restarted_at)
            # The reset stopped the killed gattd's advertising; the new one advertises again.
            await wait_for_enable(controllers[0], after=restarted_at)
            advertisement = await scan_for(central, named("E2E-HR"))
            peer = await connect(central, advertisement.address)
            assert await read(peer, "2A19") == b"\x64"

    run(body())
