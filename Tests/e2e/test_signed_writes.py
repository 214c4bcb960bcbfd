"""Signed writes (Core Spec Vol 3 Part C §10.4.2, Part H §2.4.5) on the H4 path: a central
that distributed its CSRK while bonding writes with ATT_SIGNED_WRITE_CMD on a later,
unencrypted link; gattd verifies the signature with the bond's CSRK, refuses a replayed
Sign Counter (also after a gattd restart: the counter is kept in the bond file) and a
forged MAC.
"""

from __future__ import annotations

import asyncio
import json

from bumble.crypto import aes_cmac
from bumble.pairing import PairingConfig, PairingDelegate

from gatt_central import central_device, connect_peer, wait_for_log
from harness import run
from test_pairing import config_with, gattd_address

SIGNED = 0x003B  # after config_with()'s service: service 0x0039, declaration 0x003A, value 0x003B
SIGNED_WRITE = 0xD2


def signed_config() -> str:
    config = json.loads(config_with())
    config["services"].append({"uuid": "5E60", "characteristics": [
        {"uuid": "5E61", "properties": ["read", "authenticated_signed_writes"], "permissions": ["readable", "writeable"],
         "value": {"hex": "00"}}]})
    return json.dumps(config, indent=1)


def signed_write(csrk: bytes, handle: int, value: bytes, counter: int) -> bytes:
    """ATT_SIGNED_WRITE_CMD: opcode, handle, value, SignCounter (LE32), MAC (the 64 most
    significant bits of AES-CMAC(CSRK, m || SignCounter), all little-endian on the air)."""
    message = bytes([SIGNED_WRITE]) + handle.to_bytes(2, "little") + value
    counter_bytes = counter.to_bytes(4, "little")
    mac = aes_cmac(bytes(reversed(message + counter_bytes)), bytes(reversed(csrk)))
    return message + counter_bytes + bytes(reversed(mac[:8]))


def test_signed_writes_verify_with_the_bonded_csrk_and_refuse_replays(controllers, gattd, tmp_path):
    config = signed_config()
    first = gattd(config)
    bond_file = tmp_path / "state" / "bonds" / "C0:00:00:00:00:01.json"

    async def body():
        async with central_device(controllers[1]) as device:
            delegate = PairingDelegate(local_initiator_key_distribution=(
                PairingDelegate.KeyDistribution.DISTRIBUTE_ENCRYPTION_KEY
                | PairingDelegate.KeyDistribution.DISTRIBUTE_IDENTITY_KEY
                | PairingDelegate.KeyDistribution.DISTRIBUTE_SIGNING_KEY))
            device.pairing_config_factory = lambda _c: PairingConfig(
                sc=True, mitm=False, bonding=True, delegate=delegate,
                identity_address_type=PairingConfig.AddressType.RANDOM)
            peer = await connect_peer(device, gattd_address(controllers))
            await asyncio.wait_for(peer.connection.pair(), 15)
            await wait_for_log(first, r"paired and bonded as C0:00:00:00:00:01")
            csrk = bytes.fromhex(json.loads(bond_file.read_text())["peer_csrk"])
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            async def write(value: bytes, counter: int, forge: bool = False) -> None:
                pdu = bytearray(signed_write(csrk, SIGNED, value, counter))
                if forge:
                    pdu[-1] ^= 0x01
                # A command has no response; the read that follows on the same bearer is
                # answered after gattd handled it (one ATT queue per bearer, in order).
                peer.connection.send_l2cap_pdu(0x0004, bytes(pdu))

            # A new link, not encrypted: the signature is what authenticates the write.
            peer = await connect_peer(device, gattd_address(controllers))
            assert not peer.connection.is_encrypted
            await write(b"\x11", 1)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x11"
            await write(b"\x22", 1)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x11", "a replayed Sign Counter is refused"
            await write(b"\x33", 2, forge=True)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x11", "a forged MAC is refused"
            await write(b"\x44", 2)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x44"
            assert json.loads(bond_file.read_text())["peer_sign_counter"] == 2
            await asyncio.wait_for(peer.connection.disconnect(), 5)

            # After a restart the counter comes from the bond file.
            first.stop()
            second = gattd(config)
            await wait_for_log(second, r"loaded 1 bond from ")
            peer = await connect_peer(device, gattd_address(controllers))
            await write(b"\x55", 2)
            # (The value is not "persist": the restarted gattd serves the config's 00.)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x00", "the replay of counter 2 is refused after a restart"
            await write(b"\x66", 3)
            assert await peer.gatt_client.read_value(SIGNED) == b"\x66"

    run(body(), timeout=60)
