"""The config's `eatt` switch and `notify` with several values, end to end on H4: Server
Supported Features (0x2B3A, handle 0x000F) says EATT Supported by default and not with
`"eatt": false`, with every handle where it was; a `notify` naming two values reaches a
central that does not take Multiple Handle Value Notifications as two notifications.
(The EATT bearers themselves: test_eatt*.py with Bumble's EATT client.)"""

from __future__ import annotations

import asyncio

import pytest

from control_client import ControlClient, hex_value
from harness import bumble_device, connect, named, read, run, scan_for, subscribe

SERVER_SUPPORTED_FEATURES = 0x000F


def uuid(n: int) -> str:
    return f"7a1d{n:04x}-0000-4000-8000-000000000000"


def config(eatt: bool | None) -> str:
    switch = "" if eatt is None else f'"eatt": {"true" if eatt else "false"},'
    return """{
  "name": "EATT Switch", %s
  "advertising": { "local_name": "EATTSW", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "%s", "characteristics": [
        { "id": "a", "uuid": "%s", "properties": ["read", "notify"], "max_length": 20, "value": { "hex": "00" } },
        { "id": "b", "uuid": "%s", "properties": ["read", "notify"], "max_length": 20, "value": { "hex": "00" } } ] }
  ]
}
""" % (switch, uuid(0), uuid(1), uuid(2))


@pytest.mark.parametrize("eatt, bit", [(None, b"\x01"), (True, b"\x01"), (False, b"\x00")])
def test_server_supported_features_follows_the_switch(controllers, gattd, eatt, bit):
    gattd(config(eatt))

    async def body():
        async with bumble_device(controllers[1], "central", "C0:00:00:00:00:01") as device:
            peer = await connect(device, (await scan_for(device, named("EATTSW"))).address)
            assert bytes(await peer.gatt_client.read_value(SERVER_SUPPORTED_FEATURES)) == bit
            # The first user characteristic's value is at 0x0012 whatever the switch says.
            assert bytes(await peer.gatt_client.read_value(0x0012)) == b"\x00"
            assert bytes(await read(peer, uuid(1))) == b"\x00"

    run(body())


def test_notify_with_several_values(controllers, gattd, tmp_path):
    gattd(config(None))

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        async with bumble_device(controllers[1], "central", "C0:00:00:00:00:01") as device:
            peer = await connect(device, (await scan_for(device, named("EATTSW"))).address)
            got_a = await subscribe(peer, uuid(1))
            got_b = await subscribe(peer, uuid(2))
            reply = await control.request({"op": "notify", "values": [
                {"characteristic": "a", "value": hex_value(b"\x11\x12")},
                {"characteristic": "b", "value": hex_value(b"\x21")}], "id": 1})
            assert reply == {"ok": True, "sent": 1, "id": 1}
            # Bumble sets no Client Supported Features bit 2: one notification per value.
            assert await asyncio.wait_for(got_a.get(), 5) == b"\x11\x12"
            assert await asyncio.wait_for(got_b.get(), 5) == b"\x21"
            # All or nothing: one value too long, nothing changes.
            reply = await control.request({"op": "notify", "values": [
                {"characteristic": "a", "value": hex_value(b"\x01")},
                {"characteristic": "b", "value": hex_value(bytes(21))}]})
            assert reply["ok"] is False and reply["error"] == "value_too_long"
            assert (await control.request({"op": "get", "characteristic": "a"}))["value"] == {"hex": "1112"}
        await control.close()

    run(body())
