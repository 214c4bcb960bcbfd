"""Subscribing and unsubscribing through the CCCD; CCCD values are per connection.

config/test/gatt-full.json on a 3-controller link (gattd + two centrals).
"""

from __future__ import annotations

import pytest

from bumble import att

from gatt_central import (
    FULL_CONFIG,
    att_error,
    central,
    discover_everything,
    dump_link_logs,  # noqa: F401 (fixture)
    module_link,
    raw_request,
    wait_for_log,
)
from harness import LINK_LAYERS, find_characteristic, run

link = module_link(FULL_CONFIG, controller_count=3, link_layers=LINK_LAYERS)
pytestmark = pytest.mark.usefixtures("dump_link_logs")

NOTIFIER_UUID = "6E4A0016-B5A3-F393-E0A9-E50E24DCCA9E"
INDICATOR_UUID = "6E4A0017-B5A3-F393-E0A9-E50E24DCCA9E"
NOTIFIER_CCCD = 0x001F
INDICATOR_CCCD = 0x0022
LEVEL_CCCD = 0x002D


def test_subscribe_and_unsubscribe_notifications(link):
    async def body():
        log_start = len(link.gattd.log())
        async with central(link) as peer:
            await discover_everything(peer)
            notifier = find_characteristic(peer, NOTIFIER_UUID)
            assert notifier.get_descriptor(att.UUID("2902")).handle == NOTIFIER_CCCD
            await notifier.subscribe(lambda value: None)
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: subscribed to notifier$", start=log_start)
            assert await peer.gatt_client.read_value(NOTIFIER_CCCD) == b"\x01\x00"
            await notifier.unsubscribe()
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: unsubscribed from notifier$", start=log_start)
            assert await peer.gatt_client.read_value(NOTIFIER_CCCD) == b"\x00\x00"

    run(body())


def test_subscribe_to_indications(link):
    async def body():
        log_start = len(link.gattd.log())
        async with central(link) as peer:
            await discover_everything(peer)
            await find_characteristic(peer, INDICATOR_UUID).subscribe(lambda value: None)
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: subscribed to indicator \(indications\)$", start=log_start)
            assert await peer.gatt_client.read_value(INDICATOR_CCCD) == b"\x02\x00"
            # Writing the same value again changes nothing and logs nothing.
            response = await raw_request(peer, att.ATT_Write_Request(attribute_handle=INDICATOR_CCCD,
                                                                      attribute_value=b"\x02\x00"))
            assert response.op_code == att.Opcode.ATT_WRITE_RESPONSE
            log = link.gattd.log()[log_start:]
            assert log.count("subscribed to indicator (indications)") == 1

    run(body())


def test_cccd_is_per_connection(link):
    async def body():
        log_start = len(link.gattd.log())
        async with central(link, 1, "C0:00:00:00:00:01") as peer1:
            response = await raw_request(peer1, att.ATT_Write_Request(attribute_handle=LEVEL_CCCD,
                                                                       attribute_value=b"\x01\x00"))
            assert response.op_code == att.Opcode.ATT_WRITE_RESPONSE
            await wait_for_log(link.gattd, r"[0-9A-F:]{17}: subscribed to level$", start=log_start)
            async with central(link, 2, "C0:00:00:00:00:02") as peer2:
                assert await peer2.gatt_client.read_value(LEVEL_CCCD) == b"\x00\x00"
                assert await peer1.gatt_client.read_value(LEVEL_CCCD) == b"\x01\x00"
                # The second central subscribes to indications... which Battery Level does not have.
                response = await raw_request(peer2, att.ATT_Write_Request(attribute_handle=LEVEL_CCCD,
                                                                           attribute_value=b"\x02\x00"))
                att_error(response, 0x12, LEVEL_CCCD, 0xFD)
                assert await peer1.gatt_client.read_value(LEVEL_CCCD) == b"\x01\x00"
        # A new connection starts unsubscribed (no bonding).
        async with central(link, 1, "C0:00:00:00:00:01") as peer:
            assert await peer.gatt_client.read_value(LEVEL_CCCD) == b"\x00\x00"

    run(body())
