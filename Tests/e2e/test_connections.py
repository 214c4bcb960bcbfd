"""Connections: two centrals at once, max_connections, reconnection, surviving the loss of the
controller, and the Data Length / PHY requests gattd makes for each new connection.
"""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from bumble import att, hci

from advertising_commands import enables, wait_for_enable
from gatt_central import (
    CONFIG_DIR,
    FULL_CONFIG,
    OPCODE_LE_SET_DATA_LENGTH,
    OPCODE_LE_SET_PHY,
    ControllerProcess,
    Link,
    central,
    central_device,
    connect_peer,
    free_ports,
    start_gattd,
    wait_for_log,
)
from control_client import ControlClient
from harness import (LINK_LAYERS, OPCODE_LE_SET_ADVERTISING_ENABLE, OPCODE_RESET, both_link_layers, from_address, run,
                     scan_for)

WRITABLE = 0x0016
LONG = 0x0018
LONG_VALUE = bytes((i * 7 + 3) & 0xFF for i in range(300))
LEVEL = 0x002C
SINGLE_LEVEL = 0x0012  # Battery Level in config/test/max-one-connection.json
CENTRAL_1 = "C0:00:00:00:00:01"
CENTRAL_2 = "C0:00:00:00:00:02"


def link_of(controllers, gattd_process) -> Link:
    return Link(controllers, gattd_process)


def enables_after(controller, after: float) -> list:
    return [c for c in enables(controller, after) if c.time > after]


def connection_handle(log: str, address: str) -> int:
    return int(re.findall(rf"connected: {address} \(random\), handle (\d+)", log)[-1])


@both_link_layers
@pytest.mark.parametrize("controller_count", [3])
def test_two_centrals_at_once(controllers, gattd):
    link = link_of(controllers, gattd(FULL_CONFIG))

    async def body():
        # Counted before the connection: gattd may turn advertising on again before the
        # central's connect() returns (an extended set ends with the connection itself).
        await wait_for_enable(controllers[0])
        before = len(enables(controllers[0]))
        async with central(link, 1, CENTRAL_1) as peer1:
            await wait_for_log(link.gattd, rf"connected: {CENTRAL_1} ")
            # Advertising resumes after the first connection...
            deadline = time.monotonic() + 10
            while len(enables(controllers[0])) <= before and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert len(enables(controllers[0])) > before, "advertising did not resume after the first connection"
            # ...so a second central connects.
            async with central(link, 2, CENTRAL_2) as peer2:
                await wait_for_log(link.gattd, rf"connected: {CENTRAL_2} ")
                # Each connection has its own MTU: 517 on the first, 23 on the second.
                assert await peer1.request_mtu(517) == 517
                assert peer2.gatt_client.mtu == 23
                first = await peer1.gatt_client.send_request(att.ATT_Read_Request(attribute_handle=LONG))
                second = await peer2.gatt_client.send_request(att.ATT_Read_Request(attribute_handle=LONG))
                assert bytes(first.attribute_value) == LONG_VALUE
                assert bytes(second.attribute_value) == LONG_VALUE[:22]
                # Interleaved reads and writes, each answered on its own connection.
                reads = await asyncio.gather(peer1.gatt_client.read_value(LONG), peer2.gatt_client.read_value(LONG),
                                             peer1.gatt_client.read_value(LEVEL), peer2.gatt_client.read_value(LEVEL))
                assert reads == [LONG_VALUE, LONG_VALUE, b"\x64", b"\x64"]
                await peer1.gatt_client.write_value(WRITABLE, b"\x11", with_response=True)
                assert await peer2.gatt_client.read_value(WRITABLE) == b"\x11"  # one shared value
                await peer2.gatt_client.write_value(WRITABLE, b"\x22", with_response=True)
                assert await peer1.gatt_client.read_value(WRITABLE) == b"\x22"
            await wait_for_log(link.gattd, rf"disconnected: {CENTRAL_2}, reason Remote User Terminated")
            # The first central is unaffected.
            assert await peer1.gatt_client.read_value(LEVEL) == b"\x64"

    run(body())


@both_link_layers
@pytest.mark.parametrize("controller_count", [3])
def test_max_connections_one(controllers, gattd):
    link = link_of(controllers, gattd(CONFIG_DIR / "max-one-connection.json"))

    async def body():
        async with central_device(controllers[2], CENTRAL_2, "central-2") as second:
            # Taken before the connection (after the start's enable): an enable that followed
            # the connection at once would come before `central` returns.
            await wait_for_enable(controllers[0])
            connecting_at = time.time()
            async with central(link, 1, CENTRAL_1) as peer1:
                await wait_for_log(link.gattd, rf"connected: {CENTRAL_1} ")
                assert await peer1.gatt_client.read_value(SINGLE_LEVEL) == b"\x64"
                # No advertising with one connection, so nothing to connect to: a scan finds
                # nothing.
                with pytest.raises((asyncio.TimeoutError, TimeoutError)):
                    await scan_for(second, from_address(controllers[0].address), timeout=1.5)
                assert enables_after(controllers[0], connecting_at) == []
                assert link.gattd.log().count("connected: C0:") == 1
                disconnected_at = time.time()
            # After the disconnection gattd advertises again and the second central gets in.
            await wait_for_enable(controllers[0], after=disconnected_at)
            peer2 = await connect_peer(second, link.gattd_address)
            await wait_for_log(link.gattd, rf"connected: {CENTRAL_2} ")
            assert await peer2.gatt_client.read_value(SINGLE_LEVEL) == b"\x64"
            await peer2.connection.disconnect()

    run(body())


@both_link_layers
def test_reconnect_after_the_central_disconnects(controllers, gattd):
    link = link_of(controllers, gattd(FULL_CONFIG))

    async def body():
        async with central_device(controllers[1], CENTRAL_1) as device:
            for attempt in range(3):
                started = time.time()
                log_start = len(link.gattd.log())
                peer = await connect_peer(device, link.gattd_address)
                await peer.gatt_client.write_value(WRITABLE, bytes([attempt]), with_response=True)
                assert await peer.gatt_client.read_value(WRITABLE) == bytes([attempt])
                await peer.connection.disconnect()
                await wait_for_log(link.gattd, rf"disconnected: {CENTRAL_1}, reason Remote User Terminated",
                                   start=log_start)
                # Advertising resumed after the disconnection.
                await wait_for_enable(controllers[0], after=started)
            log = link.gattd.log()
            assert log.count(f"connected: {CENTRAL_1} (random)") == 3
            assert log.count(f"disconnected: {CENTRAL_1}, reason Remote User Terminated Connection (0x13)") == 3

    run(body())


@pytest.mark.parametrize("link_layer", LINK_LAYERS)
def test_survives_the_controller_being_killed_and_restarted(tmp_path, link_layer):
    """The controller process dies (like a USB dongle unplugged): gattd logs that it lost the
    controller, retries, and when a controller listens on the same port again it resets it,
    advertises and serves a central."""
    ports = free_ports(2)
    link_process = ControllerProcess(tmp_path, ports, link_layer)
    controllers = link_process.start()
    gattd_process = start_gattd(FULL_CONFIG, controllers[0].transport, tmp_path)
    try:
        link = Link(controllers, gattd_process)

        async def before():
            async with central(link, 1, CENTRAL_1) as peer:
                assert await peer.gatt_client.read_value(LEVEL) == b"\x64"

        run(before())

        async def lost_and_back():
            # A watcher before the kill: the controller's state as Core Bluetooth reports it.
            control = await ControlClient.open(tmp_path / "control.sock")
            assert await control.request({"op": "watch"}) == {"ok": True}
            link_process.kill()
            lost = await wait_for_log(gattd_process, r"lost the controller at tcp:127\.0\.0\.1:\d+", timeout=10)
            state = await control.event("state")
            assert state["state"] == "resetting" and "lost the controller" in state["reason"], state
            # Still alive and retrying: the next attempt (after the first backoff) fails and says so.
            await wait_for_log(gattd_process, r"cannot open tcp:127\.0\.0\.1:\d+: .*; retrying in ", timeout=10,
                               start=lost.end())
            assert gattd_process.running
            log_start = len(gattd_process.log())

            controllers = link_process.start()
            link = Link(controllers, gattd_process)
            # gattd reconnects (backoff up to a few seconds) and brings the controller up again.
            await controllers[0].wait_for_command(OPCODE_RESET, timeout=15)
            await wait_for_log(gattd_process, r"advertising as \"gattd-test\"", timeout=10, start=log_start)
            async with central(link, 1, CENTRAL_1) as peer:
                assert await peer.gatt_client.read_value(LEVEL) == b"\x64"
            await wait_for_log(gattd_process, rf"connected: {CENTRAL_1} ", start=log_start)
            # After the failed retries' own state events: powered on again.
            while (event := await control.event("state", timeout=20))["state"] != "powered_on":
                assert event["state"] == "resetting", event
            assert (await control.request({"op": "status"}))["state"] == "powered_on"
            await control.close()

        run(lost_and_back(), timeout=60)
        assert gattd_process.running
    except BaseException:
        print(f"\n===== gattd log =====\n{gattd_process.log()}\n===== controllers log =====\n{link_process.log()}")
        raise
    finally:
        gattd_process.stop()
        link_process.stop()


@both_link_layers
def test_data_length_and_2m_phy_requested_for_each_connection(controllers, gattd, link_layer):
    # rootcanal's controllers have no LE Data Packet Length Extension (LE features bit 5) and
    # do not list LE Set Data Length: there gattd must not ask for it (optional is optional).
    data_length_extension = link_layer == "bumble"
    link = link_of(controllers, gattd(FULL_CONFIG))

    async def body():
        async with central_device(controllers[1], CENTRAL_1) as device:
            phy_update = asyncio.get_running_loop().create_future()
            device.on("connection", lambda connection: connection.on(
                "connection_phy_update", lambda phy: phy_update.done() or phy_update.set_result(phy)))
            peer = await connect_peer(device, link.gattd_address)
            # gattd queues LE Set Data Length before LE Set PHY, so once LE Set PHY arrived
            # a data length request would have arrived too.
            phy = await controllers[0].wait_for_command(OPCODE_LE_SET_PHY)
            # Both hosts hear LE PHY Update Complete once the controller carried out gattd's
            # request: disconnecting before that races with it (rootcanal then answers
            # Unknown Connection Identifier, and gattd rightly logs that LE Set PHY failed).
            updated = await asyncio.wait_for(phy_update, 10)
            assert (updated.tx_phy, updated.rx_phy) == (hci.Phy.LE_2M, hci.Phy.LE_2M)
            await asyncio.wait_for(peer.connection.disconnect(), 5)
        handle = connection_handle(link.gattd.log(), CENTRAL_1)
        if data_length_extension:
            # LE Set Data Length (§7.8.33): handle, TX octets 251, TX time 2120 µs.
            [data_length] = controllers[0].commands(OPCODE_LE_SET_DATA_LENGTH)
            assert data_length.parameters == handle.to_bytes(2, "little") + (251).to_bytes(2, "little") + \
                (2120).to_bytes(2, "little")
            assert data_length.time <= phy.time
        else:
            assert controllers[0].commands(OPCODE_LE_SET_DATA_LENGTH) == []
        # LE Set PHY (§7.8.49): handle, ALL_PHYS 0, TX 2M, RX 2M, options 0.
        assert phy.parameters == handle.to_bytes(2, "little") + bytes([0x00, 0x02, 0x02, 0x00, 0x00])
        # Once per connection.
        assert len(controllers[0].commands(OPCODE_LE_SET_PHY)) == 1
        # Neither failed (a failure would be logged as a warning).
        assert "failed" not in link.gattd.log()

    run(body())
