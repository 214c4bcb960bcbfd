"""Per-central link control (issue 33): each link's interval, latency, timeout, PHYs and data
length in `status` and as `link` events; the `connection_parameters` op.
"""

from __future__ import annotations

import asyncio

from control_client import ControlClient
from harness import both_link_layers, bumble_device, connect, named, run, scan_for, wait_for_log

CONFIG = """{
  "name": "Link Test",
  "advertising": { "local_name": "LINK", "interval_ms": [20, 30] },
  "services": [
    { "id": "svc", "uuid": "7a1c0000-0000-4000-8000-000000000000", "characteristics": [
        { "id": "value", "uuid": "7a1c0001-0000-4000-8000-000000000000", "properties": ["read"], "value": { "utf8": "v" } } ] }
  ]
}
"""

CENTRAL = "C0:00:00:00:00:01"
LINK_FIELDS = ["interval_ms", "latency", "timeout_ms", "tx_phy", "rx_phy", "tx_octets", "rx_octets"]


async def connect_central(controllers, address=CENTRAL):
    device_cm = bumble_device(controllers[1], "central", address)
    device = await device_cm.__aenter__()
    advertisement = await scan_for(device, named("LINK"))
    peer = await connect(device, advertisement.address)
    return device_cm, peer


async def close_central(device_cm, peer):
    try:
        await asyncio.wait_for(peer.connection.disconnect(), 5)
    except Exception:
        pass
    await device_cm.__aexit__(None, None, None)


def link_of(event_or_central: dict) -> dict:
    return {k: event_or_central[k] for k in LINK_FIELDS}


async def link_event_where(control: ControlClient, matches, timeout: float = 10.0) -> dict:
    """The first `link` event for which `matches` holds (gattd's own 2M PHY request and the
    data length change may come first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        event = await control.event("link", timeout=max(0.1, deadline - loop.time()))
        if matches(event):
            return event


@both_link_layers
def test_status_and_link_events_show_each_links_parameters(controllers, gattd, tmp_path):
    process = gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        connection = peer.connection
        await control.event("connected")
        # The first link event: what LE Connection Complete said, LE 1M and 27 octets.
        first = await control.event("link")
        assert first["central"] == CENTRAL
        assert all(first[k] is not None for k in LINK_FIELDS)
        assert (first["tx_phy"], first["rx_phy"], first["tx_octets"], first["rx_octets"]) == ("1m", "1m", 27, 27)
        # gattd asks each new link for LE 2M: the PHY update is seen as a link event.
        phy = await link_event_where(control, lambda e: e["tx_phy"] == "2m")
        assert (phy["tx_phy"], phy["rx_phy"]) == ("2m", "2m")
        await wait_for_log(process, rf"{CENTRAL}: link interval .* PHY 2M/2M")
        status = await control.request({"op": "status"})
        [central] = status["connections"]
        assert link_of(central)["tx_phy"] == "2m"
        assert central["interval_ms"] >= 7.5
        assert isinstance(central["tx_octets"], int) and central["tx_octets"] >= 27

        # The central changes the parameters on its own: 45 ms, latency 1, 3 s.
        await connection.device.update_connection_parameters(connection, 45, 45, 1, 3000)
        changed = await link_event_where(control, lambda e: e["interval_ms"] == 45)
        assert (changed["latency"], changed["timeout_ms"]) == (1, 3000)
        [central] = (await control.request({"op": "status"}))["connections"]
        assert (central["interval_ms"], central["latency"], central["timeout_ms"]) == (45, 1, 3000)
        await close_central(device_cm, peer)
        await control.close()

    run(body())
