"""Pairing and bonding on the H4 path, with Bumble's own Security Manager as the phone
(Core Spec Vol 3 Part H): Just Works with LE Secure Connections and bonding, the bond
kept in <state-dir>/bonds and used again after gattd restarts (LE Long Term Key Request
answered without pairing), legacy Just Works, and Secure Connections Only refusing it.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time

import pytest

from bumble.core import ProtocolError
from bumble.device import Device
from bumble.transport import open_transport
from bumble.pairing import PairingConfig, PairingDelegate

from control_client import ControlClient
from gatt_central import FULL_CONFIG, att_error, central_device, connect_peer, raw_request, wait_for_log
from harness import both_link_layers, run
from bumble import hci

ENCRYPTED = 0x001C  # read_encryption_required, value 0x42 (config/test/gatt-full.json)
AUTHENTICATED = 0x0038  # read_authentication_required, in the service config_with() appends
INSUFFICIENT_AUTHENTICATION = 0x05
READ = 0x0A
INSUFFICIENT_ENCRYPTION = 0x0F
AUTHENTICATION_REQUIREMENTS = 0x03
ENCRYPTION_KEY_SIZE = 0x06
NUMERIC_COMPARISON_FAILED = 0x0C
LTK_REQUEST_REPLY = 0x201A
LTK_REQUEST_NEGATIVE_REPLY = 0x201B


def config_with(security: dict | None = None) -> str:
    config = json.loads(FULL_CONFIG.read_text())
    # After gatt-full.json's last handle (0x0035): service 0x0036, declaration 0x0037, value 0x0038.
    config["services"].append({"uuid": "5EC0", "characteristics": [
        {"uuid": "5EC1", "properties": ["read"], "permissions": ["read_authentication_required"], "value": {"hex": "a5"}}]})
    if security is not None:
        config["security"] = security
    return json.dumps(config, indent=1)


def gattd_address(controllers) -> hci.Address:
    return hci.Address(controllers[0].address, hci.Address.PUBLIC_DEVICE_ADDRESS)


def pairing(sc: bool):
    """Bumble's pairing settings: Just Works (no MITM), bonding, its random static address
    as identity (by default Bumble distributes its controller's public address while it
    connects with the random one, which no RPA resolution can link)."""
    return lambda _connection: PairingConfig(sc=sc, mitm=False, bonding=True,
                                             identity_address_type=PairingConfig.AddressType.RANDOM)


async def private_phone(source, sink) -> Device:
    """A powered-on Bumble central with privacy (a new RPA from its IRK 20..2F on every
    power-on, identity C0:00:00:00:00:02) that bonds with Just Works SC."""
    device = Device.with_hci("phone", hci.Address("C0:00:00:00:00:02"), source, sink)
    device.le_privacy_enabled = True
    device.le_rpa_timeout = 0
    device.irk = bytes(range(0x20, 0x30))
    await device.power_on()
    device.pairing_config_factory = pairing(sc=True)
    return device


def read_request(handle: int = ENCRYPTED) -> bytes:
    return bytes([READ]) + handle.to_bytes(2, "little")


@both_link_layers
def test_just_works_bond_survives_a_gattd_restart(controllers, gattd, tmp_path):
    config = config_with()
    first = gattd(config)
    bonds = tmp_path / "state" / "bonds"

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=True)
            peer = await connect_peer(device, gattd_address(controllers))
            # Before pairing: Insufficient Encryption.
            att_error(await raw_request(peer, read_request()), READ, ENCRYPTED, INSUFFICIENT_ENCRYPTION)
            att_error(await raw_request(peer, read_request(AUTHENTICATED)), READ, AUTHENTICATED,
                      INSUFFICIENT_AUTHENTICATION)
            started = time.monotonic()
            await asyncio.wait_for(peer.connection.pair(), 15)
            elapsed = time.monotonic() - started
            print(f"Just Works SC pairing + encryption + key distribution took {elapsed * 1000:.0f} ms on the virtual link")
            assert peer.connection.is_encrypted
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            # Just Works is unauthenticated: still not enough for authentication-required.
            att_error(await raw_request(peer, read_request(AUTHENTICATED)), READ, AUTHENTICATED,
                      INSUFFICIENT_AUTHENTICATION)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01 \(LE Secure Connections, unauthenticated, key size 16\)")
            files = sorted(f for f in bonds.iterdir() if f.suffix == ".json")  # .gatt: test_bonded_state.py
            assert [f.name for f in files] == ["C0:00:00:00:00:01.json"]
            assert stat.S_IMODE(os.stat(files[0]).st_mode) == 0o600
            saved = json.loads(files[0].read_text())
            assert saved["secure_connections"] is True and saved["key_size"] == 16 and len(saved["ltk"]) == 32
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            # gattd restarts: the bond comes from the store, the central encrypts with it.
            first.stop()
            commands_before = len(controllers[0].commands(LTK_REQUEST_REPLY))
            second = gattd(config)
            await wait_for_log(second, r"loaded 1 bond from ")
            peer = await connect_peer(device, gattd_address(controllers))
            att_error(await raw_request(peer, read_request()), READ, ENCRYPTED, INSUFFICIENT_ENCRYPTION)
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert peer.connection.is_encrypted
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            assert len(controllers[0].commands(LTK_REQUEST_REPLY)) == commands_before + 1
            assert not controllers[0].commands(LTK_REQUEST_NEGATIVE_REPLY)
            assert "paired" not in second.log(), "no pairing after the restart"
            await wait_for_log(second, r"C0:00:00:00:00:01: security medium")

    run(body(), timeout=60)


@both_link_layers
def test_legacy_just_works_bonds_and_reconnects(controllers, gattd):
    process = gattd(config_with())

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=False)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            assert peer.connection.is_encrypted
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:01 \(legacy, unauthenticated, key size 16\)")
            # Reconnect: the central encrypts with the LTK gattd distributed (EDIV and Rand).
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            assert not controllers[0].commands(LTK_REQUEST_NEGATIVE_REPLY)

    run(body())


@both_link_layers
def test_secure_connections_only_refuses_legacy_pairing(controllers, gattd):
    process = gattd(config_with({"secure_connections_only": True}))

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = pairing(sc=False)
            peer = await connect_peer(device, gattd_address(controllers))
            with pytest.raises(ProtocolError) as failure:
                await asyncio.wait_for(peer.connection.pair(), 15)
            assert failure.value.error_code == AUTHENTICATION_REQUIREMENTS
            assert not peer.connection.is_encrypted
            att_error(await raw_request(peer, read_request()), READ, ENCRYPTED, INSUFFICIENT_ENCRYPTION)
            await wait_for_log(process, r"pairing failed \(.*sent by us\)")

    run(body())


async def pairing_fails(controllers, config: PairingConfig) -> int:
    """Connects a Bumble central with `config`, pairs, and returns the Pairing Failed reason."""
    async with central_device(controllers[1]) as device:
        device.pairing_config_factory = lambda _connection: config
        peer = await connect_peer(device, gattd_address(controllers))
        with pytest.raises(ProtocolError) as failure:
            await asyncio.wait_for(peer.connection.pair(), 15)
        assert not peer.connection.is_encrypted
        return failure.value.error_code


@both_link_layers
def test_key_size_below_the_minimum_is_refused(controllers, gattd):
    gattd(config_with({"min_key_size": 16}))
    delegate = PairingDelegate(maximum_encryption_key_size=7)
    reason = run(pairing_fails(controllers, PairingConfig(sc=True, mitm=False, bonding=True, delegate=delegate)))
    assert reason == ENCRYPTION_KEY_SIZE


@both_link_layers
def test_numeric_comparison_with_nobody_to_answer_fails_cleanly(controllers, gattd):
    process = gattd(config_with({"io_capability": "display_yes_no"}))
    delegate = PairingDelegate(io_capability=PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
    reason = run(pairing_fails(controllers, PairingConfig(sc=True, mitm=True, bonding=True, delegate=delegate)))
    assert reason == NUMERIC_COMPARISON_FAILED
    run(wait_for_log(process, r"pairing needs a numeric comparison and no control client watches to answer; refused"))


@both_link_layers
def test_bonded_central_with_a_new_rpa_is_recognised(controllers, gattd, tmp_path):
    """A central with privacy bonds, then reconnects with a new resolvable private address:
    gattd resolves it with the central's IRK and answers the LTK request from the bond."""
    process = gattd(config_with())

    async def body():
        async with await open_transport(controllers[1].bumble_transport) as (source, sink):
            device = await private_phone(source, sink)
            first_rpa = device.random_address
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:02")
            await asyncio.wait_for(peer.connection.disconnect(), 5)
            # A new RPA (set directly: Bumble's update_rpa() sends the previous one).
            new_rpa = hci.Address.generate_private_address(device.irk)
            await device.send_sync_command(hci.HCI_LE_Set_Random_Address_Command(random_address=new_rpa))
            device.random_address = new_rpa
            assert str(new_rpa) != str(first_rpa)
            replies = len(controllers[0].commands(LTK_REQUEST_REPLY))
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.encrypt(), 10)
            assert await peer.gatt_client.read_value(ENCRYPTED) == b"\x42"
            assert len(controllers[0].commands(LTK_REQUEST_REPLY)) == replies + 1
            rpa = str(new_rpa).split("/")[0]
            await wait_for_log(process, rf"{rpa} is the bonded central C0:00:00:00:00:02 \(its IRK resolves the address\)")
            # status names the identity too.
            control = await ControlClient.open(tmp_path / "control.sock")
            status = await control.request({"op": "status"})
            assert [(c["central"], c.get("identity")) for c in status["connections"]] == [(rpa, "C0:00:00:00:00:02")]
            await control.close()
            await device.power_off()

    run(body())


@both_link_layers
def test_passkey_entry_with_the_passkey_gattd_displays(controllers, gattd):
    """gattd (display_only) shows a passkey in its log; the phone (keyboard) types it:
    an authenticated pairing, so the authentication-required characteristic reads."""
    process = gattd(config_with({"io_capability": "display_only"}))

    class Keyboard(PairingDelegate):
        def __init__(self) -> None:
            super().__init__(io_capability=PairingDelegate.KEYBOARD_INPUT_ONLY)

        async def get_number(self) -> int | None:
            match = await wait_for_log(process, r"pairing passkey (\d{6})")
            return int(match.group(1))

    async def body():
        async with central_device(controllers[1]) as device:
            device.pairing_config_factory = lambda _connection: PairingConfig(
                sc=True, mitm=True, bonding=True, delegate=Keyboard(),
                identity_address_type=PairingConfig.AddressType.RANDOM)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            assert peer.connection.authenticated
            assert await peer.gatt_client.read_value(AUTHENTICATED) == b"\xa5"
            await wait_for_log(process, r"paired and bonded as C0:00:00:00:00:01 \(LE Secure Connections, authenticated, key size 16\)")
            await wait_for_log(process, r"C0:00:00:00:00:01: security high")

    run(body())
