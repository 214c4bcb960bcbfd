"""Phones that remember (Core Spec Vol 3 Part G §2.5.2.1, §3.3.3.3, §7.1): a bonded central's
subscriptions, Client Supported Features and change awareness kept in
<state-dir>/bonds/<address>.gatt, restored when it reconnects and encrypts with its bond, across
gattd restarts; a Service Changed owed after the database changed, indicated once on its next
connection and confirmed; Robust Caching's Database Out Of Sync; an unbonded central keeps
today's per-connection behaviour.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

from bumble import att, hci
from bumble.device import Device
from bumble.transport import open_transport

from control_client import ControlClient
from gatt_central import att_error, central_device, connect_peer, connect_recording, raw_request, wait_for_log
from harness import att_round_trip, record_updates, run
from test_pairing import config_with, gattd_address, pairing, private_phone

SERVICE_CHANGED = 0x0008
SERVICE_CHANGED_CCCD = 0x0009
CLIENT_FEATURES = 0x000B
NOTIFIER = 0x001E  # id "notifier", notify only (config/test/gatt-full.json)
NOTIFIER_CCCD = 0x001F
READONLY = 0x0014  # "hello"
READ = 0x0A
DATABASE_OUT_OF_SYNC = 0x12


def changed_config() -> str:
    """config_with() plus a service after its last handle 0x0038: 0x0039-0x003B."""
    config = json.loads(config_with())
    config["services"].append({"uuid": "5ED0", "characteristics": [
        {"uuid": "5ED1", "properties": ["read"], "value": {"hex": "01"}}]})
    return json.dumps(config, indent=1)


def state_file(tmp_path, address: str = "C0:00:00:00:00:01") -> dict:
    return json.loads((tmp_path / "state" / "bonds" / f"{address}.gatt").read_text())


async def updates_for(received: list, handle: int, count: int = 1, timeout: float = 5.0) -> list[bytes]:
    """Waits until `count` updates of `handle` were recorded; returns their values."""
    async def wait():
        while len([v for h, v in received if h == handle]) < count:
            await asyncio.sleep(0.02)
    await asyncio.wait_for(wait(), timeout)
    return [v for h, v in received if h == handle]


async def write_cccd(peer, handle: int, bits: int) -> None:
    await peer.gatt_client.write_value(handle, bits.to_bytes(2, "little"), with_response=True)


async def notify(tmp_path, value: bytes) -> dict:
    control = await ControlClient.open(tmp_path / "control.sock")
    try:
        return await control.request({"op": "notify", "characteristic": "notifier", "value": {"hex": value.hex()}})
    finally:
        await control.close()


def test_bonded_subscription_survives_a_gattd_restart(controllers, gattd, tmp_path):
    config = config_with()
    first = gattd(config)

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01")
            await write_cccd(peer, NOTIFIER_CCCD, 0x0001)
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            # Acknowledged means durable: the state file holds both before the Write Responses.
            assert state_file(tmp_path)["cccd"] == {"id:notifier": 1, "id:service_changed": 2}
            received = record_updates(peer)
            assert await notify(tmp_path, b"\x01") == {"ok": True, "sent": 1}
            assert await updates_for(received, NOTIFIER) == [b"\x01"]
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            first.stop()
            second = gattd(config)
            await wait_for_log(second, r"loaded 1 bond from ")
            peer, received = await connect_recording(device, gattd_address(controllers))
            # Not encrypted yet: not recognised, nothing restored.
            assert await notify(tmp_path, b"\x02") == {"ok": True, "sent": 0}
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            await wait_for_log(second, r"bonded central C0:00:00:00:00:01; restored 2 subscriptions")
            # No CCCD write on this connection: notifications flow again.
            assert await notify(tmp_path, b"\x03") == {"ok": True, "sent": 1}
            assert await updates_for(received, NOTIFIER) == [b"\x03"]
            # The database did not change: no Service Changed.
            await att_round_trip(peer)
            assert [h for h, _ in received] == [NOTIFIER]
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=60)


def test_changed_config_on_restart_owes_the_bonded_central_service_changed(controllers, gattd, tmp_path):
    first = gattd(config_with())

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01")
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            first.stop()

            # A new config while the central is away: the owed range survives restarts.
            second = gattd(changed_config())
            await wait_for_log(second, r"C0:00:00:00:00:01: Service Changed 0x0039-0x003B owed")
            second.stop()
            assert state_file(tmp_path)["service_changed"] == [0x39, 0x3B]
            third = gattd(changed_config())
            await wait_for_log(third, r"loaded 1 bond from ")

            peer, received = await connect_recording(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await updates_for(received, SERVICE_CHANGED) == [bytes([0x39, 0x00, 0x3B, 0x00])]
            # Bumble confirmed it: change-aware, nothing owed any more (durably).
            await att_round_trip(peer)
            state = state_file(tmp_path)
            assert "service_changed" not in state
            hash_value = await peer.gatt_client.read_value(0x000D)
            assert state["database_hash"] == bytes(hash_value).hex()
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            # Once: the next connection gets no Service Changed.
            log_start = len(third.log())
            peer, received = await connect_recording(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            await wait_for_log(third, r"restored 1 subscription$", start=log_start)
            await att_round_trip(peer)
            assert received == []
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=90)


def test_robust_caching_central_gets_database_out_of_sync_until_it_reads_the_hash(controllers, gattd, tmp_path):
    first = gattd(config_with())

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01")
            # Robust Caching (Client Supported Features bit 0), kept for the bond.
            await peer.gatt_client.write_value(CLIENT_FEATURES, b"\x01", with_response=True)
            assert state_file(tmp_path)["client_features"] == "01"
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            first.stop()

            second = gattd(changed_config())
            await wait_for_log(second, r"Service Changed 0x0039-0x003B owed")
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            await wait_for_log(second, r"bonded central C0:00:00:00:00:01; restored 0 subscriptions, Service Changed 0x0039-0x003B owed")
            # Change-unaware: Database Out Of Sync, the read not performed.
            att_error(await raw_request(peer, bytes([READ]) + READONLY.to_bytes(2, "little")), READ, 0x0000,
                      DATABASE_OUT_OF_SYNC)
            # Read By Type of the Database Hash is always served.
            response = await raw_request(peer, bytes([0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]))
            assert response.op_code == att.Opcode.ATT_READ_BY_TYPE_RESPONSE
            # Change-aware now: served, and kept for the bond.
            response = await raw_request(peer, bytes([READ]) + READONLY.to_bytes(2, "little"))
            assert response.op_code == att.Opcode.ATT_READ_RESPONSE and bytes(response.attribute_value) == b"hello"
            assert "service_changed" not in state_file(tmp_path)
            # Client Supported Features bits cannot be cleared (Vol 3 Part G §7.2).
            att_error(await raw_request(peer, bytes([0x12]) + CLIENT_FEATURES.to_bytes(2, "little") + b"\x00"),
                      0x12, CLIENT_FEATURES, 0x13)
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=60)


def test_unbonded_central_subscription_does_not_survive(controllers, gattd, tmp_path):
    process = gattd(config_with())

    async def body():
        async with central_device(controllers[1]) as device:
            peer = await connect_peer(device, gattd_address(controllers))
            await write_cccd(peer, NOTIFIER_CCCD, 0x0001)
            assert await notify(tmp_path, b"\x01") == {"ok": True, "sent": 1}
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            peer = await connect_peer(device, gattd_address(controllers))
            assert await notify(tmp_path, b"\x02") == {"ok": True, "sent": 0}
            assert not (tmp_path / "state" / "bonds" / "C0:00:00:00:00:01.gatt").exists()
            assert "bonded central" not in process.log()
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=60)


def test_sighup_while_the_bonded_central_is_away_owes_it_service_changed(controllers, gattd, tmp_path):
    config_path = tmp_path / "bonded.json"
    config_path.write_text(config_with())
    process = gattd(config_path)

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:01")
            await write_cccd(peer, SERVICE_CHANGED_CCCD, 0x0002)
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            await wait_for_log(process, r"disconnected: C0:00:00:00:00:01")  # away, as gattd sees it
            config_path.write_text(changed_config())
            os.kill(process.process.pid, signal.SIGHUP)
            await wait_for_log(process, r"C0:00:00:00:00:01: Service Changed 0x0039-0x003B owed")
            assert state_file(tmp_path)["service_changed"] == [0x39, 0x3B]

            peer, received = await connect_recording(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await updates_for(received, SERVICE_CHANGED) == [bytes([0x39, 0x00, 0x3B, 0x00])]
            await att_round_trip(peer)
            assert "service_changed" not in state_file(tmp_path)
            await asyncio.wait_for(peer.connection.disconnect(), 5)

    run(body(), timeout=60)


def test_restore_without_encryption_for_a_resolved_rpa(controllers, gattd, tmp_path):
    """`security.restore_without_encryption`: a bonded central that reconnects with a new
    RPA its IRK resolves gets its subscriptions back before it encrypts."""
    config = json.loads(config_with())
    config["security"] = {"restore_without_encryption": True}
    process = gattd(json.dumps(config, indent=1))

    async def body():
        async with await open_transport(controllers[1].bumble_transport) as (source, sink):
            device = await private_phone(source, sink)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:02")
            await write_cccd(peer, NOTIFIER_CCCD, 0x0001)
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            new_rpa = hci.Address.generate_private_address(device.irk)
            await device.send_sync_command(hci.HCI_LE_Set_Random_Address_Command(random_address=new_rpa))
            device.random_address = new_rpa
            peer, received = await connect_recording(device, gattd_address(controllers))
            await wait_for_log(process, r"bonded central C0:00:00:00:00:02; restored 1 subscription")
            assert not peer.connection.is_encrypted
            assert await notify(tmp_path, b"\x05") == {"ok": True, "sent": 1}
            assert await updates_for(received, NOTIFIER) == [b"\x05"]
            await device.power_off()

    run(body(), timeout=60)


def test_without_the_option_a_resolved_rpa_is_not_restored_before_encryption(controllers, gattd, tmp_path):
    process = gattd(config_with())

    async def body():
        async with await open_transport(controllers[1].bumble_transport) as (source, sink):
            device = await private_phone(source, sink)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:02")
            await write_cccd(peer, NOTIFIER_CCCD, 0x0001)
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            peer = await connect_peer(device, gattd_address(controllers))
            await wait_for_log(process, r"is the bonded central C0:00:00:00:00:02 \(its IRK resolves the address\)")
            assert await notify(tmp_path, b"\x05") == {"ok": True, "sent": 0}
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            await wait_for_log(process, r"bonded central C0:00:00:00:00:02; restored 1 subscription")
            assert await notify(tmp_path, b"\x06") == {"ok": True, "sent": 1}
            await device.power_off()

    run(body(), timeout=60)
