"""Runtime services (CBPeripheralManager parity): the control ops add_service,
remove_service and list_services, and gattctl add-service / remove-service / list-services.
Handles of existing attributes never move; a connected central is indicated Service Changed
for exactly the service's range and rediscovers it (Core Spec Vol 3 Part G §7.1, §2.5.2).
"""

from __future__ import annotations

import asyncio
import json
import subprocess

from bumble.core import UUID

from control_client import ControlClient
from gatt_central import att_error, central_device, connect_peer, connect_recording, raw_request, wait_for_log
from harness import REPO_ROOT, att_round_trip, both_link_layers, record_updates, run
from test_bonded_state import SERVICE_CHANGED, SERVICE_CHANGED_CCCD, updates_for, write_cccd
from test_pairing import config_with, gattd_address, pairing

GATTCTL = REPO_ROOT / ".build" / "debug" / "gattctl"
HEART = {"id": "heart", "uuid": "180D", "characteristics": [{"id": "hr", "uuid": "2A37", "properties": ["read", "notify"],
                                                              "value": {"hex": "00"}}]}


def test_add_and_remove_services_seen_by_a_connected_central(controllers, gattd, tmp_path):
    gattd(config_with())

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            received = record_updates(peer)
            before = await control.request({"op": "list_services"})
            assert before["ok"] is True
            assert [(s.get("id"), s["start"], s["end"], s["runtime"]) for s in before["services"]] == [
                ("test", 0x10, 0x29, False), ("battery", 0x2A, 0x2D, False), ("secret", 0x2E, 0x30, False),
                ("env", 0x31, 0x35, False), (None, 0x36, 0x38, False)]

            # Added after the last handle (0x0038): 0x0039-0x003C (declaration, value, CCCD).
            reply = await control.request({"op": "add_service", "service": HEART})
            assert reply == {"ok": True, "services": [{"id": "heart", "uuid": "180D", "start": 0x39, "end": 0x3C, "runtime": True}]}
            assert await updates_for(received, SERVICE_CHANGED) == [bytes([0x39, 0x00, 0x3C, 0x00])]
            # Rediscovery finds it; the central subscribes and gets its notifications.
            found = None
            for service in await peer.discover_services():
                if service.uuid == UUID.from_16_bits(0x180D):
                    found = (await service.discover_characteristics())[0]
            assert found is not None and found.handle == 0x3B
            updates = asyncio.Queue()
            await found.subscribe(updates.put_nowait)
            assert await control.request({"op": "notify", "characteristic": "hr", "value": {"hex": "48"}}) == {"ok": True, "sent": 1}
            assert await asyncio.wait_for(updates.get(), 5) == b"\x48"
            # Existing handles did not move.
            assert bytes(await peer.gatt_client.read_value(0x0014)) == b"hello"

            # Remove env (0x0031-0x0035): Service Changed for its range; its handles are a gap.
            assert await control.request({"op": "remove_service", "service": "env"}) == {"ok": True}
            assert await updates_for(received, SERVICE_CHANGED, count=2) == [bytes([0x39, 0x00, 0x3C, 0x00]),
                                                                            bytes([0x31, 0x00, 0x35, 0x00])]
            att_error(await raw_request(peer, bytes([0x0A, 0x33, 0x00])), 0x0A, 0x0033, 0x01)
            assert bytes(await peer.gatt_client.read_value(0x003B)) == b"\x48"
            listed = (await control.request({"op": "list_services"}))["services"]
            assert [(s.get("id"), s["start"], s["runtime"]) for s in listed][-2:] == [(None, 0x36, False), ("heart", 0x39, True)]
            assert "env" not in [s.get("id") for s in listed]

            # Refusals: path-precise validation, an included service, an unknown id.
            bad = {"id": "test", "uuid": "1234", "characteristics": [{"uuid": "nope", "properties": ["read"]}]}
            reply = await control.request({"op": "add_service", "service": bad})
            assert reply["ok"] is False and reply["error"] == "invalid_value"
            assert "service.id: id \"test\" is already used" in reply["message"]
            assert "service.characteristics[0].uuid" in reply["message"]
            reply = await control.request({"op": "remove_service", "service": "battery"})
            assert reply["ok"] is False and reply["error"] == "unknown_service" and "included by test" in reply["message"]
            reply = await control.request({"op": "remove_service", "service": "nothing"})
            assert reply["ok"] is False and reply["error"] == "unknown_service"
            await att_round_trip(peer)
            assert [h for h, _ in received if h == SERVICE_CHANGED] == [SERVICE_CHANGED] * 2
        await control.close()

    run(body(), timeout=60)


def test_gattctl_service_commands(controllers, gattd, tmp_path):
    gattd(config_with())
    socket = str(tmp_path / "control.sock")
    service_file = tmp_path / "heart.json"
    service_file.write_text(json.dumps(HEART))
    assert GATTCTL.exists(), f"{GATTCTL} is missing: run swift build"

    def gattctl(*args) -> subprocess.CompletedProcess:
        return subprocess.run([str(GATTCTL), "--socket", socket, *args], capture_output=True, text=True, timeout=10)

    added = gattctl("add-service", str(service_file))
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "0x0039-0x003C  180D  id=heart  runtime"
    listed = gattctl("list-services")
    assert listed.returncode == 0
    assert listed.stdout.splitlines()[0] == "0x0010-0x0029  6e4a0001-b5a3-f393-e0a9-e50e24dcca9e  id=test  config"
    assert listed.stdout.splitlines()[-1] == "0x0039-0x003C  180D  id=heart  runtime"
    assert gattctl("remove-service", "heart").returncode == 0
    missing = gattctl("remove-service", "heart")
    assert missing.returncode == 1 and "heart" in missing.stderr
    service_file.write_text("{ not json")
    assert gattctl("add-service", str(service_file)).returncode == 64


def test_a_bonded_central_away_during_add_service_gets_service_changed_on_reconnect(controllers, gattd, tmp_path):
    process = gattd(config_with())

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:01")
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            await wait_for_log(process, r"disconnected: C0:00:00:00:00:01")  # away, as gattd sees it
            reply = await control.request({"op": "add_service", "service": HEART})
            assert reply["ok"] is True
            await wait_for_log(process, r"C0:00:00:00:00:01: Service Changed 0x0039-0x003C owed")

            peer, received = await connect_recording(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await updates_for(received, SERVICE_CHANGED) == [bytes([0x39, 0x00, 0x3C, 0x00])]
            await asyncio.wait_for(peer.connection.disconnect(), 5)
        await control.close()

    run(body(), timeout=60)


BATTERY = {"id": "fuel", "uuid": "180F", "characteristics": [{"uuid": "2A19", "properties": ["read"], "value": {"hex": "64"}}]}


@both_link_layers
def test_state_restoration_a_runtime_service_is_back_at_its_handles_after_kill_9(controllers, gattd, tmp_path):
    """State restoration: add_service is answered once the service is kept in the state
    directory, so after kill -9 and a restart it is served at the same handles, and a bonded
    central reads it by its cached handle with no rediscovery and no Service Changed; a service
    removed with remove_service stays removed."""
    config = config_with()
    first = gattd(config)

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01")
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            indicated = record_updates(peer)
            control = await ControlClient.open(tmp_path / "control.sock")
            # Each change waits for its Service Changed before the next one: a change made while
            # an indication is unconfirmed joins the one owed (one indication, the ranges merged).
            heart = await control.request({"op": "add_service", "service": HEART})
            assert heart["services"][0]["start"] == 0x39
            await updates_for(indicated, SERVICE_CHANGED, count=1)
            # The central's confirmation reaches gattd before the next change: a request after it
            # on the same bearer is answered only once gattd has read it (ATT is in order).
            await att_round_trip(peer)
            battery = await control.request({"op": "add_service", "service": BATTERY})
            assert battery["services"][0]["start"] == 0x3D  # 0x3D-0x3F, value 0x3F
            await updates_for(indicated, SERVICE_CHANGED, count=2)
            assert bytes(await peer.gatt_client.read_value(0x3F)) == b"\x64"
            assert await control.request({"op": "remove_service", "service": "fuel"}) == {"ok": True}
            await control.close()
            # Every Service Changed confirmed (a request after the confirmations: gattd has them),
            # so none is owed when the central comes back.
            assert await updates_for(indicated, SERVICE_CHANGED, count=3) == [bytes([0x39, 0x00, 0x3C, 0x00]),
                                                                               bytes([0x3D, 0x00, 0x3F, 0x00]),
                                                                               bytes([0x3D, 0x00, 0x3F, 0x00])]
            await att_round_trip(peer)
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            await wait_for_log(first, r"disconnected: C0:00:00:00:00:01")

            first.kill()
            second = gattd(config)
            await wait_for_log(second, r"restored 1 runtime service")
            control = await ControlClient.open(tmp_path / "control.sock")
            listed = await control.request({"op": "list_services"})
            await control.close()
            runtime = [(s.get("id"), s["start"], s["end"], s.get("restored")) for s in listed["services"] if s["runtime"]]
            assert runtime == [("heart", 0x39, 0x3C, True)]

            peer, received = await connect_recording(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            await wait_for_log(second, r"bonded central C0:00:00:00:00:01")
            # The cached handle of heart's value, read with no discovery on this connection.
            assert bytes(await peer.gatt_client.read_value(0x3B)) == b"\x00"
            # fuel stays removed: its handles are not served.
            att_error(await raw_request(peer, bytes([0x0A, 0x3F, 0x00])), 0x0A, 0x003F, 0x01)
            # The database is the one the central knew: no Service Changed.
            await att_round_trip(peer)
            assert [h for h, _ in received if h == SERVICE_CHANGED] == []
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=60)


def test_without_state_restoration_a_runtime_service_goes_with_a_restart(controllers, gattd, tmp_path):
    config = config_with()
    first = gattd(config, extra_args=["--no-state-restoration"])

    async def body():
        control = await ControlClient.open(tmp_path / "control.sock")
        assert (await control.request({"op": "add_service", "service": HEART}))["ok"] is True
        await control.close()
        first.stop()
        gattd(config, extra_args=["--no-state-restoration"])
        control = await ControlClient.open(tmp_path / "control.sock")
        listed = await control.request({"op": "list_services"})
        await control.close()
        assert [s for s in listed["services"] if s["runtime"]] == []

    run(body(), timeout=60)
