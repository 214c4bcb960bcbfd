"""Per-central link control (issue 33): each link's interval, latency, timeout, PHYs and data
length in `status` and as `link` events; the `connection_parameters` op.
"""

from __future__ import annotations

import asyncio

import pytest

from control_client import ControlClient
from harness import both_link_layers, bumble_device, connect, gattctl, named, run, scan_for, wait_for_log

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


async def connect_central(controllers, address=CENTRAL, index=1):
    device_cm = bumble_device(controllers[index], "central", address)
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


OPCODE_LE_CONNECTION_UPDATE = 0x2013


def refuse_parameter_updates(device) -> None:
    """Make a Bumble central refuse every connection parameter change its peripheral asks
    for: the L2CAP Connection Parameter Update Request (result 1, rejected) and the LL
    Connection Parameters Request procedure (LE Remote Connection Parameter Request Negative
    Reply, Unacceptable Connection Parameters)."""
    from bumble import hci, l2cap

    manager = device.l2cap_channel_manager

    def reject(connection, cid, request):
        manager.send_control_frame(connection, cid, l2cap.L2CAP_Connection_Parameter_Update_Response(
            identifier=request.identifier, result=l2cap.L2CAP_CONNECTION_PARAMETERS_REJECTED_RESULT))

    manager.on_l2cap_connection_parameter_update_request = reject

    def negative_reply(event):
        asyncio.get_running_loop().create_task(device.host.send_command(
            hci.HCI_LE_Remote_Connection_Parameter_Request_Negative_Reply_Command(
                connection_handle=event.connection_handle, reason=hci.HCI_UNACCEPTABLE_CONNECTION_PARAMETERS_ERROR)))

    device.host.on_hci_le_remote_connection_parameter_request_event = negative_reply


@both_link_layers
def test_a_preset_accepted_by_the_central_is_seen_as_an_event_and_in_status(controllers, gattd, tmp_path):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        await control.event("connected")
        reply = await control.request({"op": "connection_parameters", "central": CENTRAL, "preset": "low_latency", "id": 1}, timeout=25)
        assert reply == {"ok": True, "id": 1}
        event = await link_event_where(control, lambda e: e["interval_ms"] == 15)
        assert (event["central"], event["latency"], event["timeout_ms"]) == (CENTRAL, 0, 2000)
        [central] = (await control.request({"op": "status"}))["connections"]
        assert (central["interval_ms"], central["latency"], central["timeout_ms"]) == (15, 0, 2000)
        assert peer.connection.parameters.connection_interval == 15
        # What the link has already: accepted at once (no update would be reported), not a timeout.
        again = await control.request({"op": "connection_parameters", "central": CENTRAL, "preset": "low_latency"}, timeout=5)
        assert again == {"ok": True}
        # Without "central": every connected central (here the one).
        assert await control.request({"op": "connection_parameters", "preset": "balanced"}, timeout=25) == {"ok": True}
        [central] = (await control.request({"op": "status"}))["connections"]
        assert 30 <= central["interval_ms"] <= 50 and central["timeout_ms"] == 5000
        await close_central(device_cm, peer)
        await control.close()

    run(body())


@pytest.mark.parametrize("controller_count", [3])
@both_link_layers
def test_one_central_made_fast_and_another_slow_both_seen_in_status_and_watch(controllers, gattd, tmp_path):
    """The issue's acceptance: a program makes one central fast and another slow, and sees
    both, each with its own values, in `status` and as `link` events."""
    gattd(CONFIG)
    second = "C0:00:00:00:00:02"

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        fast_cm, fast = await connect_central(controllers)
        await control.event("connected")
        slow_cm, slow = await connect_central(controllers, second, index=2)
        await control.event("connected")
        assert await control.request({"op": "connection_parameters", "central": CENTRAL, "preset": "low_latency"}, timeout=25) == {"ok": True}
        assert await control.request({"op": "connection_parameters", "central": second, "preset": "low_power"}, timeout=25) == {"ok": True}
        seen = {}
        while set(seen) != {CENTRAL, second}:
            event = await link_event_where(control, lambda e: e["interval_ms"] == 15 or e["interval_ms"] >= 120)
            seen[event["central"]] = (event["interval_ms"], event["latency"], event["timeout_ms"])
        assert seen[CENTRAL] == (15, 0, 2000)
        assert 120 <= seen[second][0] <= 150 and seen[second][1:] == (2, 6000)
        centrals = {c["central"]: c for c in (await control.request({"op": "status"}))["connections"]}
        assert (centrals[CENTRAL]["interval_ms"], centrals[CENTRAL]["timeout_ms"]) == (15, 2000)
        assert 120 <= centrals[second]["interval_ms"] <= 150 and (centrals[second]["latency"], centrals[second]["timeout_ms"]) == (2, 6000)
        assert fast.connection.parameters.connection_interval == 15
        assert 120 <= slow.connection.parameters.connection_interval <= 150
        await close_central(slow_cm, slow)
        await close_central(fast_cm, fast)
        await control.close()

    run(body())


@both_link_layers
def test_parameters_outside_apples_rules_and_bad_requests_are_refused_before_anything_is_sent(controllers, gattd, tmp_path):
    process = gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        # No central connected: nobody to ask.
        reply = await control.request({"op": "connection_parameters", "preset": "low_power"})
        assert (reply["ok"], reply["error"]) == (False, "unknown_central")
        device_cm, peer = await connect_central(controllers)
        await wait_for_log(process, rf"connected: {CENTRAL}")
        # 11.25 ms is within the Core Specification but below Apple's 15 ms.
        reply = await control.request({"op": "connection_parameters", "central": CENTRAL, "interval_ms": [11.25, 30], "latency": 0, "timeout_ms": 2000})
        assert reply["ok"] is False and reply["error"] == "invalid_value"
        assert "Interval Min ≥ 15 ms" in reply["message"] and "nothing was sent" in reply["message"]
        reply = await control.request({"op": "connection_parameters", "central": CENTRAL, "interval_ms": [30, 45], "latency": 0, "timeout_ms": 50})
        assert reply["error"] == "invalid_value" and "supervision timeout" in reply["message"]
        reply = await control.request({"op": "connection_parameters", "central": CENTRAL, "preset": "fast"})
        assert reply["error"] == "invalid_value" and "low_latency" in reply["message"]
        reply = await control.request({"op": "connection_parameters", "central": "C0:00:00:00:00:09", "preset": "low_power"})
        assert reply["error"] == "unknown_central"
        assert controllers[0].commands(OPCODE_LE_CONNECTION_UPDATE) == []
        assert "asking for interval" not in process.log()
        # Two at once for one central: the second is refused, the first goes on.
        control.send({"op": "connection_parameters", "central": CENTRAL, "preset": "low_power", "id": "a"})
        control.send({"op": "connection_parameters", "central": CENTRAL, "preset": "balanced", "id": "b"})
        first, second = await control.reply(25), await control.reply(25)
        assert first == {"ok": True, "id": "a"}
        assert (second["ok"], second["error"], second["id"]) == (False, "busy", "b")
        await close_central(device_cm, peer)
        await control.close()

    run(body())


@both_link_layers
def test_explicit_values_rejected_by_a_central_that_refuses(controllers, gattd, tmp_path, link_layer):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        refuse_parameter_updates(peer.connection.device)
        reply = await control.request({"op": "connection_parameters", "central": CENTRAL, "interval_ms": [30, 45], "latency": 2, "timeout_ms": 4000}, timeout=25)
        assert reply["ok"] is False and reply["error"] == "refused", reply
        assert reply["message"].startswith(CENTRAL)
        [central] = (await control.request({"op": "status"}))["connections"]
        assert central["latency"] == 0
        await close_central(device_cm, peer)
        await control.close()

    run(body())


@both_link_layers
def test_phy_requests(controllers, gattd, tmp_path, link_layer):
    process = gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        # gattd's own request for LE 2M on each new link comes first.
        await link_event_where(control, lambda e: e["tx_phy"] == "2m")
        assert await control.request({"op": "phy", "central": CENTRAL, "phy": "1m"}, timeout=25) == {"ok": True}
        event = await link_event_where(control, lambda e: e["tx_phy"] == "1m")
        assert event["rx_phy"] == "1m"
        assert await control.request({"op": "phy", "central": CENTRAL, "tx": "2m", "rx": "2m"}, timeout=25) == {"ok": True}
        await link_event_where(control, lambda e: e["tx_phy"] == "2m")
        [central] = (await control.request({"op": "status"}))["connections"]
        assert (central["tx_phy"], central["rx_phy"]) == ("2m", "2m")
        # LE Coded, S=8: both link layers list it; the central picks what it takes.
        reply = await control.request({"op": "phy", "central": CENTRAL, "phy": "coded_s8"}, timeout=25)
        assert reply == {"ok": True}
        chosen = await control.event("link")
        await close_central(device_cm, peer)
        await control.close()
        return chosen

    chosen = run(body())
    if link_layer == "rootcanal":
        assert (chosen["tx_phy"], chosen["rx_phy"]) == ("coded", "coded")
        assert "PHY CODED/CODED" in process.log()
    else:
        # Bumble's link layer completes the PHY update on LE 1M (its central does not take Coded).
        assert (chosen["tx_phy"], chosen["rx_phy"]) == ("1m", "1m")


@both_link_layers
def test_data_length_requests(controllers, gattd, tmp_path, link_layer):
    gattd(CONFIG)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        device_cm, peer = await connect_central(controllers)
        reply = await control.request({"op": "data_length", "central": CENTRAL, "tx_octets": 100}, timeout=25)
        reply.pop("id", None)
        bad = await control.request({"op": "data_length", "central": CENTRAL, "tx_octets": 26})
        assert (bad["ok"], bad["error"]) == (False, "invalid_value")
        # gattctl data-length: the same op; out-of-range octets never reach gattd.
        command = await gattctl(tmp_path / "control.sock", "data-length", CENTRAL, "251")
        usage = await gattctl(tmp_path / "control.sock", "data-length", CENTRAL, "300")
        await close_central(device_cm, peer)
        await control.close()
        return reply, command, usage

    reply, (rc, out, err), usage = run(body())
    assert usage[0] == 64 and "27 to 251 octets" in usage[2]
    if link_layer == "bumble":
        assert reply == {"ok": True}
        assert rc == 0, (out, err)
    else:
        # rootcanal's controllers have no LE Data Packet Length Extension: refused with the reason.
        assert (reply["ok"], reply["error"]) == (False, "refused")
        assert "does not support LE Data Packet Length Extension" in reply["message"]
        assert rc == 1 and "does not support LE Data Packet Length Extension" in err, (rc, out, err)


@both_link_layers
def test_config_phy_preferred_is_asked_of_each_new_connection(controllers, gattd, tmp_path, link_layer):
    config = CONFIG.replace('"name": "Link Test",', '"name": "Link Test", "phy": {"preferred": ["coded"]},')
    gattd(config)

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert await control.request({"op": "watch"}) == {"ok": True}
        device_cm, peer = await connect_central(controllers)
        # LE Set PHY (§7.8.49) with TX and RX masks LE Coded only (bit 2).
        phy = await controllers[0].wait_for_command(0x2032)
        assert phy.parameters[2:5] == bytes([0x00, 0x04, 0x04])
        if link_layer == "rootcanal":
            await link_event_where(control, lambda e: e["tx_phy"] == "coded")
        await close_central(device_cm, peer)
        await control.close()

    run(body())
